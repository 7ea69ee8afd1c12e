// expire: the backstop for sessions no task reaches (ADR-0010 decision 3). Every expireEvery, live
// untasked sessions idle past expireIdle — roster idle, unattached, inbox drained, every probe answered —
// get an exit job on the rate-limited path; the same ≤ max requests, then one alarm naming the session.
import type { PipelineDeps } from './deps.js';
import { expireKey, updateExpireFacts } from '../store/expire-state.js';
import { expireExitId } from '../../queues/session-exit.js';
import { evidenceOf } from './deps.js';
import type { SessionView } from '../evidence/fleet.js';
import { readExit } from '../store/ledger.js';

export interface ExpireLine {
  id: string | null;
  label: string;
  sessionId: string;
  action: 'enqueued' | 'would-enqueue' | 'gave-up' | 'would-give-up' | 'waiting' | 'spared';
  n?: number;
  reasons?: string[];
  silenceMs?: number | null;
}

/** How far a previous exit job has got, for pacing the next request (DESIGN §5). */
export type PrevJob = { finishedAt: number } | { pending: true } | { missing: true };

/**
 * When request n (or the give-up, after request max) is due: retryWait after exit job n-1 *finished*,
 * never while it is still confirming; a job that is gone without a record is enqueued again. Pure.
 */
export function expirePace(prev: PrevJob | null, retryWait: number, now: number): { due: true } | { due: false; at?: number; reenqueue?: boolean } {
  if (prev === null) return { due: true };
  if ('missing' in prev) return { due: false, reenqueue: true };
  if ('pending' in prev) return { due: false };
  const at = prev.finishedAt + retryWait;
  return now >= at ? { due: true } : { due: false, at };
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
    // records and gone rows hold nothing; a row whose liveness is unknown is listed as spared (D5)
    if (s.pid === null || s.live === false) continue;
    const untasked = !s.evidence.task && !s.evidence.openTasks.length && !s.evidence.invalidTasks.length;
    if (!untasked) continue;
    const base = { id: s.id, label: s.label, sessionId: s.sessionId, silenceMs: s.evidence.silenceMs };
    if (s.verdict !== 'eligible' || !s.next || s.live !== true) {
      lines.push({ ...base, action: 'spared', reasons: s.reasons });
      continue;
    }
    const start = String(Math.round(s.procStartMs ?? 0));
    const key = expireKey(s.sessionId, s.procStartMs);
    const now = deps.now();
    const iso = new Date(now).toISOString();
    if (s.next.step !== 'expire' && s.next.step !== 'give-up') {
      lines.push({ ...base, action: 'waiting', n: s.next.n });
      continue;
    }
    // request n, or the give-up after request max: paced from the previous exit job's end
    const n = s.next.step === 'expire' ? (s.next.n ?? 1) : deps.config.maxExitRequests + 1;
    const prevId = n > 1 ? expireExitId(s.sessionId, start, n - 1) : null;
    const pace = expirePace(prevId ? await prevJob(deps, prevId) : null, deps.config.windows.retryWait, now);
    if (!pace.due) {
      if (pace.reenqueue && !dry) {
        // latched but never enqueued (a crash in between), or lost with a Redis flush: the same job again
        await deps.producers.exit.add(prevId!, { reason: 'expire', sessionId: s.sessionId, expireKey: key, n: n - 1 });
        deps.log.info({ event: 'expire:re-enqueued', id: s.id, sessionId: s.sessionId, n: n - 1 }, `expire: exit request ${n - 1} for ${s.label} enqueued again`);
      }
      lines.push({ ...base, action: 'waiting', n: n <= deps.config.maxExitRequests ? n : undefined });
      continue;
    }
    if (s.next.step === 'expire') {
      if (dry) {
        lines.push({ ...base, action: 'would-enqueue', n });
        continue;
      }
      updateExpireFacts(deps.config.stateDir, key, { requests: n, lastRequestAt: iso }); // latch, then enqueue
      await deps.producers.exit.add(expireExitId(s.sessionId, start, n), { reason: 'expire', sessionId: s.sessionId, expireKey: key, n });
      deps.audit({ event: 'expire:request', sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) });
      deps.log.info({ event: 'expire:requested', id: s.id, sessionId: s.sessionId, n }, `expire: exit request ${n} for untasked session ${s.label}`);
      lines.push({ ...base, action: 'enqueued', n });
    } else {
      if (dry) {
        lines.push({ ...base, action: 'would-give-up' });
        continue;
      }
      updateExpireFacts(deps.config.stateDir, key, { gaveUpAt: iso });
      await raiseWillNotExit(deps, s, key);
      lines.push({ ...base, action: 'gave-up' });
    }
  }
  return { ok: true, lines };
}

/** The previous exit job: its ledger record first (the worker writes finishedAt), else its state in the queue. */
async function prevJob(deps: PipelineDeps, jobId: string): Promise<PrevJob> {
  const rec = readExit(deps.config.stateDir, jobId);
  if (rec?.finishedAt) return { finishedAt: Date.parse(rec.finishedAt) };
  const job = await deps.producers.exit.queue.getJob(jobId);
  if (!job) return { missing: true }; // a re-enqueued job whose call was made only confirms (the ledger)
  const state = await job.getState();
  if (state === 'failed' && job.finishedOn) return { finishedAt: job.finishedOn };
  if (state === 'completed' && job.finishedOn) return { finishedAt: job.finishedOn };
  return { pending: true };
}

async function raiseWillNotExit(deps: PipelineDeps, s: SessionView, key: string) {
  deps.audit({ event: 'expire:give-up', sessionId: s.sessionId, id: s.id, ...evidenceOf(s) });
  await deps.alarms.raise('session-will-not-exit', `session/${key}`, {
    taskId: null,
    sessionId: s.sessionId,
    id: s.id,
    pid: s.pid,
    rssBytes: s.rssBytes,
    message: `untasked session ${s.label} was requested to exit ${deps.config.maxExitRequests} times by expire and is still running; a person decides now`,
  });
}
