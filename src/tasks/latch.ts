// The latch (D8): sunset's own fields written into a task file without damaging anything another program
// wrote — a textual edit (json-edit.ts), under the cooperative lock (whose lock file holds the new text, as git's
// index.lock does), swapped in by compare-and-swap, re-read, re-merged and retried when another writer got there
// first.
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fitOwnership, fsyncAsync, renameIfStill, swapIfUnchanged, syncDirAfter, tempNameFor, writeAllAtSync } from '../store/atomic-file.js';
import { acquireLock, acquireLockFile, dropLockFile, LOCK_STALE_MS as ATOMIC_LOCK_STALE_MS, LockBusyError, renameLockFile, type HeldLockFile } from '../store/file-lock.js';
import { setTopLevelMembers } from './json-edit.js';
import { badIdRead, errCode, GONE, readFileBytesSync, takeRecentRead, unreadable } from './read-tasks.js';
import {
  EXIT_REQUESTS_CEILING,
  isIsoTime,
  judge,
  preview,
  SET_ONCE,
  TaskBusyError,
  TaskInvalidError,
  TIME_RULE,
  validateTaskId,
  type FileBytes,
  type InvalidTask,
  type Judged,
  type LatchedField,
  type Task,
  withMtime,
} from './task-file.js';

export interface LatchPatch {
  releasedAt?: string;
  exitAskedAt?: string;
  exitRequests?: number;
  exitRequestedAt?: string;
  exitedAt?: string;
  exitGaveUpAt?: string;
}


/**
 * Pure: which of the patch's fields would change the file. Set-once fields are taken only when
 * absent; exitRequests only grows, capped at max, and exitRequestedAt moves only with it.
 */
export function mergeLatched(current: Partial<Record<LatchedField, unknown>>, patch: LatchPatch, max: number): LatchPatch {
  const out: LatchPatch = {};
  for (const k of SET_ONCE) {
    const v = patch[k];
    if (v !== undefined && (current[k] === undefined || current[k] === null)) out[k] = v;
  }
  if (patch.exitRequests !== undefined) {
    const cap = Math.max(0, Math.min(Math.floor(max), EXIT_REQUESTS_CEILING));
    const cur = typeof current.exitRequests === 'number' ? current.exitRequests : 0;
    const next = Math.min(patch.exitRequests, cap);
    if (next > cur) {
      out.exitRequests = next;
      if (patch.exitRequestedAt !== undefined) out.exitRequestedAt = patch.exitRequestedAt;
    }
  }
  return out;
}

function checkPatch(patch: LatchPatch): void {
  for (const k of [...SET_ONCE, 'exitRequestedAt'] as const) {
    const v = patch[k];
    if (v !== undefined && !isIsoTime(v)) throw new TypeError(`latch ${k}: ${TIME_RULE} (got ${preview(v)})`);
  }
  const n = patch.exitRequests;
  if (n !== undefined && !(Number.isInteger(n) && n >= 0)) throw new TypeError(`latch exitRequests: must be a whole number (got ${preview(n)})`);
}

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
/** A lock file older than this was left by a writer that died holding it. */
export const LOCK_STALE_MS = ATOMIC_LOCK_STALE_MS;

/** The cooperative lock beside a task file: `.<id>.json.lock`, created exclusively, removed after. */
export function lockFileFor(dir: string, id: string): string {
  return join(dir, `.${id}.json.lock`);
}

/** Takes the task's lock file, waiting for another holder; one older than LOCK_STALE_MS is broken. Resolves with its release. */
async function lockTask(dir: string, id: string, waitMs: number): Promise<() => Promise<void>> {
  const owner = () => JSON.stringify({ by: 'sunset', pid: process.pid, host: hostname(), at: new Date().toISOString() });
  return busyIfLocked(() => acquireLock(lockFileFor(dir, id), waitMs, { owner, staleMs: LOCK_STALE_MS }));
}

/** The same lock, taken as a lock file that will hold the task's next version (latchByLockFile). */
function lockTaskFile(dir: string, id: string, waitMs: number, mode: number, onWait?: () => void): Promise<HeldLockFile> {
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

interface Loaded {
  /** The task file's path, as the latch names it. */
  file: string;
  /** Where the bytes live: the file itself, or what it links to. */
  target: string;
  bytes: FileBytes & { buf: Buffer };
  task: Task;
  text: string;
}

function load(file: string): Loaded {
  let target: string;
  let bytes: FileBytes | 'not-file';
  try {
    // a symlinked task file is rewritten where it points, so the link stays a link (one lstat tells; realpath(3)
    // reads every component of the path, and the latch's hot path rarely meets a link)
    target = fs.lstatSync(file).isSymbolicLink() ? fs.realpathSync.native(file) : file;
    bytes = readFileBytesSync(target);
  } catch (e) {
    if (GONE.has(errCode(e) ?? '')) throw new TaskInvalidError(`task file ${file} is gone`, file);
    const u = unreadable(file, e) as { invalid: InvalidTask };
    throw new TaskInvalidError(`task file ${file} is ${u.invalid.problem}`, file, u.invalid);
  }
  if (bytes === 'not-file') throw new TaskInvalidError(`task file ${file} is not a regular file`, file);
  const judged = judge(file, bytes);
  if (judged.kind === 'invalid') throw new TaskInvalidError(`task file ${file} is invalid: ${judged.invalid.problem}`, file, judged.invalid);
  return { file, target, bytes: bytes as Loaded['bytes'], task: judged.task, text: judged.text };
}

/** A task file as read for a later latch (LatchOptions.base): opaque to its holder. */
export type LatchBase = Loaded;

/**
 * One task by id, read as readTask reads it, with the bytes a latch can start from (a chain job reads its task,
 * then latches: one read, not two). Missing: gone, or not a regular file; invalid: what is wrong with it.
 */
export function readForLatch(dir: string, id: string): { kind: 'task'; task: Task; base: LatchBase } | { kind: 'invalid'; invalid: InvalidTask } | { kind: 'missing' } {
  const bad = validateTaskId(id);
  const file = join(dir, `${id}.json`);
  if (bad) return badIdRead(id, bad);
  let target = file;
  let bytes: FileBytes | 'not-file';
  try {
    // one lstat: a plain file is its own target (a symlink's is found by realpath), and the watcher may just have read it
    const l = fs.lstatSync(file);
    if (l.isSymbolicLink()) target = fs.realpathSync.native(file);
    else if (!l.isFile()) return { kind: 'missing' };
    else {
      const seen = takeRecentRead(file, l);
      if (seen) return { kind: 'task', task: seen.task, base: { file, target, bytes: seen.bytes, task: seen.task, text: seen.text } };
    }
    bytes = readFileBytesSync(target);
  } catch (e) {
    if (GONE.has(errCode(e) ?? '')) return { kind: 'missing' };
    return unreadable(file, e) as { kind: 'invalid'; invalid: InvalidTask };
  }
  if (bytes === 'not-file') return { kind: 'missing' };
  const judged = judge(file, bytes);
  if (judged.kind === 'invalid') return judged;
  // a judged task had its bytes read (an oversize file is invalid)
  return { kind: 'task', task: judged.task, base: { file, target, bytes: bytes as Loaded['bytes'], task: judged.task, text: judged.text } };
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
  let first = base ?? load(file);
  const nothing = (l: Loaded) => Object.keys(mergeLatched(l.task.raw, patch, max)).length === 0;
  if (nothing(first) && base) first = load(file);
  if (nothing(first)) return { changed: false, task: first.task, applied: {} };

  const waitMs = opts.lockWaitMs ?? 12_000;
  // the first attempt edits what was read before the lock: the compare before the swap catches a writer that
  // changed the file meanwhile (the attempt is then retried on a fresh read, under the lock), so no second read
  if (dirname(first.target) === dirname(file)) return latchByLockFile(dir, id, file, first, patch, max, opts, waitMs);
  // a task file linked into another folder: a temp file beside what it links to, swapped under the lock file
  const release = await lockTask(dir, id, waitMs);
  try {
    for (let n = 1; n <= MAX_TRIES; n++) {
      const l = n === 1 ? first : load(file);
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
async function latchByLockFile(dir: string, id: string, file: string, first: Loaded, patch: LatchPatch, max: number, opts: LatchOptions, waitMs: number) {
  // created with the task's own mode (the umask permitting: then no chmod, and no event for the watcher to read)
  const held = await lockTaskFile(dir, id, waitMs, first.bytes.mode & 0o777, opts.onLockWait);
  let swapped = false;
  try {
    for (let n = 1; n <= MAX_TRIES; n++) {
      const l = n === 1 ? first : load(file);
      if (dirname(l.target) !== dirname(file)) throw new TaskBusyError(`task file ${file} turned into a link meanwhile; trying again later`, file);
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

/** The new text of a task file: the patch's fields set in the old text, everything else byte for byte; checked. */
function edit(file: string, l: Loaded, applied: LatchPatch): { text: string; buf: Buffer; task: Task } {
  const text = setTopLevelMembers(l.text, applied as Record<string, unknown>);
  const buf = Buffer.from(text, 'utf8');
  return { text, buf, task: assertSameApartFrom(l.task.raw, judge(file, { ...l.bytes, buf, size: buf.length }), applied) };
}

function wrote(file: string, e: { text: string; task: Task }, applied: LatchPatch, st: WrittenStat, opts: LatchOptions) {
  opts.onWrite?.(file, e.text, st);
  return { changed: true, task: withMtime(e.task, st.mtimeMs), applied };
}

const busy = (id: string, file: string) => new TaskBusyError(`could not latch task ${id}: ${file} changed under every one of ${MAX_TRIES} attempts`, file);

/** A guard against a bug in the text edit: the new text must be the old object plus the patch, and still a valid task (returned). */
function assertSameApartFrom(before: Record<string, unknown>, after: Judged, applied: LatchPatch): Task {
  if (after.kind !== 'task') throw new Error(`refusing to write: the edited task would be invalid (${after.invalid.problem})`);
  const a = after.task.raw;
  const keys = new Set([...Object.keys(before), ...Object.keys(applied)]);
  if (Object.keys(a).length !== keys.size) throw new Error('refusing to write: the edit changed the set of fields');
  for (const k of keys) {
    const want = Object.hasOwn(applied, k) ? (applied as Record<string, unknown>)[k] : before[k];
    if (JSON.stringify(a[k]) !== JSON.stringify(want)) throw new Error(`refusing to write: the edit changed field ${k}`);
  }
  return after.task;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
