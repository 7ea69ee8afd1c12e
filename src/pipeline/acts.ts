// What the pipeline does to the world at each step, and how it says so: release a task's loop, deliver the one
// message, request an exit, give up with one alarm, take the exit path, end a chain whose session is gone, and
// expire's steps. The workers decide when (the step, the judgement); an Acts does. The real run's acts are
// here; a dry run's (src/pipeline/dry-run.ts) take the same steps on its own schedule, latched in memory and
// said as would-…. createDeps hands one or the other to the same code.
import { existsSync } from 'node:fs';
import type { SessionView } from '../evidence/fleet.js';
import { claimAsk, askDelivered, markAskDelivered, releaseAskClaim } from '../store/ledger.js';
import { run } from '../run.js';
import { askInTranscript, askText, deliverAsk, type Delivered } from './ask.js';
import { latchChain, schedule, type Chain, type ChainRef } from './chains.js';
import { kindOf } from './chain-kinds/index.js';
import type { StepJob } from './chain-kinds/types.js';
import { evidenceOf, type PipelineDeps } from './deps.js';
import { decided } from './events.js';
import { previewExpireActs, realExpireActs, type ExpireActs } from './expire.js';
import { filePins, type PinWriter } from './pins.js';

/** A chain step's act: its chain, the session it stands on (judged just now), and the job that carries it. */
export interface StepAct {
  chain: Chain;
  view: SessionView;
  /** The fields that name the chain in log and audit lines. */
  log: Record<string, unknown>;
  job: StepJob;
  token?: string;
  /** Look again at `at`: re-runs the same job then (it must be the act's last: it throws DelayedError). */
  defer(at: number): Promise<never>;
}

export interface Acts {
  /** Release a task's loop (its releaseCommand), latch the release, say it, schedule the ask. */
  release(deps: PipelineDeps, x: { chain: Chain; job: StepJob; token?: string }): Promise<object>;
  /** Deliver the one message, latch the ask, say it, schedule the first request. */
  ask(deps: PipelineDeps, x: StepAct): Promise<object>;
  /** Latch request n, say it, enqueue its exit job. */
  request(deps: PipelineDeps, x: StepAct, n: number): Promise<object>;
  /** One session-will-not-exit alarm, then the give-up latched and said. */
  giveUp(deps: PipelineDeps, x: StepAct): Promise<object>;
  /** The exit worker's act on a session it may exit: `call` takes its exit path (the real run's ledger, call and confirmation). */
  exit(
    deps: PipelineDeps,
    x: { ref: ChainRef | null; view: SessionView; log: Record<string, unknown> },
    call: () => Promise<object>,
  ): Promise<object>;
  /** A task's session is not running any more and its exitedAt is latched (`applied`: by this call): said. */
  sessionEnded(deps: PipelineDeps, fields: Record<string, unknown>, words: string, applied: boolean): void;
  /** expire's steps. */
  expire: ExpireActs;
  /** What `--dry-run` of one expire scan does on this run: the real run's says and does nothing; a dry run's is its own. */
  preview: ExpireActs;
  /** Claude Code's pins against its own reaper (src/pipeline/pins.ts). */
  pins: PinWriter;
}

export function fillPlaceholders(argv: readonly string[], values: Record<string, string>): string[] {
  return argv.map((w) => w.replace(/\{(taskId|sessionId|watcher)\}/g, (_, k: string) => values[k] ?? ''));
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The real run's acts. */
export function realActs(): Acts {
  return {
    // releases a loop, never a session (D6): the command gets argv, placeholders filled, never a shell
    async release(deps, { chain: c, job, token }) {
      const task = c.task!;
      const taskId = task.id;
      const cmd = deps.config.fleet.releaseCommand;
      if (cmd) {
        const argv = fillPlaceholders(cmd, {
          taskId,
          sessionId: task.sessionId ?? '',
          watcher: task.watcher === null ? '' : String(task.watcher),
        });
        const r = await run(argv, { timeoutMs: deps.config.probeTimeout });
        if (!r.ok) throw new Error(`releaseCommand failed for task ${taskId}: ${r.error} ${r.stderr.trim()}`); // retried with backoff
      }
      const res = await latchChain(deps, c, { startedAt: iso(deps.now()) }, job, token);
      decided(
        deps,
        'task:released',
        { taskId, sessionId: task.sessionId, releasedAt: res.chain.facts.startedAt, watcher: task.watcher, releaseCommand: Boolean(cmd) },
        `released task ${taskId}`,
      );
      await schedule(deps, res.chain);
      return { released: true };
    },
    ask: claimedAsk,
    async request(deps, x, n) {
      const res = await latchChain(deps, x.chain, { requests: n, lastRequestAt: iso(deps.now()) }, x.job, x.token);
      decided(
        deps,
        'exit:requested',
        { ...x.log, id: x.view.id, ...evidenceOf(x.view) },
        `exit request ${n}/${deps.config.maxExitRequests} for session ${x.view.label}`,
      );
      await schedule(deps, res.chain, { rssBytes: x.view.rssBytes }); // enqueues exit job n (largest first under memory pressure)
      return { requested: n };
    },
    async giveUp(deps, x) {
      const { chain: c, view } = x;
      const k = kindOf(c.ref);
      const max = deps.config.maxExitRequests;
      const at = iso(deps.now());
      // the alarm first (raised once per chain, ever), then the latch: a crash in between replays this job,
      // which finds the alarm raised and latches; the other order lost the alarm for good (the latch ends the chain)
      await deps.alarms.raise('session-will-not-exit', k.alarmKey(c.ref), {
        taskId: k.taskId(c.ref),
        sessionId: c.sessionId,
        id: view.id,
        pid: view.pid,
        rssBytes: view.rssBytes,
        message: `session ${view.label} (${c.name}) was asked once and requested to exit ${max} times and is still running; a person decides now`,
      });
      const res = await latchChain(deps, c, { gaveUpAt: at }, x.job, x.token);
      decided(
        deps,
        'exit:gave-up',
        { ...x.log, id: view.id, ...evidenceOf(view) },
        `gave up on session ${view.label} after ${max} requests`,
        {
          level: 'warn',
        },
      );
      return { gaveUp: Boolean(res.chain.facts.gaveUpAt) };
    },
    exit: (_deps, _x, call) => call(),
    sessionEnded(deps, fields, words, applied) {
      decided(deps, 'chain:session-ended', fields, words, { audit: applied });
    },
    expire: realExpireActs(),
    preview: previewExpireActs(),
    pins: filePins,
  };
}

/**
 * The one message, claimed first (once ever, in stateDir): a processor that loses the claim (a replay racing the
 * original after a Redis flush) waits until the claimant must have finished; if the claimant died before
 * latching, it delivers the same message (same time) again and latches that time — so a crash never loses the
 * ask, and a race never doubles it.
 */
async function claimedAsk(deps: PipelineDeps, x: StepAct): Promise<object> {
  const { chain: c, view, log } = x;
  const now = deps.now();
  const claimKey = { taskId: kindOf(c.ref).askClaim!(c.ref), releasedAt: c.facts.startedAt ?? '0' };
  const cl = claimAsk(deps.config.stateDir, claimKey, { at: iso(now), pid: process.pid });
  let at = now;
  if (!cl.won) {
    // another processor claimed this ask: give it time to deliver and latch, then look again
    const claimedAt = cl.claim ? Date.parse(cl.claim.at) : NaN;
    const settled = (Number.isFinite(claimedAt) ? claimedAt : now) + 2 * deps.config.probeTimeout + 2_000;
    if (now < settled && claimantMayLive(cl.claim?.pid)) return x.defer(settled);
    at = Number.isFinite(claimedAt) ? claimedAt : now; // the claimant died before latching: the same ask again
  }
  // a message over a socket or typed into a pane cannot be taken back: once marked delivered, a replay after a
  // crash only latches (the inbox file is the same file written again)
  // (a claimant that died between the send and the mark: the session's transcript says whether it arrived)
  const already = cl.won
    ? null
    : (askDelivered(deps.config.stateDir, claimKey) ?? (await askInTranscript(view, askText(c.what, deps.config.windows.askWait))));
  const delivered: Delivered = already
    ? { ok: true, via: already.via as Delivered['via'] }
    : await deliverAsk(deps.config, view, c.what, at);
  if (!delivered.ok) {
    // nothing was sent: the claim goes back and the ask waits, never counted as made
    releaseAskClaim(deps.config.stateDir, claimKey);
    deps.log.warn(
      { event: 'ask:not-delivered', ...log, via: delivered.via, why: delivered.why },
      `${c.name}: the ask could not be delivered (${delivered.via}: ${delivered.why}); trying again at the next recheck`,
    );
    return x.defer(deps.now() + deps.config.windows.recheck);
  }
  if (!already && delivered.via !== 'inbox') markAskDelivered(deps.config.stateDir, claimKey, { at: iso(at), via: delivered.via });
  // the chaos suite's and the real-client tests' crash point: sunset dies between the ask and its latch
  if (process.env.SUNSET_CRASH_AT === 'ask:delivered') process.exit(137);
  const res = await latchChain(deps, c, { askedAt: iso(at) }, x.job, x.token);
  // the one that latched it audits it: a replay racing another replay writes the same file and latches nothing
  decided(
    deps,
    'exit:asked',
    {
      ...(cl.won ? {} : { replayed: true }),
      ...log,
      id: view.id,
      via: delivered.via,
      ...(delivered.ok ? { path: delivered.path } : {}),
      ...evidenceOf(view),
    },
    `asked session ${view.label} to wrap up (${c.name} is ${c.what.state}, via ${delivered.via})${cl.won ? '' : ', again after a crash'}`,
    { audit: Boolean(res.applied.askedAt) },
  );
  await schedule(deps, res.chain);
  return { asked: true };
}

/** A claimant in another process that no longer runs cannot still be delivering (a reused pid only makes us wait). */
function claimantMayLive(pid: number | undefined): boolean {
  if (!pid || pid === process.pid) return true;
  return existsSync(`/proc/${pid}`);
}
