// expire: the backstop for sessions no task reaches (ADR-0010 decision 3). Every expireEvery, live
// untasked sessions idle past expireIdle — roster idle, unattached, inbox drained, every probe answered —
// get an exit job on the rate-limited path; the same ≤ max requests, then one alarm naming the session.
import type { PipelineDeps } from './pipeline.js';
import { expireKey, updateExpireFacts } from './expire-state.js';
import { expireExitId } from '../queues/session-exit.js';
import { evidenceOf } from './pipeline.js';
import type { SessionView } from './fleet.js';

export interface ExpireLine {
  id: string;
  sessionId: string;
  action: 'enqueued' | 'would-enqueue' | 'gave-up' | 'would-give-up' | 'waiting' | 'spared';
  n?: number;
  reasons?: string[];
  silenceMs?: number | null;
}

export async function runExpireScan(deps: PipelineDeps, opts: { dryRun?: boolean } = {}): Promise<{ ok: boolean; error?: string; lines: ExpireLine[] }> {
  const dry = opts.dryRun || deps.dryRun;
  const snap = await deps.fleet(0);
  if (!snap.roster.ok) {
    deps.log.warn({ event: 'expire:roster-failed', error: snap.roster.error }, 'expire scan: roster failed; nothing expires');
    return { ok: false, error: snap.roster.error, lines: [] };
  }
  const lines: ExpireLine[] = [];
  for (const s of snap.sessions) {
    if (s.live !== true) continue;
    const untasked = !s.evidence.task && !s.evidence.openTasks.length && !s.evidence.invalidTasks.length;
    if (!untasked) continue;
    const base = { id: s.id, sessionId: s.sessionId, silenceMs: s.evidence.silenceMs };
    if (s.verdict !== 'eligible' || !s.next) {
      lines.push({ ...base, action: 'spared', reasons: s.reasons });
      continue;
    }
    const key = expireKey(s.sessionId, s.procStartMs);
    const now = new Date(deps.now()).toISOString();
    if (s.next.step === 'expire') {
      const n = s.next.n ?? 1;
      if (dry) {
        lines.push({ ...base, action: 'would-enqueue', n });
        continue;
      }
      updateExpireFacts(deps.config.stateDir, key, { requests: n, lastRequestAt: now }); // latch, then enqueue
      await deps.producers.exit.add(expireExitId(s.sessionId, String(Math.round(s.procStartMs ?? 0)), n), { reason: 'expire', sessionId: s.sessionId, expireKey: key, n });
      deps.audit({ event: 'expire:request', sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) });
      deps.log.info({ event: 'expire:requested', id: s.id, sessionId: s.sessionId, n }, `expire: exit request ${n} for untasked session ${s.id}`);
      lines.push({ ...base, action: 'enqueued', n });
    } else if (s.next.step === 'give-up') {
      if (dry) {
        lines.push({ ...base, action: 'would-give-up' });
        continue;
      }
      updateExpireFacts(deps.config.stateDir, key, { gaveUpAt: now });
      await raiseWillNotExit(deps, s, key);
      lines.push({ ...base, action: 'gave-up' });
    } else lines.push({ ...base, action: 'waiting', n: s.next.n });
  }
  return { ok: true, lines };
}

async function raiseWillNotExit(deps: PipelineDeps, s: SessionView, key: string) {
  deps.audit({ event: 'expire:give-up', sessionId: s.sessionId, id: s.id, ...evidenceOf(s) });
  await deps.alarms.raise('session-will-not-exit', `session/${key}`, {
    taskId: null,
    sessionId: s.sessionId,
    id: s.id,
    pid: s.pid,
    rssBytes: s.rssBytes,
    message: `untasked session ${s.id} was requested to exit ${deps.config.maxExitRequests} times by expire and is still running; a person decides now`,
  });
}
