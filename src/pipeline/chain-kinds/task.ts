// A Driver's task: its chain's facts are the task file's latched fields (DESIGN §3), latched by editing the file
// (D8). Released, asked, requested; its jobs are named by the task id.
import { DelayedError, UnrecoverableError } from 'bullmq/dist/cjs/classes/index.js';
import { taskChain } from '../../doctrine/verdict.js';
import type { SessionView } from '../../evidence/fleet.js';
import { readExit } from '../../store/ledger.js';
import { readForLatch, TaskBusyError, TaskInvalidError, type LatchBase, type LatchPatch, type Task } from '../../tasks/tasks.js';
import { taskTerminalId } from '../../../queues/task-terminal.js';
import { exitAskId } from '../../../queues/exit-ask.js';
import { exitRetryId } from '../../../queues/exit-retry.js';
import { requestExitId } from '../../../queues/session-exit.js';
import { evidenceOf, latch, type PipelineDeps } from '../deps.js';
import { chainOf, scheduleAfterExit } from '../chains.js';
import type { Chain, ChainKindAdapter, ChainPatch } from './types.js';

export type TaskRef = { kind: 'task'; taskId: string };

const key = (taskId: string) => `task/${taskId}`;

/** The chain of a task already read (the watcher, reconcile), as this run's store sees it. */
export function chainOfTask(deps: PipelineDeps, real: Task, base?: LatchBase): Chain<TaskRef> {
  const task = deps.store.task(real);
  return chainOf(
    deps,
    taskKind,
    { kind: 'task', taskId: task.id },
    {
      facts: taskChain(task),
      sessionId: task.sessionId,
      open: task.terminal,
      task,
      ...(base ? { base } : {}),
      what: { id: task.id, state: task.state, kind: 'task' },
    },
  );
}

const TASK_FIELDS: Record<keyof ChainPatch, keyof LatchPatch> = {
  startedAt: 'releasedAt',
  askedAt: 'exitAskedAt',
  requests: 'exitRequests',
  lastRequestAt: 'exitRequestedAt',
  gaveUpAt: 'exitGaveUpAt',
  exitedAt: 'exitedAt',
};

/** Latch a task's chain fields through the store: the task file as written (a dry run: none), and what changed. */
async function latchTaskChain(
  deps: PipelineDeps,
  taskId: string,
  patch: ChainPatch,
  base?: LatchBase,
): Promise<{ task: Task | null; applied: ChainPatch }> {
  let task: Task | null = null;
  const applied = await deps.store.latch(key(taskId), patch, async () => {
    const p: LatchPatch = {};
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) (p as Record<string, unknown>)[TASK_FIELDS[k as keyof ChainPatch]] = v;
    const res = await latch(deps, taskId, p, base);
    task = res.task;
    const out: ChainPatch = {};
    for (const [k, f] of Object.entries(TASK_FIELDS))
      if (f in res.applied) (out as Record<string, unknown>)[k] = (res.applied as Record<string, unknown>)[f];
    return out;
  });
  return { task, applied };
}

export const taskKind: ChainKindAdapter<TaskRef> = {
  kind: 'task',
  shape: 'task',
  refOf: (d) => (d.taskId ? { kind: 'task', taskId: d.taskId } : null),
  dataOf: (ref) => ({ taskId: ref.taskId }),
  exitRefOf: (d) => (d.reason === 'request' ? { kind: 'task', taskId: d.taskId } : null),
  exitData: (ref, sessionId, n) => ({ reason: 'request', taskId: ref.taskId, sessionId, n }),
  ids: {
    release: (ref) => taskTerminalId(ref.taskId),
    ask: (ref) => exitAskId(ref.taskId),
    retry: (ref, n) => exitRetryId(ref.taskId, n),
    exit: (ref, sessionId, n) => requestExitId(ref.taskId, sessionId, n),
  },
  key: (ref) => key(ref.taskId),
  alarmKey: (ref) => key(ref.taskId),
  name: (ref) => `task ${ref.taskId}`,
  logged: (ref) => ({ taskId: ref.taskId }),
  taskId: (ref) => ref.taskId,
  judgeScope: (ref) => ({ taskId: ref.taskId }),
  askClaim: (ref) => ref.taskId,

  // A task file that is invalid or gone can never succeed until someone fixes it, so its job is unrecoverable
  // (reported once, not retried eight times); reconcile schedules it again.
  async load(deps, ref) {
    const r = readForLatch(deps.config.fleet.tasksDir, ref.taskId);
    if (r.kind === 'missing') throw new UnrecoverableError(`task ${ref.taskId} is gone`);
    if (r.kind === 'invalid') {
      deps.log.warn(
        { event: 'task:invalid', taskId: ref.taskId, problem: r.invalid.problem },
        `task ${ref.taskId} is invalid and left untouched: ${r.invalid.problem}`,
      );
      throw new UnrecoverableError(`task ${ref.taskId} is invalid: ${r.invalid.problem}`);
    }
    return chainOfTask(deps, r.task, r.base);
  },
  // A task file another writer holds (its lock, or one that keeps changing) is a step for later, not a failure:
  // the job goes back to delayed under its own id. An invalid one is unrecoverable.
  async latch(deps, c, patch, job, token) {
    const id = c.ref.taskId;
    try {
      const res = await latchTaskChain(deps, id, patch, c.base);
      // a dry run's latches are laid over the task as it was read
      return { chain: chainOfTask(deps, res.task ?? c.task!), applied: res.applied };
    } catch (err) {
      if (err instanceof TaskBusyError && job) {
        deps.log.warn({ event: 'task:busy', taskId: id, error: err.message }, `task ${id}: ${err.message}; trying again shortly`);
        await job.moveToDelayed(deps.now() + 1000 + Math.random() * 1000, token);
        throw new DelayedError();
      }
      if (err instanceof TaskInvalidError) throw new UnrecoverableError(err.message);
      throw err;
    }
  },
  async markExited(deps, ref) {
    await latchTaskChain(deps, ref.taskId, { exitedAt: new Date(deps.now()).toISOString() }).catch((err) =>
      deps.log.warn({ event: 'latch:failed', taskId: ref.taskId, error: err.message }),
    );
  },
  ended: (deps, c, view) => endedElsewhere(deps, c.task!, view),
  afterExit: (deps, ref, o) => scheduleAfterExit(deps, ref, o),
};

/**
 * A task's session is not running any more — a record (a background job's row keeps no pid), absent from a
 * roster that answered (an interactive session's row goes), or its process gone — so its chain ends in
 * exitedAt, never silently. Who ended it, when sunset can tell: sunset (its exit call is in the ledger),
 * else someone else (a person's `claude stop` or /exit, Claude Code's own reaper, a crash).
 */
export async function endedElsewhere(deps: PipelineDeps, task: Task, view: SessionView | null | undefined): Promise<void> {
  if (task.exitedAt || !task.terminal) return;
  const by = whoEnded(deps, task, view ?? null);
  const fields = { taskId: task.id, sessionId: task.sessionId, by: by.by, how: by.how, ...evidenceOf(view ?? undefined) };
  const words = `task ${task.id}: its session is not running any more (${by.how}); latching exitedAt`;
  const { applied } = await latchTaskChain(deps, task.id, { exitedAt: new Date(deps.now()).toISOString() });
  deps.acts.sessionEnded(deps, fields, words, Boolean(applied.exitedAt));
}

/** Who ended a session sunset finds not running: sunset, when one of this task's exit calls is in the ledger. */
export function whoEnded(deps: PipelineDeps, task: Task, view: SessionView | null): { by: 'sunset' | 'other'; how: string } {
  for (let n = task.exitRequests; n >= 1; n--) {
    const rec = task.sessionId ? readExit(deps.config.stateDir, requestExitId(task.id, task.sessionId, n)) : null;
    if (rec?.calledAt) return { by: 'sunset', how: `sunset's exit request ${n} (${rec.method ?? 'its exit path'})` };
  }
  if (!view) return { by: 'other', how: 'its row has left the roster: ended outside sunset (a person, a crash)' };
  if (view.verdict === 'gone') return { by: 'other', how: `its process has ended (${view.evidence.liveWhy ?? 'gone'}), not by sunset` };
  const state = view.row.state;
  if (state === 'stopped') return { by: 'other', how: 'the roster keeps it as a stopped record: ended by `claude stop` outside sunset' };
  // a done job's record stays `done` whoever ended it: a person's `claude stop`, or Claude Code's own reaper —
  // which skips a pinned job, so a pinned one was a person (or a crash)
  if (state === 'done')
    return {
      by: 'other',
      how: view.evidence.pinned
        ? "the roster keeps it as a done record: ended outside sunset (a person's `claude stop` or a crash: Claude Code's own reaper skips a pinned job)"
        : "the roster keeps it as a done record: ended outside sunset (a person's `claude stop`, or Claude Code's own reaper, which retires settled jobs)",
    };
  return { by: 'other', how: `the roster keeps it as a record${state ? ` (${state})` : ''}: ended outside sunset` };
}
