// The latch (D8): sunset's own fields written into a task file without damaging anything another program
// wrote — a textual edit (latch-merge.ts), under the cooperative lock (latch-lock.ts, whose lock file holds the
// new text, as git's index.lock does), swapped in by compare-and-swap, re-read, re-merged and retried when
// another writer got there first. This file is the write and its retries; the read is latch-read.ts.
import * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncAsync, syncDirAfter, tempNameFor, writeAllAtSync } from '../store/atomic-file.js';
import { fitOwnership, renameIfStill, swapIfUnchanged } from '../store/compare-and-swap.js';
import { dropLockFile, renameLockFile } from '../store/file-lock.js';
import { checkPatch, edit, mergeLatched, type LatchPatch } from './latch-merge.js';
import { lockTask, lockTaskFile } from './latch-lock.js';
import { loadForLatch, type LatchBase, type Loaded } from './latch-read.js';
import { EXIT_REQUESTS_CEILING, preview, TaskBusyError, TaskInvalidError, validateTaskId, type Task, withMtime } from './task-file.js';

/** What a stat of a file the latch wrote gives while no one has changed it since (a rename changes its ctime, not these). */
export interface WrittenStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface LatchOptions {
  /** The most exit requests to record. @defaultValue 3 */
  maxExitRequests?: number;
  /** Called after each successful rename, with the new file's inode (the watcher uses it to ignore its own events). */
  onWrite?: (file: string, text: string, st: WrittenStat) => void;
  /** How long to wait for another writer's lock before giving up. @defaultValue 12000 */
  lockWaitMs?: number;
  /** Test seam: called each time the latch finds the task's lock held and waits to try again. */
  onLockWait?: () => void;
  /** Test seam: runs after the new text is in the temp file, just before the compare-and-swap. */
  beforeSwap?: (file: string) => void | Promise<void>;
  /**
   * The file as its caller last read it (readForLatch): the first attempt edits these bytes instead of reading
   * the file again. Safe however old: the swap happens only if the file still holds exactly them, else the
   * attempt is retried on a fresh read; and a base that says nothing would change is checked on a fresh read.
   */
  base?: LatchBase;
}

const MAX_TRIES = 20;
/** The first tries fsync the new file before the rename; later ones after it, so a writer that rewrites the file faster than an fsync takes cannot starve the latch. */
const DURABLE_FIRST_TRIES = 3;

/** Latches on one file from this process queue behind each other; other processes meet the lock, then compare-and-swap. */
const inFlight = new Map<string, Promise<unknown>>();

/**
 * Writes the patch's latched fields into the task file, by the rules of mergeLatched, and only
 * when something changes. The file is edited as text (everything else byte-for-byte kept) and
 * replaced by a temp file and a rename. Writers that take the same lock (`lockFileFor`) never
 * race it; against any other writer it renames only if the file still holds exactly the bytes
 * the edit was computed from, and otherwise re-reads, re-merges and tries again.
 * @throws TaskInvalidError when the file is invalid or has gone: nothing is written.
 * @throws TaskBusyError when another writer held the lock, or kept changing the file, for too long.
 */
export async function latchTask(
  dir: string,
  id: string,
  patch: LatchPatch,
  opts: LatchOptions = {},
): Promise<{ changed: boolean; task: Task; applied: LatchPatch }> {
  checkPatch(patch);
  const bad = validateTaskId(id);
  const file = join(dir, `${id}.json`);
  if (bad) throw new TaskInvalidError(`task ${preview(id)}: ${bad}`, file);
  const prior = inFlight.get(file) ?? Promise.resolve();
  const run = prior.then(
    () => latchOnce(dir, id, file, patch, opts),
    () => latchOnce(dir, id, file, patch, opts),
  );
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  inFlight.set(file, settled);
  void settled.then(() => {
    if (inFlight.get(file) === settled) inFlight.delete(file);
  });
  return run;
}

async function latchOnce(
  dir: string,
  id: string,
  file: string,
  patch: LatchPatch,
  opts: LatchOptions,
): Promise<{ changed: boolean; task: Task; applied: LatchPatch }> {
  const max = opts.maxExitRequests ?? EXIT_REQUESTS_CEILING;
  // nothing to change needs no lock (the common case: a reconcile pass re-latching what is there); a
  // caller's base may be old, and another writer may have removed a field since: only a fresh read says so
  const base = opts.base?.file === file ? opts.base : null;
  let first = base ?? loadForLatch(file);
  const nothing = (l: Loaded) => Object.keys(mergeLatched(l.task.raw, patch, max)).length === 0;
  if (nothing(first) && base) first = loadForLatch(file);
  if (nothing(first)) return { changed: false, task: first.task, applied: {} };

  const waitMs = opts.lockWaitMs ?? 12_000;
  // the first attempt edits what was read before the lock: the compare before the swap catches a writer that
  // changed the file meanwhile (the attempt is then retried on a fresh read, under the lock), so no second read
  if (dirname(first.target) === dirname(file)) return latchByLockFile(dir, id, file, first, patch, max, opts, waitMs);
  // a task file linked into another folder: a temp file beside what it links to, swapped under the lock file
  const release = await lockTask(dir, id, waitMs);
  try {
    for (let n = 1; n <= MAX_TRIES; n++) {
      const l = n === 1 ? first : loadForLatch(file);
      const applied = mergeLatched(l.task.raw, patch, max);
      if (Object.keys(applied).length === 0) return { changed: false, task: l.task, applied };
      const e = edit(file, l, applied);
      const swap = await swapIfUnchanged(l.target, l.bytes.buf, e.buf, {
        tmp: tempNameFor(join(dirname(l.target), `${id}.json`)),
        mode: l.bytes.mode,
        uid: l.bytes.uid,
        gid: l.bytes.gid,
        syncFirst: n <= DURABLE_FIRST_TRIES,
        beforeSwap: opts.beforeSwap && (() => opts.beforeSwap!(file)),
      });
      if (swap.swapped) return wrote(file, e, applied, swap, opts);
      await sleep(Math.random() * 2 * Math.min(n, 5));
    }
  } finally {
    await release();
  }
  throw busy(id, file);
}

/**
 * A task file in the task folder, latched as git writes its index: the lock file (`.<id>.json.lock`, created
 * exclusively) is written with the new text, fsynced, and — if the file still holds exactly the bytes the edit
 * was made from — renamed over it, which swaps the file and releases the lock in one step; then the folder is
 * fsynced. One file created a latch (a lock file beside a temp file would be two). An attempt whose compare fails
 * is made again from a fresh read, in the same lock file, still held: a cooperating writer waits meanwhile.
 */
async function latchByLockFile(
  dir: string,
  id: string,
  file: string,
  first: Loaded,
  patch: LatchPatch,
  max: number,
  opts: LatchOptions,
  waitMs: number,
) {
  // created with the task's own mode (the umask permitting: then no chmod, and no event for the watcher to read)
  const held = await lockTaskFile(dir, id, waitMs, first.bytes.mode & 0o777, opts.onLockWait);
  let swapped = false;
  try {
    for (let n = 1; n <= MAX_TRIES; n++) {
      const l = n === 1 ? first : loadForLatch(file);
      if (dirname(l.target) !== dirname(file))
        throw new TaskBusyError(`task file ${file} turned into a link meanwhile; trying again later`, file);
      const applied = mergeLatched(l.task.raw, patch, max);
      if (Object.keys(applied).length === 0) return { changed: false, task: l.task, applied };
      const e = edit(file, l, applied);
      if (n > 1) fs.ftruncateSync(held.fd, 0);
      writeAllAtSync(held.fd, e.buf, 0);
      fitOwnership(held.fd, l.bytes, held);
      held.mode = l.bytes.mode;
      held.uid = l.bytes.uid;
      held.gid = l.bytes.gid;
      // the first tries fsync before the rename; later ones after it (see DURABLE_FIRST_TRIES)
      const durableFirst = n <= DURABLE_FIRST_TRIES;
      if (durableFirst) await fsyncAsync(held.fd);
      const { mtimeMs, dev, ino, size } = fs.fstatSync(held.fd);
      await opts.beforeSwap?.(file);
      // compare, then swap at once (the old version's inode freed on the thread pool, not on this thread)
      const renamed = renameIfStill(l.target, l.bytes.buf, () => renameLockFile(held, l.target));
      if (renamed === null) {
        await sleep(Math.random() * 2 * Math.min(n, 5));
        continue;
      }
      if (!renamed) throw new TaskBusyError(`task file ${file}: its lock was broken as stale while held; trying again later`, file);
      swapped = true;
      if (!durableFirst) await fsyncAsync(held.fd);
      await syncDirAfter(dirname(l.target));
      return wrote(file, e, applied, { mtimeMs, dev, ino, size }, opts);
    }
  } finally {
    if (swapped) fs.closeSync(held.fd);
    else dropLockFile(held);
  }
  throw busy(id, file);
}

function wrote(file: string, e: { text: string; task: Task }, applied: LatchPatch, st: WrittenStat, opts: LatchOptions) {
  opts.onWrite?.(file, e.text, st);
  return { changed: true, task: withMtime(e.task, st.mtimeMs), applied };
}

const busy = (id: string, file: string) =>
  new TaskBusyError(`could not latch task ${id}: ${file} changed under every one of ${MAX_TRIES} attempts`, file);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
