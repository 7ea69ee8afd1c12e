// A task's exit chain, derived from its latched fields alone (D7): release → ask → request 1..3 → give up.
// planTask() is pure; reconcile, the watcher and every chain worker call it to enqueue the next step, so a
// lost event, a restart or a flushed Redis only delays a step, never loses or repeats one.
import type { Task } from '../tasks/tasks.js';
import type { ExitRecord } from '../store/ledger.js';
import type { Policy } from '../doctrine/verdict.js';
import { taskTerminalId } from '../../queues/task-terminal.js';
import { exitAskId } from '../../queues/exit-ask.js';
import { exitRetryId } from '../../queues/exit-retry.js';
import { requestExitId } from '../../queues/session-exit.js';

export type PlannedStep =
  | { queue: 'task-terminal'; id: string; data: { taskId: string }; delay: number }
  | { queue: 'exit-ask'; id: string; data: { taskId: string }; delay: number }
  | { queue: 'exit-retry'; id: string; data: { taskId: string; n: number }; delay: number }
  | { queue: 'session-exit'; id: string; data: { reason: 'request'; taskId: string; sessionId: string; n: number }; delay: number };

export interface ChainPlan {
  steps: PlannedStep[];
  /** Why the chain has nothing (more) to do, when it does not. */
  ended?: 'task-not-terminal' | 'exited' | 'gave-up' | 'no-session';
}

const at = (s: string | undefined) => (s ? Date.parse(s) : NaN);
const wait = (due: number, now: number) => (Number.isFinite(due) ? Math.max(0, due - now) : 0);

export function planTask(task: Task, ledger: (jobId: string) => ExitRecord | null, policy: Policy & { exitConfirm: number }, now: number): ChainPlan {
  if (!task.terminal) return { steps: [], ended: 'task-not-terminal' };
  if (task.exitedAt) return { steps: [], ended: 'exited' };
  if (task.exitGaveUpAt) return { steps: [], ended: 'gave-up' };
  const id = task.id;
  if (!task.releasedAt) return { steps: [{ queue: 'task-terminal', id: taskTerminalId(id), data: { taskId: id }, delay: 0 }] };
  if (!task.sessionId) return { steps: [], ended: 'no-session' };
  if (!task.exitAskedAt) return { steps: [{ queue: 'exit-ask', id: exitAskId(id), data: { taskId: id }, delay: wait(at(task.releasedAt) + policy.grace, now) }] };
  const n = task.exitRequests;
  if (n === 0) return { steps: [{ queue: 'exit-retry', id: exitRetryId(id, 1), data: { taskId: id, n: 1 }, delay: wait(at(task.exitAskedAt) + policy.askWait, now) }] };
  const exitId = requestExitId(id, task.sessionId, n);
  const prev = ledger(exitId);
  const steps: PlannedStep[] = [];
  // request n is latched; its exit job may be missing after a crash between latch and enqueue, or a flush
  if (!prev?.finishedAt) steps.push({ queue: 'session-exit', id: exitId, data: { reason: 'request', taskId: id, sessionId: task.sessionId, n }, delay: 0 });
  const due = prev?.finishedAt ? at(prev.finishedAt) + policy.retryWait : now + policy.exitConfirm + policy.retryWait;
  const next = Math.min(n + 1, policy.maxExitRequests + 1);
  steps.push({ queue: 'exit-retry', id: exitRetryId(id, next), data: { taskId: id, n: next }, delay: wait(due, now) });
  return { steps };
}
