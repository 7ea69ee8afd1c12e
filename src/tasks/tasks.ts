// The task store (DESIGN §3, D7/D8), one name to import it by. Task files are read loosely and latched
// with sunset's own fields without damaging anything another program wrote. Its parts:
//   task-file.ts   what a task file is: the schema, the names, the judgement of one file's bytes, the errors
//   read-tasks.ts  reading: the folder (with its stat-keyed cache), one task, one file for the watcher
//   latch.ts       writing: the compare-and-swap retry loop, under the lock; its parts latch-merge.ts (the
//                  set-once/only-grows rules and the text edit, pure), latch-lock.ts (the task's lock file),
//                  latch-read.ts (a task read for a latch)
// (the file-system mechanics — temp file, fsync, rename, lock file — are src/store/atomic-file.ts and
// file-lock.ts; the compare before the rename is src/store/compare-and-swap.ts).
export {
  EXIT_REQUESTS_CEILING,
  isIsoTime,
  isTerminal,
  LATCHED_FIELDS,
  matchesTaskSchema,
  MAX_SEARCH_BYTES,
  MAX_TASK_BYTES,
  TaskBusyError,
  taskFileSchema,
  TaskInvalidError,
  TERMINAL_STATES,
  validateTaskId,
  type InvalidTask,
  type LatchedField,
  type Task,
  type TaskFile,
} from './task-file.js';
export {
  clearTaskCache,
  readTask,
  readTaskFile,
  readTasks,
  TASK_CACHE_SETTLE_MS,
  type ReadTasksOptions,
  type ReadTasksResult,
  type TaskRead,
} from './read-tasks.js';
export { latchTask, type LatchOptions, type WrittenStat } from './latch.js';
export { mergeLatched, type LatchPatch } from './latch-merge.js';
export { LOCK_STALE_MS, lockFileFor } from './latch-lock.js';
export { readForLatch, type LatchBase } from './latch-read.js';
