// A chain in the pipeline, whatever its kind: its facts (read and latched by its kind, src/pipeline/chain-kinds/,
// through the run's store), the job that carries its next step, and the one place that enqueues it. The step and
// its due time come from the doctrine (src/doctrine/chain.ts); this file only maps a step to a job. Idempotent:
// reconcile, the watcher and every worker call schedule(), so a lost event, a restart or a flushed Redis only
// delays a step, never loses or repeats one.
import { chainOpen, chainStep, type ChainFacts, type ChainStep } from '../doctrine/chain.js';
import { judge, type Act, type Judgement } from '../doctrine/judge.js';
import type { SessionView } from '../evidence/fleet.js';
import type { LatchBase, Task } from '../tasks/tasks.js';
import { evidenceOf, exitPriorityNow, look, type PipelineDeps } from './deps.js';
import type { Wake } from './idle-notices.js';
import type { Finished } from './ask.js';
import { decided } from './events.js';
import { kindOf, type ChainRef } from './chain-kinds/index.js';
import type { Chain as ChainOf, ChainKindAdapter, ChainPatch, StepJob } from './chain-kinds/types.js';

export { exitRefOf, kindOf, refOf, type ChainRef } from './chain-kinds/index.js';
export type { ChainPatch } from './chain-kinds/types.js';
export type Chain = ChainOf<ChainRef>;

/** What a kind read of its chain, as its store sees it. */
export interface ChainRead {
  facts: ChainFacts;
  sessionId: string | null;
  /** false: no chain yet (a task that is not terminal: an open task protects). */
  open?: boolean;
  task?: Task;
  base?: LatchBase;
  what: Finished;
}

/** A kind's chain from what it read: the exit ledger's finish of its latest exit job, and its next step. */
export function chainOf<R extends ChainRef>(deps: PipelineDeps, k: ChainKindAdapter<R>, ref: R, r: ChainRead): ChainOf<R> {
  const facts = withFinish(deps, k, ref, r.sessionId, r.facts);
  return {
    ref,
    facts,
    step: r.open === false ? null : chainStep(facts, deps.policy),
    sessionId: r.sessionId,
    ...(r.task ? { task: r.task } : {}),
    ...(r.base ? { base: r.base } : {}),
    name: k.name(ref),
    what: r.what,
  };
}

function withFinish<R extends ChainRef>(
  deps: PipelineDeps,
  k: ChainKindAdapter<R>,
  ref: R,
  sessionId: string | null,
  f: ChainFacts,
): ChainFacts {
  // an ended chain's next step is its end whatever the ledger says: not read (reconcile sees 10,000 of them)
  if (!f.requests || !sessionId || f.lastExitFinishedAt || !chainOpen(f)) return f;
  // a dry run's exit jobs finish in its latches (lastExitFinishedAt), never in the ledger
  const finished = deps.store.finishedAt(k.ids.exit(ref, sessionId, f.requests));
  return finished ? { ...f, lastExitFinishedAt: finished } : f;
}

/** Load a chain for a chain job (by its kind: src/pipeline/chain-kinds/). */
export function loadChain(deps: PipelineDeps, ref: ChainRef): Promise<Chain> {
  return kindOf(ref).load(deps, ref);
}

/** Latch a chain's fields; returns the chain after the latch and which fields changed. */
export function latchChain(
  deps: PipelineDeps,
  c: Chain,
  patch: ChainPatch,
  job?: StepJob,
  token?: string,
): Promise<{ chain: Chain; applied: ChainPatch }> {
  return kindOf(c.ref).latch(deps, c, patch, job, token);
}

/**
 * Enqueue the job that carries the chain's next step, due when the doctrine says. Nothing for a chain that
 * has ended, or whose exit job is still confirming (the exit worker schedules the step after it when it
 * finishes); a latched request whose exit job has no finish in the ledger is enqueued again (a crash between
 * latch and enqueue, a flush: a job whose call was made only confirms). Returns the step.
 */
export async function schedule(deps: PipelineDeps, c: Chain, o: { rssBytes?: number | null } = {}): Promise<ChainStep | null> {
  const j = stepJob(deps, c);
  if (!j) return c.step;
  const now = deps.now();
  const delay = j.at !== undefined && Number.isFinite(j.at) ? Math.max(0, j.at - now) : 0;
  const p = deps.producers;
  // a job still in the queue (waiting, delayed, running) is not added twice. One that finished while the chain is
  // still at its step (its worker ended the chain without a latch: the task re-opened, a stale sweep) goes back
  // to the queue: its id is kept for an hour (CHAIN_RETENTION), and an add under it alone would add nothing
  const requeue = true;
  if (j.queue === 'terminal') await p.terminal.add(j.jobId, j.data as { taskId: string }, { requeue });
  else if (j.queue === 'ask') await p.ask.add(j.jobId, j.data as never, { delay, requeue });
  else if (j.queue === 'retry') await p.retry.add(j.jobId, j.data as never, { delay, requeue });
  else await p.exit.add(j.jobId, j.data as never, { priority: exitPriorityNow(deps, o.rssBytes), requeue });
  return c.step;
}

/** The job that carries a chain's next step: its queue, id, data and due time (null: no job — ended, open, or not its kind's). */
export function stepJob(
  deps: PipelineDeps,
  c: Chain,
): { queue: 'terminal' | Wake['queue']; jobId: string; data: object; at?: number } | null {
  const step = c.step;
  if (!step || !c.sessionId) return null;
  const k = kindOf(c.ref);
  const ref = c.ref;
  const data = k.dataOf?.(ref);
  const job = (queue: 'terminal' | 'ask' | 'retry', jobId: string | undefined, extra: object = {}, at?: number) =>
    data && jobId ? { queue, jobId, data: { ...data, ...extra }, ...(at !== undefined ? { at } : {}) } : null;
  switch (step.step) {
    case 'release':
      return job('terminal', k.ids.release?.(ref));
    case 'ask':
      return job('ask', k.ids.ask?.(ref), {}, step.at);
    case 'request':
      return job('retry', k.ids.retry?.(ref, step.n), { n: step.n }, step.at);
    case 'give-up': {
      const n = deps.config.maxExitRequests + 1;
      return job('retry', k.ids.retry?.(ref, n), { n }, step.at);
    }
    case 'confirm':
      return { queue: 'exit', jobId: k.ids.exit(ref, c.sessionId, step.n), data: k.exitData(ref, c.sessionId, step.n) };
    case 'end':
      return null;
  }
}

/**
 * Exit job n finished and the session is still there: the chain's next step is timed from that finish, so it is
 * scheduled now (request n+1 or the give-up, retryWait on). A session still running after its exit path was
 * taken: when it does leave (or next goes idle), that step is looked at then.
 */
export async function scheduleAfterExit(
  deps: PipelineDeps,
  ref: ChainRef,
  o: { view?: SessionView; stillRunning: boolean },
): Promise<void> {
  const c = await loadChain(deps, ref).catch(() => null);
  if (c) await schedule(deps, c);
  const next = c && o.stillRunning ? stepJob(deps, c) : null;
  if (next && next.queue !== 'terminal') deps.idle?.watch(o.view, { queue: next.queue, jobId: next.jobId }, 'confirm');
}

/**
 * Judge a chain's step on its session's evidence: a sweep that started no earlier than `notBefore` (see look()),
 * else the one shared with every job judged within the second. An end that is not the session's going is judged
 * only on a sweep that started after the chain's facts were read: a shared sweep may have read them before a
 * change the chain's own read saw (a task file turned `done` a moment ago, read `active` by that sweep), and a
 * chain ended on it would not take its step. The cache hands the same sweep back when it is new enough: a second
 * sweep only when the first was older than the chain's read. (Not a re-read of the task: the same holds for
 * every kind's facts, and the judgement needs the session's evidence as of then anyway.)
 */
export async function judgeStep(deps: PipelineDeps, c: Chain, o: { act: Act; notBefore?: number; graceEnd?: number }): Promise<Judgement> {
  const read = deps.now(); // the chain was read before this
  const on = async (notBefore: number | undefined) =>
    judge({
      act: o.act,
      ...(await look(deps, c.sessionId!, notBefore)),
      ...kindOf(c.ref).judgeScope(c.ref),
      now: deps.now(),
      recheck: deps.config.windows.recheck,
      silence: deps.config.windows.silence,
      ...(o.graceEnd !== undefined ? { graceEnd: o.graceEnd } : {}),
    });
  const j = await on(o.notBefore);
  return j.kind === 'end' && !j.gone ? on(Math.max(read, o.notBefore ?? read)) : j;
}

/**
 * A job woken before its step's time by its session saying it exited: when a sweep taken after that finds the
 * session not running any more, the chain ends now (exitedAt), not at the step's time. Null otherwise.
 */
export async function endIfGone(deps: PipelineDeps, c: Chain, stepName: string): Promise<{ ended: string } | null> {
  if (!c.sessionId || !deps.idle?.saidExited(c.sessionId)) return null;
  const seen = await look(deps, c.sessionId);
  const v = seen.view;
  if (!seen.rosterOk || (v && v.verdict !== 'record' && v.verdict !== 'gone')) return null;
  return endChain(deps, c, stepName, { why: v ? v.verdict : 'absent from the roster', gone: true, ...(v ? { view: v } : {}) });
}

/**
 * A chain that will never take this step: said once (log and audit). A session not running any more ends in
 * exitedAt, never silently (a task's: by whom, when sunset can tell; a job's: in its latches).
 */
export async function endChain(deps: PipelineDeps, c: Chain, step: string, j: { why: string; gone?: boolean; view?: SessionView }) {
  const k = kindOf(c.ref);
  if (j.gone) await k.ended(deps, c, j.view);
  decided(
    deps,
    'chain:ended',
    { ...k.logged(c.ref), sessionId: c.sessionId, step, why: j.why, ...evidenceOf(j.view) },
    `${c.name}: chain ends before the ${step} (${j.why})`,
  );
  return { ended: j.why };
}
