// expire: the backstop for sessions no task reaches (ADR-0010 decision 3). Every expireEvery, live
// untasked sessions idle past expireIdle — roster idle, unattached, inbox drained, every probe answered —
// get an exit job on the rate-limited path; the same ≤ max requests, then one alarm naming the session.
// The scan starts each chain and takes its steps (src/pipeline/chain-kinds/expire.ts is the chain's kind);
// what a step does is the run's (deps.acts.expire): the real run's here, a dry run's in dry-run.ts.
import type { PipelineDeps } from './deps.js';
import { evidenceOf } from './deps.js';
import { commandMissing, missingClaude, onceFor, sayClaudeMissing } from '../evidence/claude-cli.js';
import type { SessionView } from '../evidence/fleet.js';
import { judge } from '../doctrine/judge.js';
import { chainStep } from '../doctrine/chain.js';
import { decided } from './events.js';
import { expireKind, expireRef, latchExpire, type ExpireRef } from './chain-kinds/expire.js';

export interface ExpireLine {
  id: string | null;
  label: string;
  sessionId: string;
  action: 'enqueued' | 'would-enqueue' | 'gave-up' | 'would-give-up' | 'waiting' | 'spared';
  n?: number;
  reasons?: string[];
  silenceMs?: number | null;
}

/** One expire step on one session: its chain, the session as the scan saw it, and when (ISO). */
export interface ExpireStep {
  ref: ExpireRef;
  view: SessionView;
  at: string;
}

/** What each of expire's steps does: the real run's, a dry run's, or a preview's (`--dry-run` of one scan). */
export interface ExpireActs {
  /** Request n: latch it, enqueue its exit job, say it. What the scan's line says. */
  request(deps: PipelineDeps, x: ExpireStep, n: number): Promise<'enqueued' | 'would-enqueue'>;
  /** The give-up: one session-will-not-exit alarm, latched, said. */
  giveUp(deps: PipelineDeps, x: ExpireStep): Promise<'gave-up' | 'would-give-up'>;
  /** Request n is latched and its exit job has not finished: it may be missing (a crash, a flush) — the same job again. */
  confirm(deps: PipelineDeps, ref: ExpireRef, n: number): Promise<void>;
  /** A scan when a step falls due. */
  wake(deps: PipelineDeps, at: number): Promise<void>;
}

export async function runExpireScan(
  deps: PipelineDeps,
  opts: { dryRun?: boolean } = {},
): Promise<{ ok: boolean; error?: string; lines: ExpireLine[] }> {
  // --dry-run says what this run would do: the real run's preview writes and queues nothing; a dry run's is its own
  const acts = opts.dryRun ? deps.acts.preview : deps.acts.expire;
  const snap = await deps.fleet(0, { tmux: 'if-needed' });
  if (!snap.roster.ok) {
    // a CLI that is not there is said once (src/evidence/claude-cli.ts); the same failure again, only at debug
    const error = snap.roster.error;
    const missing = commandMissing(error) ? missingClaude(deps.config.fleet) : [];
    const said = missing.length
      ? sayClaudeMissing(deps.log, missing)
      : onceFor(deps.log, `expire:roster-failed ${error}`, () =>
          deps.log.warn({ event: 'expire:roster-failed', error }, 'expire scan: roster failed; nothing expires'),
        );
    if (!said) deps.log.debug({ event: 'expire:roster-failed', error }, 'expire scan: roster failed; nothing expires');
    return { ok: false, error: snap.roster.error, lines: [] };
  }
  const lines: ExpireLine[] = [];
  const wakes = new Set<number>();
  for (const s of snap.sessions) {
    // records and gone rows hold nothing; a row whose liveness is unknown is listed as spared (D5)
    if (s.pid === null || s.live === false) continue;
    const untasked = !s.evidence.task && !s.evidence.openTasks.length && !s.evidence.invalidTasks.length;
    if (!untasked || s.evidence.native || s.evidence.held) continue; // a finished Claude Code job has its own chain, as has one held by another kind
    const base = { id: s.id, label: s.label, sessionId: s.sessionId, silenceMs: s.evidence.silenceMs };
    const j = judge({ act: 'expire', view: s, rosterOk: true, now: deps.now(), recheck: deps.config.windows.recheck });
    if (j.kind !== 'act' || s.live !== true) {
      lines.push({ ...base, action: 'spared', reasons: s.reasons });
      continue;
    }
    const ref = expireRef(s.sessionId, s.procStartMs);
    const now = deps.now();
    const step = chainStep({ kind: expireKind.shape, requests: 0, ...(s.evidence.expire ?? {}) }, deps.policy);
    if (step.step === 'confirm') {
      await acts.confirm(deps, ref, step.n);
      lines.push({ ...base, action: 'waiting', n: step.n < deps.config.maxExitRequests ? step.n + 1 : undefined });
      continue;
    }
    if ((step.step === 'request' || step.step === 'give-up') && now < step.at) {
      wakes.add(step.at); // the next scan runs when this step falls due, not a whole expireEvery later
      lines.push({ ...base, action: 'waiting', n: step.step === 'request' ? step.n : undefined });
      continue;
    }
    const x: ExpireStep = { ref, view: s, at: new Date(now).toISOString() };
    if (step.step === 'request') lines.push({ ...base, action: await acts.request(deps, x, step.n), n: step.n });
    else if (step.step === 'give-up') lines.push({ ...base, action: await acts.giveUp(deps, x) });
  }
  for (const at of wakes) await acts.wake(deps, at);
  return { ok: true, lines };
}

/** A scan at a step's due time (a delayed job on the expire-scan queue; one per second at most). */
export async function wakeScanAt(deps: PipelineDeps, at: number): Promise<void> {
  const s = Math.ceil(at / 1000) * 1000;
  await deps.producers.expire.add(`wake/${s}`, { dryRun: false }, { delay: Math.max(0, s - deps.now()) });
}

/** Enqueue exit job n of an expire chain. */
export async function enqueueExpireExit(deps: PipelineDeps, ref: ExpireRef, n: number): Promise<void> {
  await deps.producers.exit.add(expireKind.ids.exit(ref, ref.sessionId, n), expireKind.exitData(ref, ref.sessionId, n));
}

/** The real run's expire steps. */
export function realExpireActs(): ExpireActs {
  return {
    async request(deps, { ref, view: s, at }, n) {
      await latchExpire(deps, ref, { requests: n, lastRequestAt: at }); // latch, then enqueue
      await enqueueExpireExit(deps, ref, n);
      decided(
        deps,
        'expire:requested',
        { sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) },
        `expire: exit request ${n} for untasked session ${s.label}`,
      );
      return 'enqueued';
    },
    async giveUp(deps, { ref, view: s, at }) {
      decided(
        deps,
        'expire:gave-up',
        { sessionId: s.sessionId, id: s.id, ...evidenceOf(s) },
        `expire: gave up on untasked session ${s.label} after ${deps.config.maxExitRequests} requests`,
        { level: 'warn' },
      );
      await deps.alarms.raise('session-will-not-exit', expireKind.alarmKey(ref), {
        taskId: null,
        sessionId: s.sessionId,
        id: s.id,
        pid: s.pid,
        rssBytes: s.rssBytes,
        message: `untasked session ${s.label} was requested to exit ${deps.config.maxExitRequests} times by expire and is still running; a person decides now`,
      });
      await latchExpire(deps, ref, { gaveUpAt: at });
      return 'gave-up';
    },
    // a job whose call was made only confirms (the exit ledger)
    confirm: enqueueExpireExit,
    wake: wakeScanAt,
  };
}

/** What expire would do, said (and, `audit`, audited): a preview changes nothing. */
export function previewExpireActs(audit = false): ExpireActs {
  return {
    async request(deps, { view: s }, n) {
      decided(
        deps,
        'would-expire',
        { sessionId: s.sessionId, id: s.id, n, ...evidenceOf(s) },
        `expire: would request exit ${n} of untasked session ${s.label}`,
        { audit },
      );
      return 'would-enqueue';
    },
    async giveUp(deps, { view: s }) {
      decided(
        deps,
        'would-give-up',
        { sessionId: s.sessionId, id: s.id, ...evidenceOf(s) },
        `expire: would give up on untasked session ${s.label}`,
        { audit },
      );
      return 'would-give-up';
    },
    confirm: async () => undefined,
    wake: async () => undefined,
  };
}
