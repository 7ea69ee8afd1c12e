// Reading task files: the whole folder for a sweep (readTasks, with its stat-keyed cache), one task by
// id, one file for the watcher. Each file is read once, synchronously, and judged (task-file.ts).
import * as fs from 'node:fs';
import { basename, join } from 'node:path';
import { READ_FLAGS } from '../store/atomic-file.js';
import { judge, MAX_SEARCH_BYTES, preview, validateTaskId, type FileBytes, type InvalidTask, type Judged, type Task } from './task-file.js';

/** `missing`: the folder does not exist (no tasks — DESIGN §3 — but worth a word: a typo in tasksDir looks the same). */
export type ReadTasksResult = { ok: true; tasks: Task[]; invalid: InvalidTask[]; missing?: true } | { ok: false; error: string };

// ---------------------------------------------------------------------------------------------
// reading one file

/** A file's bytes and the fstat they were read under (O_NONBLOCK: a FIFO named like a task must not hang); 'not-file' for anything but a regular file. */
export function readFileBytesSync(file: string): FileBytes | 'not-file' {
  const fd = fs.openSync(file, READ_FLAGS);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return 'not-file';
    const meta = { mtimeMs: st.mtimeMs, mode: st.mode, uid: st.uid, gid: st.gid, dev: st.dev, ino: st.ino, ctimeMs: st.ctimeMs };
    if (st.size > MAX_SEARCH_BYTES) return { buf: null, size: st.size, ...meta };
    // room for one byte more than fstat said: a short read is the end of a regular file, and a
    // full one means it grew since, so read on
    let buf = Buffer.allocUnsafe(st.size + 1);
    let len = 0;
    for (;;) {
      const room = buf.length - len;
      const n = fs.readSync(fd, buf, len, room, null);
      len += n;
      if (n < room) break;
      if (len > MAX_SEARCH_BYTES) return { buf: null, size: len, ...meta };
      const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, MAX_SEARCH_BYTES + 1));
      buf.copy(bigger, 0, 0, len);
      buf = bigger;
    }
    return { buf: buf.subarray(0, len), size: len, ...meta };
  } finally {
    fs.closeSync(fd);
  }
}

function statOrNull(file: string): fs.Stats | null {
  try {
    return fs.statSync(file, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null; // unreadable now: read it, and report what the read says
  }
}

export function errCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/** The errors that mean the file is not there (no task, rather than an unreadable one). */
export const GONE = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EISDIR']);

export function unreadable(file: string, e: unknown): Judged {
  return {
    kind: 'invalid',
    invalid: {
      file,
      name: basename(file),
      problem: `unreadable: ${(e as Error)?.message ?? String(e)}`,
      parsed: false,
      sessionIds: [],
      text: null,
    },
  };
}

function readOne(file: string): Judged | 'missing' {
  return readOneKeyed(file).judged;
}

/** readOne, and the stat the bytes were read under (for readTasks' cache). */
function readOneKeyed(file: string): { judged: Judged | 'missing'; key?: StatKey } {
  let bytes: FileBytes | 'not-file';
  try {
    bytes = readFileBytesSync(file);
  } catch (e) {
    if (GONE.has(errCode(e) ?? '')) return { judged: 'missing' };
    return { judged: unreadable(file, e) };
  }
  if (bytes === 'not-file') return { judged: 'missing' };
  const key =
    bytes.ino === undefined
      ? undefined
      : { dev: bytes.dev!, ino: bytes.ino, size: bytes.size, mtimeMs: bytes.mtimeMs, ctimeMs: bytes.ctimeMs! };
  return { judged: judge(file, bytes), key };
}

// ---------------------------------------------------------------------------------------------
// readTasks' cache: a sweep re-reads only the files that changed
//
// A valid task file is kept, judged, under the stat it was read with — (dev, ino, size, mtime, ctime) —
// and served again while a stat of its path gives exactly that. A rewrite by rename is a new inode; an
// in-place write moves ctime (which no one can set back) and mtime. The one way a change keeps all five
// is a write within the file system's timestamp granularity of the read (the "racy timestamp" of git's
// index): so a file is kept only once its ctime and mtime are TASK_CACHE_SETTLE_MS old when it is read,
// and any later write stamps a newer ctime. A file that changed more recently is read every time.
// Invalid and unreadable files are never kept: they are read, and reported, on every sweep.

/** A file whose ctime or mtime is younger than this when read is not kept: it is read again next sweep. */
export const TASK_CACHE_SETTLE_MS = 2000;

/** Was a file whose stat is st settled when it was read at `before`: both its times at least settleMs old? (The cache rule above; Claude Code's files and the transcripts' listings are kept by it too.) */
export function settledAt(before: number, st: { mtimeMs: number; ctimeMs: number }, settleMs = TASK_CACHE_SETTLE_MS): boolean {
  return before - Math.max(st.ctimeMs, st.mtimeMs) >= settleMs;
}

export interface StatKey {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

interface CachedTask {
  key: StatKey;
  task: Task;
  /** The pass that last saw it kept (readTasks drops what its pass did not). */
  pass: number;
}

/**
 * A task readTasks gives (kept or freshly read) has an empty `raw`: everything sunset reads of a task is in its
 * own fields (its state, sessions, latches and the times that order and date it). A file's prose (notes,
 * titles, a Driver's own fields) is most of its bytes, and 10,000 tasks kept whole held ~20 MB of a resting
 * sunset. Whoever writes reads the file again (the latch); whoever wants the whole file reads it (readTask).
 */
const KEPT_RAW: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

function lean(task: Task): Task {
  return { ...task, raw: KEPT_RAW };
}

/** Per tasks folder, per file name: the last sweep's kept files (only those it saw: a gone file's entry goes). */
const taskCache = new Map<string, Map<string, CachedTask>>();
/** Numbers readTasks' passes (CachedTask.pass). */
let passes = 0;
/** A process reads one tasks folder (tests, a few): the least recently swept beyond this are dropped. */
const MAX_CACHED_DIRS = 4;

export function sameKey(k: StatKey, st: fs.Stats): boolean {
  return st.ino === k.ino && st.dev === k.dev && st.size === k.size && st.mtimeMs === k.mtimeMs && st.ctimeMs === k.ctimeMs;
}

/** Forget every kept task file (tests; a caller that wants a sweep to read everything again). */
export function clearTaskCache(): void {
  taskCache.clear();
}

export interface ReadTasksOptions {
  /** @see TASK_CACHE_SETTLE_MS (tests lower it). Infinity: keep nothing. @defaultValue TASK_CACHE_SETTLE_MS */
  settleMs?: number;
}

// Files are read with plain synchronous calls in batches, yielding to the event loop between
// batches: on small files that is several times faster than the thread pool (10,000 files:
// ~0.2 s against ~0.8 s for 64 concurrent async reads here), and a batch blocks for a few ms.
const READ_BATCH = 128;

/**
 * Every task in the folder: `*.json` files not starting with "." (subdirectories and anything
 * else ignored). A missing folder is no tasks; an unreadable one is `ok: false`.
 */
export async function readTasks(dir: string, opts: ReadTasksOptions = {}): Promise<ReadTasksResult> {
  const settleMs = opts.settleMs ?? TASK_CACHE_SETTLE_MS;
  let names: string[];
  try {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true });
    names = entries
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.json') && !e.name.startsWith('.'))
      .map((e) => e.name)
      .sort();
  } catch (e) {
    taskCache.delete(dir);
    if (errCode(e) === 'ENOENT') return { ok: true, tasks: [], invalid: [], missing: true };
    return { ok: false, error: `cannot read the tasks folder ${dir}: ${(e as Error).message}` };
  }
  // the folder's entries are updated in place, not rebuilt: a new 10,000-entry map a pass (and a list of every
  // file's result) lived through the pass and was promoted to the old generation, to be freed only by a full GC
  const kept = taskCache.get(dir) ?? new Map<string, CachedTask>();
  const pass = ++passes;
  // join(dir, name) without normalizing dir 10,000 times: a listed name is one plain segment, so this is exact
  const prefix = join(dir, 'x').slice(0, -1);
  const tasks: Task[] = [];
  const invalid: InvalidTask[] = [];
  for (let i = 0; i < names.length; i++) {
    if (i > 0 && i % READ_BATCH === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const name = names[i];
    const file = prefix + name;
    const hit = kept.get(name);
    if (hit) {
      // follows a symlink, as the read does: a link pointed elsewhere is another inode
      const st = statOrNull(file);
      if (st?.isFile() && sameKey(hit.key, st)) {
        hit.pass = pass;
        tasks.push(hit.task);
        continue;
      }
    }
    const before = Date.now(); // taken before the read's fstat: "settled" errs towards reading again
    const { judged, key } = readOneKeyed(file);
    if (judged === 'missing' || judged.kind !== 'task') {
      if (judged !== 'missing') invalid.push(judged.invalid);
      continue;
    }
    // lean at once: a folder's parsed files are never alive together (10,000 of them grew the heap by ~30 MB)
    const task = lean(judged.task);
    tasks.push(task);
    if (key && settledAt(before, key, settleMs)) kept.set(name, { key, task, pass });
  }
  // only what this pass saw kept (a deleted file's entry goes with it, and one read anew but not settled); an
  // entry a pass running beside this one kept later stays: each entry is a file's stat and what it then held
  for (const [name, e] of kept) if (e.pass < pass) kept.delete(name);
  // the most recent folder last
  taskCache.delete(dir);
  if (kept.size) taskCache.set(dir, kept);
  while (taskCache.size > MAX_CACHED_DIRS) taskCache.delete(taskCache.keys().next().value!);
  return { ok: true, tasks, invalid };
}

/** What reading one task file found. */
export type TaskRead = { kind: 'task'; task: Task } | { kind: 'invalid'; invalid: InvalidTask } | { kind: 'missing' };

// ---------------------------------------------------------------------------------------------
// the watcher's reads, handed to the release job that follows in this process

/** How long a watcher's read of a terminal task is kept for the chain job that follows it, and how many. */
const RECENT_MS = 30_000;
const MAX_RECENT = 4096;

export interface RecentRead {
  bytes: FileBytes & { buf: Buffer };
  task: Task;
  text: string;
}

const recent = new Map<string, RecentRead & { at: number }>();
let recentTimer: NodeJS.Timeout | null = null;

function remember(file: string, r: RecentRead) {
  const now = Date.now();
  recent.delete(file);
  recent.set(file, { ...r, at: now });
  for (const [f, e] of recent) {
    if (now - e.at <= RECENT_MS && recent.size <= MAX_RECENT) break;
    recent.delete(f);
  }
  // at rest nothing is kept
  if (recentTimer) clearTimeout(recentTimer);
  recentTimer = setTimeout(() => recent.clear(), RECENT_MS);
  recentTimer.unref();
}

/**
 * The watcher's read of this file, once (it is forgotten here), when a stat of the file taken now still gives
 * exactly what that read's fstat gave (the same inode, size, mtime and ctime): the release job that follows reads
 * nothing again. Null otherwise. What is written is still compared byte for byte first (the latch's swap).
 */
export function takeRecentRead(file: string, st: fs.Stats): RecentRead | null {
  const r = recent.get(file);
  if (!r) return null;
  recent.delete(file);
  const b = r.bytes;
  if (
    Date.now() - r.at > RECENT_MS ||
    b.ino === undefined ||
    !sameKey({ dev: b.dev!, ino: b.ino, size: b.size, mtimeMs: b.mtimeMs, ctimeMs: b.ctimeMs! }, st)
  )
    return null;
  return r;
}

/**
 * One task file read once, for the watcher: its text (to recognise sunset's own writes) and what it holds.
 * null when it is gone, not a regular file, or unreadable; text null when it is past MAX_SEARCH_BYTES (never
 * one of sunset's own writes). `own`: 'own' when its bytes are one of sunset's own writes (not judged: the
 * watcher ignores them). A terminal task read here is kept a moment for its release job (takeRecentRead).
 * A plain synchronous read, as readTasks does: cheaper than the thread pool.
 */
export function readTaskFile(file: string, own?: (bytes: Buffer) => boolean): { text: string | null; read: TaskRead } | 'own' | null {
  let bytes: FileBytes | 'not-file';
  try {
    bytes = readFileBytesSync(file);
  } catch {
    return null;
  }
  if (bytes === 'not-file') return null;
  if (own && bytes.buf && own(bytes.buf)) return 'own';
  const judged = judge(file, bytes);
  if (judged.kind === 'task' && judged.task.terminal && bytes.buf)
    remember(file, { bytes: bytes as RecentRead['bytes'], task: judged.task, text: judged.text });
  const text = judged.kind === 'task' ? judged.text : bytes.buf ? bytes.buf.toString('utf8') : null;
  return { text, read: judged.kind === 'task' ? { kind: 'task', task: judged.task } : judged };
}

/** What reading a task by an id that could not name a task file gives (readTask, readForLatch). */
export function badIdRead(id: string, bad: string): { kind: 'invalid'; invalid: InvalidTask } {
  const name = `${String(id)}.json`;
  return { kind: 'invalid', invalid: { file: name, name, problem: `${bad} (${preview(id)})`, parsed: false, sessionIds: [], text: null } };
}

/** One task by id. An id that could not name a task file is reported as invalid. */
export async function readTask(dir: string, id: string): Promise<TaskRead> {
  const bad = validateTaskId(id);
  if (bad) return badIdRead(id, bad);
  const r = readOne(join(dir, `${id}.json`));
  if (r === 'missing') return { kind: 'missing' };
  if (r.kind === 'task') return { kind: 'task', task: r.task };
  return r;
}
