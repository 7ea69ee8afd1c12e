// One event vocabulary: each decision of the pipeline is one named event, written to the audit log (with the
// evidence it stood on) and to the log (without it), under the same name. docs/operations.md lists them.
import type { PipelineDeps } from './deps.js';

export type Decision =
  | 'task:released'
  | 'exit:asked'
  | 'exit:requested'
  | 'exit:gave-up'
  | 'exit:calling'
  | `exit:${'exited' | 'still-running' | 'spared' | 'refused' | 'gone' | 'failed'}`
  | 'exit:person-request'
  | 'exit:person-joined'
  | 'exit:person-cancelled'
  | 'chain:ended'
  | 'chain:session-ended'
  | 'expire:requested'
  | 'expire:gave-up'
  // a dry run's steps (src/pipeline/dry-run.ts)
  | 'would-release'
  | 'would-ask'
  | 'would-request'
  | 'would-give-up'
  | 'would-exit'
  | 'would-expire'
  | 'would-end';

type Level = 'info' | 'warn';

/**
 * Record a decision: the audit gets every field (evidence included), the log every field but the evidence,
 * and `message` in a person's words. `audit: false` logs only (a replay that latched nothing).
 */
export function decided(deps: Pick<PipelineDeps, 'audit' | 'log'>, event: Decision, fields: Record<string, unknown>, message: string, o: { level?: Level; audit?: boolean } = {}): void {
  if (o.audit !== false) deps.audit({ event, ...fields });
  const { evidence: _e, reasons: _r, next: _n, verdict, rssBytes: _b, ...brief } = fields as Record<string, unknown>;
  deps.log[o.level ?? 'info']({ event, ...brief, ...(verdict ? { verdict } : {}) }, message);
}
