// The agent CLIs' input-box reader lives in src (sunset's adapters use it): re-exported for the harness.
export * from '../../src/evidence/agent-input-box.js';
