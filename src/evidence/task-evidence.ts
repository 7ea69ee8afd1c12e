// The Driver's task files as a sweep reads them for one session: the tasks that name it, the one that drives its
// chain, and the invalid files that may name it (each of which protects it). Pure but for the exit ledger's read.
import type { RosterRow } from './roster.js';
import type { InvalidTask, ReadTasksResult, Task } from '../tasks/tasks.js';
import { taskChainOpen, type TaskFacts } from '../doctrine/verdict.js';
import { exitFinishedAt } from '../store/ledger.js';
import { requestExitId } from '../../queues/session-exit.js';
import type { DryRunLatches } from '../pipeline/dry-run.js';

/** The tasks by the session they name, and the invalid files. */
export interface TaskIndex {
  bySession: Map<string, Task[]>;
  /** The names of the invalid task files that name this row. */
  invalidNaming(row: RosterRow): string[];
}

export function indexTasks(read: ReadTasksResult): TaskIndex {
  const bySession = new Map<string, Task[]>();
  for (const t of read.ok ? read.tasks : []) {
    if (!t.sessionId) continue;
    const list = bySession.get(t.sessionId);
    if (list) list.push(t);
    else bySession.set(t.sessionId, [t]);
  }
  const invalid = read.ok ? read.invalid : [];
  return { bySession, invalidNaming: (row) => invalid.filter((bad) => names(bad, row)).map((bad) => bad.name) };
}

/** The tasks that name a row (by its sessionId or its short id): those still open, and the one that drives its chain. */
export function namedTasks(index: TaskIndex, row: RosterRow): { open: Task[]; driving: Task | undefined } {
  const by = index.bySession;
  const named = [...new Set([...(by.get(row.sessionId) ?? []), ...(row.id === null ? [] : (by.get(row.id) ?? []))])];
  const open = named.filter((t) => !t.terminal);
  // an open task drives it; else the latest terminal one
  const terminal = named.filter((t) => t.terminal).sort((a, b) => b.orderKey - a.orderKey || (a.id < b.id ? 1 : -1));
  return { open, driving: open[0] ?? terminal[0] };
}

/** The driving task's facts (a dry run's latches over the file's). */
export function drivingTask(t: Task, stateDir: string, dry?: DryRunLatches): TaskFacts {
  return dry ? dry.task(taskFacts(t, stateDir)) : taskFacts(t, stateDir);
}

function taskFacts(t: Task, stateDir: string): TaskFacts {
  const f: TaskFacts = { id: t.id, state: t.state, terminal: t.terminal, exitRequests: t.exitRequests };
  for (const k of ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt', 'exitGaveUpAt'] as const) if (t[k]) f[k] = t[k];
  // the next step is timed from when the latest exit job finished (the exit ledger, not the task file)
  if (t.exitRequests > 0 && t.sessionId && t.terminal && taskChainOpen(t)) {
    const finished = exitFinishedAt(stateDir, requestExitId(t.id, t.sessionId, t.exitRequests));
    if (finished) f.lastExitFinishedAt = finished;
  }
  return f;
}

/** Does an invalid task file name this session: in its parsed fields, or anywhere in its bytes? */
function names(bad: InvalidTask, row: RosterRow): boolean {
  if (bad.parsed) return bad.sessionIds.includes(row.sessionId) || (row.id !== null && bad.sessionIds.includes(row.id));
  if (bad.text === null) return false;
  return bad.text.includes(row.sessionId) || (row.id !== null && row.id.length >= 4 && bad.text.includes(row.id));
}
