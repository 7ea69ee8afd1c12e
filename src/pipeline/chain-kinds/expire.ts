// An untasked session idle past expireIdle (ADR-0010 decision 3): its chain's facts are kept by expire in
// stateDir (src/store/expire-state.ts), one file per session and process start. Requested, never asked; its
// steps are the expire scan's (src/pipeline/expire.ts), which starts the chain and takes each request.
import { retryAt } from '../../doctrine/chain.js';
import { expireKey, readExpireFacts, updateExpireFacts } from '../../store/expire-state.js';
import { expireExitId } from '../../../queues/session-exit.js';
import type { PipelineDeps } from '../deps.js';
import { chainOf } from '../chains.js';
import { wakeScanAt } from '../expire.js';
import type { ChainKindAdapter, ChainPatch } from './types.js';

export type ExpireRef = { kind: 'expire'; sessionId: string; start: string; key: string };

/** The chain of a session by its process start (a resumed session starts a new chain). */
export function expireRef(sessionId: string, procStartMs: number | null): ExpireRef {
  return { kind: 'expire', sessionId, start: String(Math.round(procStartMs ?? 0)), key: expireKey(sessionId, procStartMs) };
}

/** Latch through the store: the chain's file in stateDir (the real run). */
export function latchExpire(deps: PipelineDeps, ref: ExpireRef, patch: ChainPatch): Promise<ChainPatch> {
  return deps.store.latch(expireKind.key(ref), patch, () => updateExpireFacts(deps.config.stateDir, ref.key, patch).applied);
}

export const expireKind: ChainKindAdapter<ExpireRef> = {
  kind: 'expire',
  shape: 'expire',
  // its steps are the scan's, never chain jobs
  refOf: () => null,
  exitRefOf: (d) => {
    if (d.reason !== 'expire') return null;
    const start = d.expireKey.slice(d.expireKey.lastIndexOf('@') + 1);
    return { kind: 'expire', sessionId: d.sessionId, start: start === 'unknown' ? '0' : start, key: d.expireKey };
  },
  exitData: (ref, sessionId, n) => ({ reason: 'expire', sessionId, expireKey: ref.key, n }),
  ids: { exit: (ref, sessionId, n) => expireExitId(sessionId, ref.start, n) },
  key: (ref) => `expire/${ref.key}`,
  alarmKey: (ref) => `session/${ref.key}`,
  name: (ref) => `untasked session ${ref.sessionId}`,
  logged: (ref) => ({ sessionId: ref.sessionId }),
  taskId: () => null,
  judgeScope: () => ({ untasked: true }),

  async load(deps, ref) {
    const stored = readExpireFacts(deps.config.stateDir, ref.key) ?? { requests: 0 };
    return chainOf(deps, expireKind, ref, {
      facts: { ...deps.store.facts(expireKind.key(ref), stored), kind: 'expire' },
      sessionId: ref.sessionId,
      what: { id: ref.sessionId, state: 'idle' },
    });
  },
  async latch(deps, c, patch) {
    const applied = await latchExpire(deps, c.ref, patch);
    return { chain: await expireKind.load(deps, c.ref), applied };
  },
  async markExited(deps, ref) {
    await latchExpire(deps, ref, { exitedAt: new Date(deps.now()).toISOString() });
  },
  ended: (deps, c) => expireKind.markExited(deps, c.ref),
  // the next request is the scan's: it runs when the step falls due
  afterExit: (deps, _ref, o) => wakeScanAt(deps, retryAt(Date.parse(o.finishedAt), deps.policy)),
};
