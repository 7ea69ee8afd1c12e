// A finished Claude Code job (an untasked background session whose own job settled `done`): its chain's facts
// are latches in stateDir (src/store/job-state.ts), one file per job and process start. Asked, requested; its
// jobs are named by the short id and the process start. It begins from a sweep (beginJobChains).
import type { FleetSnapshot } from '../../evidence/fleet.js';
import { jobKey, latchJobChain, readJobChain } from '../../store/job-state.js';
import { jobAskId } from '../../../queues/exit-ask.js';
import { jobRetryId } from '../../../queues/exit-retry.js';
import { jobExitId } from '../../../queues/session-exit.js';
import type { JobRef } from '../../../queues/common.js';
import type { PipelineDeps } from '../deps.js';
import { chainOf, schedule, scheduleAfterExit } from '../chains.js';
import type { ChainKindAdapter, ChainPatch } from './types.js';

export type JobChainRef = { kind: 'job' } & JobRef;

const key = (ref: JobChainRef) => `job/${jobKey(ref.shortId, ref.start)}`;

/** Latch through the store: a job chain's file in stateDir (the real run). */
function latchJob(deps: PipelineDeps, ref: JobChainRef, patch: ChainPatch): Promise<ChainPatch> {
  return deps.store.latch(key(ref), patch, () => latchJobChain(deps.config.stateDir, ref, patch, deps.config.maxExitRequests).applied);
}

export const jobKind: ChainKindAdapter<JobChainRef> = {
  kind: 'job',
  shape: 'job',
  // finished Claude Code jobs: a chain begins (its start latched: the grace counts from the job's settling)
  reconcile: {
    wanted: (config) => config.fleet.claudeDir !== null && config.fleet.jobChain,
    pass: (deps, snap) => beginJobChains(deps, snap),
  },
  refOf: (d) => (d.job ? { kind: 'job', ...d.job } : null),
  dataOf: (ref) => ({ job: { shortId: ref.shortId, sessionId: ref.sessionId, start: ref.start } }),
  exitRefOf: (d) => (d.reason === 'job' ? { kind: 'job', shortId: d.shortId, sessionId: d.sessionId, start: d.start } : null),
  exitData: (ref, _sessionId, n) => ({ reason: 'job', sessionId: ref.sessionId, shortId: ref.shortId, start: ref.start, n }),
  ids: {
    ask: (ref) => jobAskId(ref.shortId, ref.start),
    retry: (ref, n) => jobRetryId(ref.shortId, ref.start, n),
    exit: (ref, _sessionId, n) => jobExitId(ref.shortId, ref.start, n),
  },
  key,
  alarmKey: key,
  name: (ref) => `job ${ref.shortId}`,
  logged: (ref) => ({ job: ref.shortId }),
  taskId: () => null,
  judgeScope: (ref) => ({ untasked: true, jobKey: jobKey(ref.shortId, ref.start) }),
  askClaim: (ref) => `job-${ref.shortId}-${ref.start}`,

  async load(deps, ref) {
    const rec = readJobChain(deps.config.stateDir, jobKey(ref.shortId, ref.start));
    const { shortId: _a, sessionId: _b, start: _c, ...latched } = rec ?? { shortId: '', sessionId: '', start: '', requests: 0 };
    return chainOf(deps, jobKind, ref, {
      facts: { ...deps.store.facts(key(ref), latched), kind: 'job' },
      sessionId: ref.sessionId,
      what: { id: ref.shortId, state: 'done', kind: 'job' },
    });
  },
  async latch(deps, c, patch) {
    const applied = await latchJob(deps, c.ref, patch);
    return { chain: await jobKind.load(deps, c.ref), applied };
  },
  async markExited(deps, ref) {
    await latchJob(deps, ref, { exitedAt: new Date(deps.now()).toISOString() });
  },
  ended: (deps, c) => jobKind.markExited(deps, c.ref),
  afterExit: (deps, ref, o) => scheduleAfterExit(deps, ref, o),
};

/**
 * Finished Claude Code jobs in this snapshot (an untasked background session whose job settled done): each
 * chain begins, its start latched (the grace counts from the job's settling), and its next step is scheduled.
 * `only`: just these short ids (the job watcher's). Returns how many chains were scheduled.
 */
export async function beginJobChains(deps: PipelineDeps, snap: FleetSnapshot, only?: ReadonlySet<string>): Promise<number> {
  let n = 0;
  for (const s of snap.sessions) {
    const native = s.evidence.native;
    if (!native || s.id === null || s.live !== true || native.facts.exitedAt || native.facts.gaveUpAt) continue;
    if (only && !only.has(s.id)) continue;
    const ref: JobChainRef = { kind: 'job', shortId: s.id, sessionId: s.sessionId, start: String(Math.round(s.procStartMs ?? 0)) };
    if (native.facts.startedAt) await latchJob(deps, ref, { startedAt: native.facts.startedAt });
    await schedule(deps, await jobKind.load(deps, ref));
    n++;
  }
  return n;
}
