// The cooperative lock beside a task file, `.<id>.json.lock` (docs/pipeline.md tells other writers how to take
// it), as the latch takes it: held too long by another, it is a TaskBusyError. Apart from latch.ts because its
// name is public, shared with every writer that cooperates.
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  acquireLock,
  acquireLockFile,
  LOCK_STALE_MS as ATOMIC_LOCK_STALE_MS,
  LockBusyError,
  type HeldLockFile,
} from '../store/file-lock.js';
import { TaskBusyError } from './task-file.js';

/** A lock file older than this was left by a writer that died holding it. */
export const LOCK_STALE_MS = ATOMIC_LOCK_STALE_MS;

/** The cooperative lock beside a task file: `.<id>.json.lock`, created exclusively, removed after. */
export function lockFileFor(dir: string, id: string): string {
  return join(dir, `.${id}.json.lock`);
}

/** Takes the task's lock file, waiting for another holder; one older than LOCK_STALE_MS is broken. Resolves with its release. */
export async function lockTask(dir: string, id: string, waitMs: number): Promise<() => Promise<void>> {
  const owner = () => JSON.stringify({ by: 'sunset', pid: process.pid, host: hostname(), at: new Date().toISOString() });
  return busyIfLocked(() => acquireLock(lockFileFor(dir, id), waitMs, { owner, staleMs: LOCK_STALE_MS }));
}

/** The same lock, taken as a lock file that will hold the task's next version (latchByLockFile). */
export function lockTaskFile(dir: string, id: string, waitMs: number, mode: number, onWait?: () => void): Promise<HeldLockFile> {
  return busyIfLocked(() => acquireLockFile(lockFileFor(dir, id), waitMs, { staleMs: LOCK_STALE_MS, mode, ...(onWait ? { onWait } : {}) }));
}

async function busyIfLocked<T>(take: () => Promise<T>): Promise<T> {
  try {
    return await take();
  } catch (e) {
    if (e instanceof LockBusyError) throw new TaskBusyError(`task file is ${e.message}`, e.file);
    throw e;
  }
}
