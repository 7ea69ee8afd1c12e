// expire: the backstop for sessions no task reaches (ADR-0010 decision 3). Every expireEvery, live
// untasked sessions idle past expireIdle — roster idle, unattached, inbox drained, every probe answered —
// get an exit job on the rate-limited path; the same ≤ max requests, then one alarm naming the session.
import type { PipelineDeps } from './deps.js';
import { expireKey, updateExpireFacts } from '../store/expire-state.js';
import { expireExitId } from '../../queues/session-exit.js';
import { evidenceOf } from './deps.js';
import type { SessionView } from '../evidence/fleet.js';
import { judge } from '../doctrine/judge.js';
import { chainStep } from '../doctrine/chain.js';
import { decided } from './events.js';

export interface ExpireLine {
  id: string | null;
  label: string;
  sessionId: string;
  action: 'enqueued' | 'would-enqueue' | 'gave-up' | 'would-give-up' | 'waiting' | 'spared';
  n?: number;
  reasons?: string[];
  silenceMs?: number | null;
}

export async function runExpireScan(deps: PipelineDeps, opts: { dryRun?: boolean } = {}): Promise<{ ok: boolean; error?: string; lines: ExpireLine[] }> {
  const dry = opts.dryRun || deps.dryRun;
  const snap = await deps.fleet(0, { tmux: 'if-needed' });
  if (!snap.roster.ok) {
    deps.log.warn({ event: 'expire:roster-failed', error: snap.roster.error }, 'expire scan: roster failed; nothing expires');
    return { ok: false, error: snap.roster.error, lines: [] };
  }
  const lines: ExpireLine[] = [];
  const wakes = new Set<number>();
  for (const s of snap.sessions) {
    // records and gone rows hold nothing; a row whose liveness is unknown is listed as spared (D5)
    if (s.pid === null || s.live === false) continue;
    const untasked = !s.evidence.task && !s.evidence.openTasks.length && !s.evidence.invalidTasks.length;
    if (!untasked || s.evidence.native) continue; // a finished Claude Code job has its own chain
    const base = { id: s.id, label: s.label, sessionId: s.sessionId, silenceMs: s.evidence.silenceMs };
    const j = judge({ act: 'expire', view: s, rosterOk: true, now: deps.now(), recheck: deps.config.windows.recheck });
    if (j.kind !== 'act' || s.live !== true) {
      lines.push({ ...base, action: 'spared', reasons: s.reasons });
      continue;
    }
    const start = String(Math.round(s.procStartMs ?? 0));
    const key = expireKey(s.sessionId, s.procStartMs);
    const now = deps.now();
    const iso = new Date(now).toISOString();
    const step = chainStep({ kind: 'expire', requests: 0, ...(s.evidence.expire ?? {}) }, deps.policy);
    if (step.step === 'confirm') {
      // request n is latched and its exit job has not finished: it may be missing (a crash between latch and
      // enqueue, a flush) — the same job again, which only confirms if its call was made (the exit ledger)
      if (!dry) await deps.producers.exit.add(expireExitId(s.sessionId, start, step.n), { reason: 'expire', sessionId: s.sessionId, expireKey: key, n: step.n });
      lines.push({ ...base, action: 'waiting', n: step.n < deps.config.maxExitRequests ? step.n + 1 : undefined });
      continue;
    }
    if ((step.step === 'request' || step.step === 'give-up') && now < step.at) {
      wakes.add(step.at); // the next scan runs when this step falls due, not a whole expireEvery later
      lines.push({ ...base, action: 'waiting', n: step.step === 'request' ? step.n : undefined });
      continue;
    }
    if (step.step === 'request') {
      const n = step.n;
      if (dry) {
        decided(deps, 'would-expire', { sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) }, `expire: would request exit ${n} of untasked session ${s.label}`, { audit: Boolean(deps.dry) });
        // in a dry-run pipeline the step goes on in its own schedule; `sunset expire --dry-run` only says it
        if (deps.dry) {
          deps.dry.latch(`expire/${key}`, { requests: n, lastRequestAt: iso });
          await deps.producers.exit.add(expireExitId(s.sessionId, start, n), { reason: 'expire', sessionId: s.sessionId, expireKey: key, n });
        }
        lines.push({ ...base, action: 'would-enqueue', n });
        continue;
      }
      updateExpireFacts(deps.config.stateDir, key, { requests: n, lastRequestAt: iso }); // latch, then enqueue
      await deps.producers.exit.add(expireExitId(s.sessionId, start, n), { reason: 'expire', sessionId: s.sessionId, expireKey: key, n });
      decided(deps, 'expire:requested', { sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) }, `expire: exit request ${n} for untasked session ${s.label}`);
      lines.push({ ...base, action: 'enqueued', n });
    } else if (step.step === 'give-up') {
      if (dry) {
        decided(deps, 'would-give-up', { sessionId: s.sessionId, id: s.id, ...evidenceOf(s) }, `expire: would give up on untasked session ${s.label}`, { audit: Boolean(deps.dry) });
        deps.dry?.latch(`expire/${key}`, { gaveUpAt: iso });
        lines.push({ ...base, action: 'would-give-up' });
        continue;
      }
      await raiseWillNotExit(deps, s, key);
      updateExpireFacts(deps.config.stateDir, key, { gaveUpAt: iso });
      lines.push({ ...base, action: 'gave-up' });
    }
  }
  if (!dry || deps.dry) for (const at of wakes) await wakeScanAt(deps, at);
  return { ok: true, lines };
}

/** A scan at a step's due time (a delayed job on the expire-scan queue; one per second at most). */
export async function wakeScanAt(deps: PipelineDeps, at: number): Promise<void> {
  const s = Math.ceil(at / 1000) * 1000;
  await deps.producers.expire.add(`wake/${s}`, { dryRun: false }, { delay: Math.max(0, s - deps.now()) });
}

async function raiseWillNotExit(deps: PipelineDeps, s: SessionView, key: string) {
  decided(deps, 'expire:gave-up', { sessionId: s.sessionId, id: s.id, ...evidenceOf(s) }, `expire: gave up on untasked session ${s.label} after ${deps.config.maxExitRequests} requests`, { level: 'warn' });
  await deps.alarms.raise('session-will-not-exit', `session/${key}`, {
    taskId: null,
    sessionId: s.sessionId,
    id: s.id,
    pid: s.pid,
    rssBytes: s.rssBytes,
    message: `untasked session ${s.label} was requested to exit ${deps.config.maxExitRequests} times by expire and is still running; a person decides now`,
  });
}
