// A task's chain in the pipeline: its facts (the task file's latched fields and the exit ledger's finish of its
// latest exit job), the job that carries its next step, and the one place that enqueues it. The step and its
// due time come from the doctrine (src/doctrine/chain.ts); this file only maps a step to a job. Idempotent:
// reconcile, the watcher and every worker call schedule(), so a lost event, a restart or a flushed Redis only
// delays a step, never loses or repeats one.
import { DelayedError, UnrecoverableError } from 'bullmq';
import { chainStep, type ChainStep } from '../doctrine/chain.js';
import { taskChain } from '../doctrine/verdict.js';
import { readTask, TaskBusyError, TaskInvalidError, type LatchPatch, type Task } from '../tasks/tasks.js';
import { readExit } from '../store/ledger.js';
import { taskTerminalId } from '../../queues/task-terminal.js';
import { exitAskId } from '../../queues/exit-ask.js';
import { exitRetryId } from '../../queues/exit-retry.js';
import { requestExitId } from '../../queues/session-exit.js';
import { exitPriorityNow, latch, type PipelineDeps } from './deps.js';

/** A task with its chain's facts: the latched fields, and when its latest exit job finished (the ledger). */
export interface TaskChain {
  task: Task;
  /** null: the task is not terminal (no chain). */
  step: ChainStep | null;
}

/** The ledger's finish of exit job n of this task (what request n+1 and the give-up are timed from). */
export function lastExitFinished(deps: PipelineDeps, task: Pick<Task, 'id' | 'sessionId' | 'exitRequests'>): string | undefined {
  if (!task.exitRequests || !task.sessionId) return undefined;
  return readExit(deps.config.stateDir, requestExitId(task.id, task.sessionId, task.exitRequests))?.finishedAt;
}

/** The chain's next step, from the task's latched fields and the ledger; null while the task is open (it protects). */
export function stepOf(deps: PipelineDeps, task: Task): ChainStep | null {
  if (!task.terminal) return null;
  return chainStep(taskChain({ ...task, lastExitFinishedAt: lastExitFinished(deps, task) }), deps.policy);
}

/**
 * Load a task for a chain job. Invalid or gone: the job can never succeed until someone fixes the file, so it
 * is unrecoverable (reported once, not retried eight times); reconcile schedules it again once it is valid.
 */
export async function loadChain(deps: PipelineDeps, taskId: string): Promise<TaskChain> {
  const r = await readTask(deps.config.fleet.tasksDir, taskId);
  if (r.kind === 'missing') throw new UnrecoverableError(`task ${taskId} is gone`);
  if (r.kind === 'invalid') {
    deps.log.warn({ event: 'task:invalid', taskId, problem: r.invalid.problem }, `task ${taskId} is invalid and left untouched: ${r.invalid.problem}`);
    throw new UnrecoverableError(`task ${taskId} is invalid: ${r.invalid.problem}`);
  }
  return { task: r.task, step: stepOf(deps, r.task) };
}

/**
 * Latch a chain's fields. A file another writer holds (its lock, or one that keeps changing) is a step for
 * later, not a failure: the job goes back to delayed under its own id. An invalid file is unrecoverable.
 */
export async function latchChain(deps: PipelineDeps, taskId: string, patch: LatchPatch, job?: { moveToDelayed(ts: number, token?: string): Promise<void> }, token?: string) {
  try {
    return await latch(deps, taskId, patch);
  } catch (err) {
    if (err instanceof TaskBusyError && job) {
      deps.log.warn({ event: 'task:busy', taskId, error: err.message }, `task ${taskId}: ${err.message}; trying again shortly`);
      await job.moveToDelayed(deps.now() + 1000 + Math.random() * 1000, token);
      throw new DelayedError();
    }
    if (err instanceof TaskInvalidError) throw new UnrecoverableError(err.message);
    throw err;
  }
}

/**
 * Enqueue the job that carries the task's next step, due when the doctrine says. Nothing for a chain that
 * has ended, or whose exit job is still confirming (the exit worker schedules the step after it when it
 * finishes); a latched request whose exit job has no finish in the ledger is enqueued again (a crash between
 * latch and enqueue, a flush: a job whose call was made only confirms). Returns what it scheduled.
 */
export async function schedule(deps: PipelineDeps, task: Task, o: { step?: ChainStep | null; rssBytes?: number | null } = {}): Promise<ChainStep | null> {
  const step = o.step === undefined ? stepOf(deps, task) : o.step;
  if (!step) return null;
  const now = deps.now();
  const delay = (at: number) => (Number.isFinite(at) ? Math.max(0, at - now) : 0);
  const p = deps.producers;
  const id = task.id;
  switch (step.step) {
    case 'release':
      await p.terminal.add(taskTerminalId(id), { taskId: id });
      break;
    case 'ask':
      if (task.sessionId) await p.ask.add(exitAskId(id), { taskId: id }, { delay: delay(step.at) });
      break;
    case 'request':
      if (task.sessionId) await p.retry.add(exitRetryId(id, step.n), { taskId: id, n: step.n }, { delay: delay(step.at) });
      break;
    case 'give-up':
      if (task.sessionId) await p.retry.add(exitRetryId(id, deps.config.maxExitRequests + 1), { taskId: id, n: deps.config.maxExitRequests + 1 }, { delay: delay(step.at) });
      break;
    case 'confirm':
      if (task.sessionId) {
        const exitId = requestExitId(id, task.sessionId, step.n);
        // present and unfinished, or missing: (re-)add it; a job still in the queue is not added twice
        await p.exit.add(exitId, { reason: 'request', taskId: id, sessionId: task.sessionId, n: step.n }, { priority: exitPriorityNow(deps, o.rssBytes) });
      }
      break;
    case 'end':
      break;
  }
  return step;
}
