// A chain in the pipeline — a task's, or a finished Claude Code job's — its facts (the task file's latched
// fields, or the job's latches in stateDir; and the exit ledger's finish of its latest exit job), the job that
// carries its next step, and the one place that enqueues it. The step and its due time come from the doctrine
// (src/doctrine/chain.ts); this file only maps a step to a job. Idempotent: reconcile, the watcher and every
// worker call schedule(), so a lost event, a restart or a flushed Redis only delays a step, never loses or
// repeats one.
import { DelayedError, UnrecoverableError } from 'bullmq/dist/cjs/classes/index.js';
import { chainOpen, chainStep, type ChainFacts, type ChainStep } from '../doctrine/chain.js';
import { taskChain } from '../doctrine/verdict.js';
import { TaskBusyError, TaskInvalidError, type LatchPatch, type Task } from '../tasks/tasks.js';
import { readForLatch, type LatchBase } from '../tasks/tasks.js';
import { readExit } from '../store/ledger.js';
import { jobKey, latchJobChain, readJobChain, type JobLatch } from '../store/job-state.js';
import { taskTerminalId } from '../../queues/task-terminal.js';
import { exitAskId, jobAskId } from '../../queues/exit-ask.js';
import { exitRetryId, jobRetryId } from '../../queues/exit-retry.js';
import { jobExitId, requestExitId } from '../../queues/session-exit.js';
import type { JobRef } from '../../queues/common.js';
import { endedElsewhere, evidenceOf, exitPriorityNow, latch, look, type PipelineDeps } from './deps.js';
import type { Wake } from './idle-notices.js';
import { decided } from './events.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';

export type ChainRef = { kind: 'task'; taskId: string } | ({ kind: 'job' } & JobRef);

/** A chain job's data names its chain: `taskId`, or `job`. */
export function refOf(d: { taskId?: string; job?: JobRef }): ChainRef {
  return d.job ? { kind: 'job', ...d.job } : { kind: 'task', taskId: d.taskId! };
}

export interface Chain {
  ref: ChainRef;
  facts: ChainFacts;
  /** null: a task that is not terminal (no chain: an open task protects). */
  step: ChainStep | null;
  sessionId: string | null;
  /** A task chain's task. */
  task?: Task;
  /** A task chain's file as loadChain read it: its latch starts from these bytes (LatchOptions.base). */
  base?: LatchBase;
  /** For logs: `task X` or `job X`. */
  name: string;
  /** What the one message says the session finished. */
  what: { id: string; state: string; kind: 'task' | 'job' };
}

/** The chain's latched fields in one shape (a task file's names differ). */
export type ChainPatch = Partial<Pick<ChainFacts, 'startedAt' | 'askedAt' | 'requests' | 'lastRequestAt' | 'gaveUpAt' | 'exitedAt'>>;

const exitIdOf = (ref: ChainRef, sessionId: string, n: number) => (ref.kind === 'task' ? requestExitId(ref.taskId, sessionId, n) : jobExitId(ref.shortId, ref.start, n));

/** A chain's key among the dry run's latches. */
export const chainKey = (ref: ChainRef) => (ref.kind === 'task' ? `task/${ref.taskId}` : `job/${jobKey(ref.shortId, ref.start)}`);

function withFinish(deps: PipelineDeps, ref: ChainRef, sessionId: string | null, f: ChainFacts): ChainFacts {
  // an ended chain's next step is its end whatever the ledger says: not read (reconcile sees 10,000 of them)
  if (!f.requests || !sessionId || f.lastExitFinishedAt || !chainOpen(f)) return f;
  if (deps.dry) return f; // a dry run's exit jobs finish in its latches (lastExitFinishedAt), never in the ledger
  const finished = readExit(deps.config.stateDir, exitIdOf(ref, sessionId, f.requests))?.finishedAt;
  return finished ? { ...f, lastExitFinishedAt: finished } : f;
}

function taskChainOf(deps: PipelineDeps, real: Task): Chain {
  const task = deps.dry ? deps.dry.task(real) : real;
  const ref: ChainRef = { kind: 'task', taskId: task.id };
  const facts = withFinish(deps, ref, task.sessionId, taskChain(task));
  return { ref, facts, step: task.terminal ? chainStep(facts, deps.policy) : null, sessionId: task.sessionId, task, name: `task ${task.id}`, what: { id: task.id, state: task.state, kind: 'task' } };
}

/** The chain of a task already read (the watcher, reconcile). */
export function chainOfTask(deps: PipelineDeps, task: Task): Chain {
  return taskChainOf(deps, task);
}

/**
 * Load a chain for a chain job. A task file that is invalid or gone can never succeed until someone fixes
 * it, so its job is unrecoverable (reported once, not retried eight times); reconcile schedules it again.
 */
export async function loadChain(deps: PipelineDeps, ref: ChainRef): Promise<Chain> {
  if (ref.kind === 'job') {
    const rec = readJobChain(deps.config.stateDir, jobKey(ref.shortId, ref.start));
    const { shortId: _a, sessionId: _b, start: _c, ...latched } = rec ?? { shortId: '', sessionId: '', start: '', requests: 0 };
    const over = deps.dry ? deps.dry.facts(chainKey(ref), latched) : latched;
    const facts = withFinish(deps, ref, ref.sessionId, { ...over, kind: 'job' });
    return { ref, facts, step: chainStep(facts, deps.policy), sessionId: ref.sessionId, name: `job ${ref.shortId}`, what: { id: ref.shortId, state: 'done', kind: 'job' } };
  }
  const r = readForLatch(deps.config.fleet.tasksDir, ref.taskId);
  if (r.kind === 'missing') throw new UnrecoverableError(`task ${ref.taskId} is gone`);
  if (r.kind === 'invalid') {
    deps.log.warn({ event: 'task:invalid', taskId: ref.taskId, problem: r.invalid.problem }, `task ${ref.taskId} is invalid and left untouched: ${r.invalid.problem}`);
    throw new UnrecoverableError(`task ${ref.taskId} is invalid: ${r.invalid.problem}`);
  }
  return { ...taskChainOf(deps, r.task), base: r.base };
}

const TASK_FIELDS: Record<keyof ChainPatch, keyof LatchPatch> = {
  startedAt: 'releasedAt',
  askedAt: 'exitAskedAt',
  requests: 'exitRequests',
  lastRequestAt: 'exitRequestedAt',
  gaveUpAt: 'exitGaveUpAt',
  exitedAt: 'exitedAt',
};

/**
 * Latch a chain's fields; returns the chain after the latch and which fields changed. A task file another
 * writer holds (its lock, or one that keeps changing) is a step for later, not a failure: the job goes back
 * to delayed under its own id. An invalid one is unrecoverable.
 */
export async function latchChain(
  deps: PipelineDeps,
  c: Chain,
  patch: ChainPatch,
  job?: { moveToDelayed(ts: number, token?: string): Promise<void> },
  token?: string,
): Promise<{ chain: Chain; applied: ChainPatch }> {
  if (deps.dry) {
    // a dry run latches in memory only: the task file and stateDir stay exactly as they are
    const applied = deps.dry.latch(chainKey(c.ref), patch);
    return { chain: c.task ? taskChainOf(deps, c.task) : await loadChain(deps, c.ref), applied };
  }
  if (c.ref.kind === 'job') {
    const { applied } = latchJobChain(deps.config.stateDir, c.ref, patch as JobLatch, deps.config.maxExitRequests);
    return { chain: await loadChain(deps, c.ref), applied };
  }
  const p: LatchPatch = {};
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) (p as Record<string, unknown>)[TASK_FIELDS[k as keyof ChainPatch]] = v;
  try {
    const res = await latch(deps, c.ref.taskId, p, c.base);
    const applied: ChainPatch = {};
    for (const [k, f] of Object.entries(TASK_FIELDS)) if (f in res.applied) (applied as Record<string, unknown>)[k] = (res.applied as Record<string, unknown>)[f];
    return { chain: taskChainOf(deps, res.task), applied };
  } catch (err) {
    if (err instanceof TaskBusyError && job) {
      deps.log.warn({ event: 'task:busy', taskId: c.ref.taskId, error: err.message }, `task ${c.ref.taskId}: ${err.message}; trying again shortly`);
      await job.moveToDelayed(deps.now() + 1000 + Math.random() * 1000, token);
      throw new DelayedError();
    }
    if (err instanceof TaskInvalidError) throw new UnrecoverableError(err.message);
    throw err;
  }
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
  // a job still in the queue is not added twice (a confirm: present and unfinished, or missing — (re-)add it)
  if (j.queue === 'terminal') await p.terminal.add(j.jobId, j.data as { taskId: string });
  else if (j.queue === 'ask') await p.ask.add(j.jobId, j.data as never, { delay });
  else if (j.queue === 'retry') await p.retry.add(j.jobId, j.data as never, { delay });
  else await p.exit.add(j.jobId, j.data as never, { priority: exitPriorityNow(deps, o.rssBytes) });
  return c.step;
}

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
    const ref = { kind: 'job' as const, shortId: s.id, sessionId: s.sessionId, start: String(Math.round(s.procStartMs ?? 0)) };
    if (native.facts.startedAt) {
      if (deps.dry) deps.dry.latch(chainKey(ref), { startedAt: native.facts.startedAt });
      else latchJobChain(deps.config.stateDir, ref, { startedAt: native.facts.startedAt }, deps.config.maxExitRequests);
    }
    await schedule(deps, await loadChain(deps, ref));
    n++;
  }
  return n;
}

/** The job that carries a chain's next step: its queue, id, data and due time (null: no job — ended, or open). */
export function stepJob(deps: PipelineDeps, c: Chain): { queue: 'terminal' | Wake['queue']; jobId: string; data: object; at?: number } | null {
  const step = c.step;
  if (!step || !c.sessionId) return null;
  const ref = c.ref;
  const data = ref.kind === 'task' ? { taskId: ref.taskId } : { job: { shortId: ref.shortId, sessionId: ref.sessionId, start: ref.start } };
  const retryId = (n: number) => (ref.kind === 'task' ? exitRetryId(ref.taskId, n) : jobRetryId(ref.shortId, ref.start, n));
  switch (step.step) {
    case 'release':
      return ref.kind === 'task' ? { queue: 'terminal', jobId: taskTerminalId(ref.taskId), data } : null;
    case 'ask':
      return { queue: 'ask', jobId: ref.kind === 'task' ? exitAskId(ref.taskId) : jobAskId(ref.shortId, ref.start), data, at: step.at };
    case 'request':
      return { queue: 'retry', jobId: retryId(step.n), data: { ...data, n: step.n }, at: step.at };
    case 'give-up': {
      const n = deps.config.maxExitRequests + 1;
      return { queue: 'retry', jobId: retryId(n), data: { ...data, n }, at: step.at };
    }
    case 'confirm': {
      const exitData =
        ref.kind === 'task'
          ? { reason: 'request', taskId: ref.taskId, sessionId: c.sessionId, n: step.n }
          : { reason: 'job', sessionId: ref.sessionId, shortId: ref.shortId, start: ref.start, n: step.n };
      return { queue: 'exit', jobId: exitIdOf(ref, c.sessionId, step.n), data: exitData };
    }
    case 'end':
      return null;
  }
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
  const ids = c.ref.kind === 'task' ? { taskId: c.ref.taskId, sessionId: c.sessionId } : { job: c.ref.shortId, sessionId: c.sessionId };
  if (j.gone && c.task) await endedElsewhere(deps, c.task, j.view ?? null);
  else if (j.gone && deps.dry) deps.dry.latch(chainKey(c.ref), { exitedAt: new Date(deps.now()).toISOString() });
  else if (j.gone && c.ref.kind === 'job') latchJobChain(deps.config.stateDir, c.ref, { exitedAt: new Date(deps.now()).toISOString() });
  decided(deps, 'chain:ended', { ...ids, step, why: j.why, ...evidenceOf(j.view) }, `${c.name}: chain ends before the ${step} (${j.why})`);
  return { ended: j.why };
}
