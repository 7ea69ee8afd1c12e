// The task store: reads task files loosely, and latches sunset's own fields into them without
// damaging anything another program wrote (a textual edit, atomic rename, compare-and-swap).
import type { TaskFacts } from '../doctrine/verdict.js';
import * as fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { setTopLevelMembers } from './json-edit.js';

export const TERMINAL_STATES: readonly string[] = Object.freeze(['done', 'abandoned', 'parked']);

export function isTerminal(state: string): boolean {
  return TERMINAL_STATES.includes(state);
}

/** A task file larger than this is invalid: reported, never parsed as a task, never written. */
export const MAX_TASK_BYTES = 1024 * 1024;
/** An invalid file up to this size is still read, so its bytes can be searched for session ids. */
export const MAX_SEARCH_BYTES = 64 * 1024 * 1024;
/** The most exit requests a task file may record (the schema's bound; config may lower it). */
export const EXIT_REQUESTS_CEILING = 3;

export type LatchedField = 'releasedAt' | 'exitAskedAt' | 'exitRequestedAt' | 'exitRequests' | 'exitedAt' | 'exitGaveUpAt';
export const LATCHED_FIELDS: readonly LatchedField[] = Object.freeze([
  'releasedAt',
  'exitAskedAt',
  'exitRequestedAt',
  'exitRequests',
  'exitedAt',
  'exitGaveUpAt',
]);
/** The fields that are set once and then never changed or cleared. */
const SET_ONCE = ['releasedAt', 'exitAskedAt', 'exitedAt', 'exitGaveUpAt'] as const;
const SESSION_ID_FIELDS = ['sessionId', 'driverSessionId', 'operatorSessionId'] as const;

/** A task file as sunset reads it: the verdict's TaskFacts (id, state, the latched steps; exitRequests 0 when absent) and more. */
export interface Task extends TaskFacts {
  /** sessionId, else driverSessionId, else operatorSessionId (the older name). */
  sessionId: string | null;
  watcher: string | number | null;
  stateChangedAt?: string;
  awaitingHumanSince?: string;
  /** Epoch ms that orders a session's terminal tasks: the first parseable of stateChangedAt, completedAt, updatedAt, releasedAt, createdAt; else the file's mtime. */
  orderKey: number;
  file: string;
  mtimeMs: number;
  /** The whole parsed object, unknown fields included. */
  raw: Record<string, unknown>;
}

export interface InvalidTask {
  file: string;
  /** The file's name. */
  name: string;
  /** A sentence saying what is wrong. */
  problem: string;
  /** Whether the bytes parsed as JSON. */
  parsed: boolean;
  /** When it parsed: every string under a top-level sessionId / driverSessionId / operatorSessionId / id key. */
  sessionIds: string[];
  /** When it did not parse or is oversize: its bytes as text, for substring search (null past 64 MB or when unreadable). */
  text: string | null;
}

/** `missing`: the folder does not exist (no tasks — DESIGN §3 — but worth a word: a typo in tasksDir looks the same). */
export type ReadTasksResult = { ok: true; tasks: Task[]; invalid: InvalidTask[]; missing?: true } | { ok: false; error: string };

export interface LatchPatch {
  releasedAt?: string;
  exitAskedAt?: string;
  exitRequests?: number;
  exitRequestedAt?: string;
  exitedAt?: string;
  exitGaveUpAt?: string;
}

/** The task file is invalid, or has gone: it was not written (and retrying will not help until someone fixes it). */
export class TaskInvalidError extends Error {
  override name = 'TaskInvalidError';
  constructor(
    message: string,
    readonly file: string = '',
    readonly invalid?: InvalidTask,
  ) {
    super(message);
  }
}

/** The task file was held by another writer's lock, or kept changing, for too long: nothing was written; try again later. */
export class TaskBusyError extends Error {
  override name = 'TaskBusyError';
  constructor(
    message: string,
    readonly file: string = '',
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// the schema

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** An ISO-8601 date or date-time that Date.parse understands. */
export function isIsoTime(value: unknown): value is string {
  return typeof value === 'string' && ISO_DATE_TIME.test(value) && Number.isFinite(Date.parse(value));
}

const isoTime = z.string().refine((s) => isIsoTime(s));
const sessionRef = z.string().nullish();

/** Loose: unknown keys are allowed and kept. null reads as absent for the optional fields. */
export const taskFileSchema = z.looseObject({
  id: z.string(),
  state: z.string(),
  sessionId: sessionRef,
  driverSessionId: sessionRef,
  operatorSessionId: sessionRef,
  watcher: z.union([z.string(), z.number()]).nullish(),
  releasedAt: isoTime.nullish(),
  exitAskedAt: isoTime.nullish(),
  exitRequestedAt: isoTime.nullish(),
  exitedAt: isoTime.nullish(),
  exitGaveUpAt: isoTime.nullish(),
  exitRequests: z.number().int().min(0).max(EXIT_REQUESTS_CEILING).nullish(),
});
export type TaskFile = z.output<typeof taskFileSchema>;

const TIME_FIELDS = ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt', 'exitGaveUpAt'] as const;

/** Exactly taskFileSchema's verdict, by hand, for the common case (a test holds the two together). */
export function matchesTaskSchema(o: Record<string, unknown>): boolean {
  if (typeof o.id !== 'string' || typeof o.state !== 'string') return false;
  for (const k of SESSION_ID_FIELDS) {
    const v = o[k];
    if (v !== undefined && v !== null && typeof v !== 'string') return false;
  }
  const w = o.watcher;
  if (w !== undefined && w !== null && typeof w !== 'string' && !(typeof w === 'number' && Number.isFinite(w))) return false;
  for (const k of TIME_FIELDS) {
    const v = o[k];
    if (v !== undefined && v !== null && !isIsoTime(v)) return false;
  }
  const n = o.exitRequests;
  if (n !== undefined && n !== null && !(typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= EXIT_REQUESTS_CEILING)) return false;
  return true;
}

const TIME_RULE = 'must be an ISO-8601 date-time string such as "2026-09-02T10:00:00Z"';
const FIELD_RULES: Record<string, string> = {
  id: 'must be a string',
  state: 'must be a string',
  sessionId: 'must be a string or null',
  driverSessionId: 'must be a string or null',
  operatorSessionId: 'must be a string or null',
  watcher: 'must be a string, a number or null',
  releasedAt: TIME_RULE,
  exitAskedAt: TIME_RULE,
  exitRequestedAt: TIME_RULE,
  exitedAt: TIME_RULE,
  exitGaveUpAt: TIME_RULE,
  exitRequests: `must be an integer from 0 to ${EXIT_REQUESTS_CEILING}`,
};

function preview(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Null when the id is fine; else what is wrong with it, as a sentence starting "id". */
export function validateTaskId(id: string): string | null {
  if (typeof id !== 'string' || id.length === 0) return 'id is empty';
  if (id.includes('/') || id.includes('\\')) return 'id has a path separator';
  if (id.includes('..')) return 'id contains ".."';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) return 'id has control characters';
  if (id.startsWith('.')) return 'id starts with "."';
  // room for `.<id>.json.lock` within a 255-byte file name
  if (Buffer.byteLength(id) > 240) return 'id is longer than 240 bytes';
  return null;
}

// ---------------------------------------------------------------------------------------------
// judging one file's bytes

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

interface FileBytes {
  /** The bytes read: the whole file, or null when it is past MAX_SEARCH_BYTES. */
  buf: Buffer | null;
  size: number;
  mtimeMs: number;
  mode: number;
  uid: number;
  gid: number;
  /** What readTasks' cache keys a file by (from the same fstat as the rest). */
  dev?: number;
  ino?: number;
  ctimeMs?: number;
}

type Judged = { kind: 'task'; task: Task; text: string } | { kind: 'invalid'; invalid: InvalidTask };

function collectSessionIds(value: unknown): string[] {
  const out = new Set<string>();
  const fromObject = (o: unknown): void => {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return;
    for (const key of [...SESSION_ID_FIELDS, 'id']) {
      const v = (o as Record<string, unknown>)[key];
      if (typeof v === 'string') out.add(v);
      else if (Array.isArray(v)) for (const e of v) if (typeof e === 'string') out.add(e);
    }
  };
  if (Array.isArray(value)) value.forEach(fromObject);
  else fromObject(value);
  return [...out];
}

function judge(file: string, bytes: FileBytes): Judged {
  const name = basename(file);
  const invalid = (problem: string, parsed: boolean, sessionIds: string[], text: string | null): Judged => ({
    kind: 'invalid',
    invalid: { file, name, problem, parsed, sessionIds, text },
  });
  const lossy = (): string | null => (bytes.buf ? bytes.buf.toString('utf8') : null);

  if (bytes.size > MAX_TASK_BYTES || bytes.buf === null || bytes.buf.length > MAX_TASK_BYTES) {
    const size = Math.max(bytes.size, bytes.buf?.length ?? 0);
    const tail = bytes.buf === null ? `; past ${MAX_SEARCH_BYTES / 1024 / 1024} MB it is not searched for session ids either` : '';
    return invalid(`over 1 MB (${size} bytes)${tail}`, false, [], lossy());
  }
  let text: string;
  try {
    text = utf8.decode(bytes.buf);
  } catch {
    return invalid('not valid UTF-8 text', false, [], lossy());
  }
  let data: unknown;
  try {
    data = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (e) {
    return invalid(`not valid JSON: ${(e as Error).message}`, false, [], text);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    const what = Array.isArray(data) ? 'an array' : data === null ? 'null' : `a ${typeof data}`;
    return invalid(`not a JSON object (it is ${what})`, true, collectSessionIds(data), null);
  }
  const raw = data as Record<string, unknown>;
  // the hand check is the hot path (zod costs several times more, and far more while it warms
  // up in a fresh process); zod still decides every file the hand check doubts, and words the problem
  const r = matchesTaskSchema(raw) ? ({ success: true, data: raw as TaskFile } as const) : taskFileSchema.safeParse(raw);
  if (!r.success) {
    const keys = [...new Set(r.error.issues.map((i) => String(i.path[0] ?? '')))];
    const problem = keys
      .map((k) => {
        const rule = FIELD_RULES[k] ?? 'is not valid';
        return Object.hasOwn(raw, k) ? `field ${k}: ${rule} (found ${preview(raw[k])})` : `field ${k}: missing (it ${rule})`;
      })
      .join('; ');
    return invalid(problem, true, collectSessionIds(raw), null);
  }
  const d = r.data;
  const idProblem = validateTaskId(d.id);
  if (idProblem) return invalid(`${idProblem} (${preview(d.id)})`, true, collectSessionIds(raw), null);
  const stem = name.endsWith('.json') ? name.slice(0, -'.json'.length) : name;
  if (d.id !== stem) return invalid(`id ${preview(d.id)} is not its file name ${preview(stem)}`, true, collectSessionIds(raw), null);

  const task: Task = {
    id: d.id,
    state: d.state,
    terminal: isTerminal(d.state),
    sessionId: [d.sessionId, d.driverSessionId, d.operatorSessionId].find((s): s is string => typeof s === 'string' && s !== '') ?? null,
    watcher: d.watcher ?? null,
    exitRequests: d.exitRequests ?? 0,
    orderKey: bytes.mtimeMs,
    file,
    mtimeMs: bytes.mtimeMs,
    raw,
  };
  for (const k of TIME_FIELDS) {
    const v = d[k];
    if (typeof v === 'string') task[k] = v;
  }
  if (typeof raw.stateChangedAt === 'string') task.stateChangedAt = raw.stateChangedAt;
  if (typeof raw.awaitingHumanSince === 'string') task.awaitingHumanSince = raw.awaitingHumanSince;
  for (const k of ['stateChangedAt', 'completedAt', 'updatedAt', 'releasedAt', 'createdAt']) {
    const v = raw[k];
    const ms = typeof v === 'string' ? Date.parse(v) : NaN;
    if (Number.isFinite(ms)) {
      task.orderKey = ms;
      break;
    }
  }
  return { kind: 'task', task, text };
}

// ---------------------------------------------------------------------------------------------
// reading

// O_NONBLOCK: a FIFO named like a task must not hang a thread in open()
const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

function readFileBytesSync(file: string): FileBytes | 'not-file' {
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

function errCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

const GONE = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EISDIR']);

function unreadable(file: string, e: unknown): Judged {
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
  const key = bytes.ino === undefined ? undefined : { dev: bytes.dev!, ino: bytes.ino, size: bytes.size, mtimeMs: bytes.mtimeMs, ctimeMs: bytes.ctimeMs! };
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

interface StatKey {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

interface CachedTask {
  key: StatKey;
  task: Task;
}

/** Per tasks folder, per file name: the last sweep's kept files (only those it saw: a gone file's entry goes). */
const taskCache = new Map<string, Map<string, CachedTask>>();
/** A process reads one tasks folder (tests, a few): the least recently swept beyond this are dropped. */
const MAX_CACHED_DIRS = 4;

function sameKey(k: StatKey, st: fs.Stats): boolean {
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
  const prev = taskCache.get(dir);
  const kept = new Map<string, CachedTask>();
  const results: (Judged | 'missing')[] = new Array(names.length);
  for (let i = 0; i < names.length; i++) {
    if (i > 0 && i % READ_BATCH === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const name = names[i];
    const file = join(dir, name);
    const hit = prev?.get(name);
    if (hit) {
      // follows a symlink, as the read does: a link pointed elsewhere is another inode
      const st = statOrNull(file);
      if (st && st.isFile() && sameKey(hit.key, st)) {
        results[i] = { kind: 'task', task: hit.task, text: '' };
        kept.set(name, hit);
        continue;
      }
    }
    const before = Date.now(); // taken before the read's fstat: "settled" errs towards reading again
    const { judged, key } = readOneKeyed(file);
    results[i] = judged;
    if (key && judged !== 'missing' && judged.kind === 'task' && before - Math.max(key.ctimeMs, key.mtimeMs) >= settleMs) kept.set(name, { key, task: judged.task });
  }
  // only what this sweep saw, so a deleted file's entry goes with it; the most recent folder last
  taskCache.delete(dir);
  if (kept.size) taskCache.set(dir, kept);
  while (taskCache.size > MAX_CACHED_DIRS) taskCache.delete(taskCache.keys().next().value!);
  const tasks: Task[] = [];
  const invalid: InvalidTask[] = [];
  for (const r of results) {
    if (r === 'missing') continue;
    if (r.kind === 'task') tasks.push(r.task);
    else invalid.push(r.invalid);
  }
  return { ok: true, tasks, invalid };
}

/** What reading one task file found. */
export type TaskRead = { kind: 'task'; task: Task } | { kind: 'invalid'; invalid: InvalidTask } | { kind: 'missing' };

/**
 * One task file read once, for the watcher: its text (to recognise sunset's own writes) and what it holds.
 * null when it is gone, not a regular file, or unreadable; text null when it is past MAX_SEARCH_BYTES (never
 * one of sunset's own writes). A plain synchronous read, as readTasks does: cheaper than the thread pool.
 */
export function readTaskFile(file: string): { text: string | null; read: TaskRead } | null {
  let bytes: FileBytes | 'not-file';
  try {
    bytes = readFileBytesSync(file);
  } catch {
    return null;
  }
  if (bytes === 'not-file') return null;
  const judged = judge(file, bytes);
  const text = judged.kind === 'task' ? judged.text : bytes.buf ? bytes.buf.toString('utf8') : null;
  return { text, read: judged.kind === 'task' ? { kind: 'task', task: judged.task } : judged };
}

/** One task by id. An id that could not name a task file is reported as invalid. */
export async function readTask(dir: string, id: string): Promise<TaskRead> {
  const bad = validateTaskId(id);
  if (bad) {
    const name = `${String(id)}.json`;
    return { kind: 'invalid', invalid: { file: name, name, problem: `${bad} (${preview(id)})`, parsed: false, sessionIds: [], text: null } };
  }
  const r = readOne(join(dir, `${id}.json`));
  if (r === 'missing') return { kind: 'missing' };
  if (r.kind === 'task') return { kind: 'task', task: r.task };
  return r;
}

// ---------------------------------------------------------------------------------------------
// latching

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

export interface LatchOptions {
  /** The most exit requests to record. @defaultValue 3 */
  maxExitRequests?: number;
  /** Called after each successful rename (the watcher uses it to ignore its own events). */
  onWrite?: (file: string, text: string) => void;
  /** How long to wait for another writer's lock before giving up. @defaultValue 12000 */
  lockWaitMs?: number;
  /** Test seam: runs after the new text is in the temp file, just before the compare-and-swap. */
  beforeSwap?: (file: string) => void | Promise<void>;
}

const MAX_TRIES = 20;
/** The first tries fsync the new file before the rename; later ones after it, so a writer that rewrites the file faster than an fsync takes cannot starve the latch. */
const DURABLE_FIRST_TRIES = 3;
/** A lock file older than this was left by a writer that died holding it. */
export const LOCK_STALE_MS = 10_000;

/** The cooperative lock beside a task file: `.<id>.json.lock`, created exclusively, removed after. */
export function lockFileFor(dir: string, id: string): string {
  return join(dir, `.${id}.json.lock`);
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
    // a symlinked task file is rewritten where it points, so the link stays a link
    // .native: one realpath(3) call, not an lstat of every path component (the latch's hot path)
    target = fs.realpathSync.native(file);
    bytes = readFileBytesSync(target);
  } catch (e) {
    if (GONE.has(errCode(e) ?? '')) throw new TaskInvalidError(`task file ${file} is gone`, file);
    const u = unreadable(file, e) as { invalid: InvalidTask };
    throw new TaskInvalidError(`task file ${file} is ${u.invalid.problem}`, file, u.invalid);
  }
  if (bytes === 'not-file') throw new TaskInvalidError(`task file ${file} is not a regular file`, file);
  const judged = judge(file, bytes);
  if (judged.kind === 'invalid') throw new TaskInvalidError(`task file ${file} is invalid: ${judged.invalid.problem}`, file, judged.invalid);
  return { target, bytes: bytes as Loaded['bytes'], task: judged.task, text: judged.text };
}

async function latchOnce(
  dir: string,
  id: string,
  file: string,
  patch: LatchPatch,
  opts: LatchOptions,
): Promise<{ changed: boolean; task: Task; applied: LatchPatch }> {
  const max = opts.maxExitRequests ?? EXIT_REQUESTS_CEILING;
  // nothing to change needs no lock (the common case: a reconcile pass re-latching what is there)
  const first = load(file);
  if (Object.keys(mergeLatched(first.task.raw, patch, max)).length === 0) return { changed: false, task: first.task, applied: {} };

  const release = await acquireLock(lockFileFor(dir, id), opts.lockWaitMs ?? 12_000);
  try {
    for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
      // the first attempt edits what was read just before the lock: the compare below catches a writer
      // that changed the file meanwhile (the attempt is then retried on a fresh read), so no second read
      const { target, bytes, task, text } = attempt === 1 ? first : load(file);
      const applied = mergeLatched(task.raw, patch, max);
      if (Object.keys(applied).length === 0) return { changed: false, task, applied };

      const newText = setTopLevelMembers(text, applied as Record<string, unknown>);
      const newBuf = Buffer.from(newText, 'utf8');
      assertSameApartFrom(task.raw, judge(file, { ...bytes, buf: newBuf, size: newBuf.length }), applied);

      const durableFirst = attempt <= DURABLE_FIRST_TRIES;
      const tmp = join(dirname(target), tempName(id));
      let fd: number | null = await openAsync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
      let renamed = false;
      try {
        await writeAllAsync(fd, newBuf);
        fs.fchmodSync(fd, bytes.mode & 0o7777);
        if (bytes.uid !== process.getuid?.() || bytes.gid !== process.getgid?.()) {
          try {
            fs.fchownSync(fd, bytes.uid, bytes.gid);
          } catch {
            // not ours to give away: the file keeps our ownership, its mode is still the original's
          }
        }
        if (durableFirst) await fsyncAsync(fd);
        const mtimeMs = fs.fstatSync(fd).mtimeMs;
        await opts.beforeSwap?.(file);

        // compare, then swap at once: only this stretch is open to a writer that takes no lock
        if (!stillHolds(target, bytes.buf)) {
          fs.closeSync(fd);
          fd = null;
          fs.rmSync(tmp, { force: true });
          await sleep(Math.random() * 2 * Math.min(attempt, 5));
          continue;
        }
        fs.renameSync(tmp, target);
        renamed = true;
        if (!durableFirst) await fsyncAsync(fd);
        fs.closeSync(fd);
        fd = null;
        await syncDirAfter(dirname(target));
        opts.onWrite?.(file, newText);
        const written = judge(file, { ...bytes, buf: newBuf, size: newBuf.length, mtimeMs });
        return { changed: true, task: (written as { task: Task }).task, applied };
      } finally {
        if (fd !== null) fs.closeSync(fd);
        if (!renamed) fs.rmSync(tmp, { force: true });
      }
    }
  } finally {
    release();
  }
  throw new TaskBusyError(`could not latch task ${id}: ${file} changed under every one of ${MAX_TRIES} attempts`, file);
}

/** unlink, where a missing file is fine: rmSync's checks and retries cost more than the unlink on the latch's hot path. */
function unlinkIfThere(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (e) {
    if (errCode(e) !== 'ENOENT') throw e;
  }
}

/** Takes the lock file, waiting for another holder; a lock older than LOCK_STALE_MS is broken. Returns its release. */
async function acquireLock(lockPath: string, waitMs: number): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    let fd: number | null = null;
    try {
      fd = await openAsync(lockPath, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
    } catch (e) {
      if (errCode(e) !== 'EEXIST') throw e;
    }
    if (fd !== null) {
      let ino: number;
      try {
        fs.writeSync(fd, `${JSON.stringify({ by: 'sunset', pid: process.pid, host: hostname(), at: new Date().toISOString() })}\n`);
        ino = fs.fstatSync(fd).ino;
      } finally {
        fs.closeSync(fd);
      }
      return () => {
        // remove only our own lock: a stale-breaker may have replaced it
        const st = fs.statSync(lockPath, { throwIfNoEntry: false });
        if (st && st.ino === ino) unlinkIfThere(lockPath);
      };
    }
    const st = fs.statSync(lockPath, { throwIfNoEntry: false });
    if (st && Date.now() - st.mtimeMs > LOCK_STALE_MS) {
      // left by a writer that died holding it; remove that file only, not a fresh one
      const again = fs.statSync(lockPath, { throwIfNoEntry: false });
      if (again && again.ino === st.ino) fs.rmSync(lockPath, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new TaskBusyError(`task file is locked by another writer: ${lockPath} was held for over ${waitMs} ms`, lockPath);
    await sleep(0.2 + Math.random() * 1.5);
  }
}

/** True when the file at path still has exactly these bytes (and nobody swapped it since we looked). */
function stillHolds(path: string, expected: Buffer): boolean {
  let fd: number;
  try {
    fd = fs.openSync(path, READ_FLAGS);
  } catch {
    return false;
  }
  let st: fs.BigIntStats;
  try {
    st = fs.fstatSync(fd, { bigint: true });
    if (!st.isFile() || st.size !== BigInt(expected.length)) return false;
    const buf = Buffer.allocUnsafe(expected.length + 1);
    let len = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, len, buf.length - len, null);
      if (n === 0) break;
      len += n;
      if (len === buf.length) return false;
    }
    if (len !== expected.length || !buf.subarray(0, len).equals(expected)) return false;
  } finally {
    fs.closeSync(fd);
  }
  // the same inode, untouched while we read it, is still the one at the path
  const now = fs.statSync(path, { bigint: true, throwIfNoEntry: false });
  return !!now && now.ino === st.ino && now.dev === st.dev && now.mtimeNs === st.mtimeNs && now.ctimeNs === st.ctimeNs && now.size === st.size;
}

/** A guard against a bug in the text edit: the new text must be the old object plus the patch, and still a valid task. */
function assertSameApartFrom(before: Record<string, unknown>, after: Judged, applied: LatchPatch): void {
  if (after.kind !== 'task') throw new Error(`refusing to write: the edited task would be invalid (${after.invalid.problem})`);
  const a = after.task.raw;
  const keys = new Set([...Object.keys(before), ...Object.keys(applied)]);
  if (Object.keys(a).length !== keys.size) throw new Error('refusing to write: the edit changed the set of fields');
  for (const k of keys) {
    const want = Object.hasOwn(applied, k) ? (applied as Record<string, unknown>)[k] : before[k];
    if (JSON.stringify(a[k]) !== JSON.stringify(want)) throw new Error(`refusing to write: the edit changed field ${k}`);
  }
}

function tempName(id: string): string {
  const tag = `sunset-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  // the temp name starts with "." so nothing takes it for a task; a long id is left out of it
  return Buffer.byteLength(id) <= 180 ? `.${id}.json.${tag}` : `.${tag}`;
}

/**
 * open(2) on the thread pool. Creating a file (the lock, the temp file) is the latch's slowest call: under a
 * burst of latches, with their fsyncs in flight, each create waits 1–1.5 ms in ext4 — time the event loop
 * would otherwise spend blocked. The compare-and-swap's stat, read and rename stay synchronous.
 */
function openAsync(path: string, flags: number, mode: number): Promise<number> {
  return new Promise((resolve, reject) => fs.open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** write(2) of the whole buffer on the thread pool (a new file's first write also waits on ext4's journal). */
async function writeAllAsync(fd: number, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.length) {
    const n = await new Promise<number>((resolve, reject) => fs.write(fd, buf, off, buf.length - off, null, (err, written) => (err ? reject(err) : resolve(written))));
    off += n;
  }
}

function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/**
 * Makes every rename in `dir` that returned before this call durable, sharing directory fsyncs between
 * latches: when one is running it may have started before the caller's rename, so the caller waits for
 * the next, which starts as soon as it ends and serves everyone who asked meanwhile. A burst of latches
 * in one folder then costs a few directory fsyncs (journal commits) instead of one each.
 */
function syncDirAfter(dir: string): Promise<void> {
  let s = dirSyncs.get(dir);
  if (!s) dirSyncs.set(dir, (s = { running: null, queued: null }));
  const state = s;
  const start = (): Promise<void> => {
    const p: Promise<void> = fsyncDir(dir).finally(() => {
      if (state.running !== p) return;
      state.running = null;
      if (!state.queued && dirSyncs.get(dir) === state) dirSyncs.delete(dir);
    });
    state.running = p;
    return p;
  };
  if (!state.running) return start();
  return (state.queued ??= state.running.then(() => {
    state.queued = null;
    return start();
  }));
}

const dirSyncs = new Map<string, { running: Promise<void> | null; queued: Promise<void> | null }>();

async function fsyncDir(dir: string): Promise<void> {
  // makes the rename itself durable; some file systems refuse to fsync a directory, which is fine
  try {
    const fd = fs.openSync(dir, fs.constants.O_RDONLY);
    try {
      await fsyncAsync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // best effort
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
