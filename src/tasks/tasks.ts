// The task store (DESIGN §3, D7/D8), one name to import it by. Task files are read loosely and latched
// with sunset's own fields without damaging anything another program wrote. Its parts:
//   task-file.ts   what a task file is: the schema, the names, the judgement of one file's bytes, the errors
//   read-tasks.ts  reading: the folder (with its stat-keyed cache), one task, one file for the watcher
//   latch.ts       writing: the set-once/only-grows merge, the lock, the compare-and-swap retry loop
// (the file-system mechanics — temp file, fsync, rename, lock file, compare — are src/store/atomic-file.ts).
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
export { clearTaskCache, readTask, readTaskFile, readTasks, TASK_CACHE_SETTLE_MS, type ReadTasksOptions, type ReadTasksResult, type TaskRead } from './read-tasks.js';
export { latchTask, LOCK_STALE_MS, lockFileFor, mergeLatched, readForLatch, type LatchBase, type LatchOptions, type WrittenStat, type LatchPatch } from './latch.js';
