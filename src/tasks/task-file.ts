// What a task file is (DESIGN §3): its loose schema, the names sunset reads from it, and the judgement of
// one file's bytes — a Task, or an InvalidTask that says what is wrong. Pure: no file is opened here.
import type { TaskFacts } from '../doctrine/verdict.js';
import { MAX_EXIT_REQUESTS } from '../doctrine/chain.js';
import { basename } from 'node:path';
import { z } from 'zod';

export const TERMINAL_STATES: readonly string[] = Object.freeze(['done', 'abandoned', 'parked']);

export function isTerminal(state: string): boolean {
  return TERMINAL_STATES.includes(state);
}

/** A task file larger than this is invalid: reported, never parsed as a task, never written. */
export const MAX_TASK_BYTES = 1024 * 1024;
/** An invalid file up to this size is still read, so its bytes can be searched for session ids. */
export const MAX_SEARCH_BYTES = 64 * 1024 * 1024;
/** The most exit requests a task file may record (the schema's bound; config may lower it). */
export const EXIT_REQUESTS_CEILING = MAX_EXIT_REQUESTS;

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
export const SET_ONCE = ['releasedAt', 'exitAskedAt', 'exitedAt', 'exitGaveUpAt'] as const;
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
  /**
   * The whole parsed object, unknown fields included — from readTask, readTaskFile and the latch. A task
   * readTasks gives (a folder's sweep) has an empty raw: what sunset reads is in the fields above.
   */
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

/** A task's orderKey: the first parseable of its stateChangedAt, completedAt, updatedAt, releasedAt, createdAt; else its file's mtime. */
export function orderKeyOf(raw: Record<string, unknown>, mtimeMs: number): number {
  for (const k of ['stateChangedAt', 'completedAt', 'updatedAt', 'releasedAt', 'createdAt']) {
    const v = raw[k];
    const ms = typeof v === 'string' ? Date.parse(v) : NaN;
    if (Number.isFinite(ms)) return ms;
  }
  return mtimeMs;
}

/** The same task, its file now stamped mtimeMs (what was judged from bytes about to be written, once written). */
export function withMtime(task: Task, mtimeMs: number): Task {
  return { ...task, mtimeMs, orderKey: orderKeyOf(task.raw, mtimeMs) };
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

export const TIME_FIELDS = ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt', 'exitGaveUpAt'] as const;

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
  if (n !== undefined && n !== null && !(typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= EXIT_REQUESTS_CEILING))
    return false;
  return true;
}

export const TIME_RULE = 'must be an ISO-8601 date-time string such as "2026-09-02T10:00:00Z"';
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

export function preview(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Null when the id is fine; else what is wrong with it, as a sentence starting "id". */
export function validateTaskId(id: string): string | null {
  if (typeof id !== 'string' || id.length === 0) return 'id is empty';
  if (id.includes('/') || id.includes('\\')) return 'id has a path separator';
  if (id.includes('..')) return 'id contains ".."';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) return 'id has control characters';
  if (id.startsWith('.')) return 'id starts with "."';
  // room for `.<id>.json.lock` within a 255-byte file name
  if (Buffer.byteLength(id) > 240) return 'id is longer than 240 bytes';
  return null;
}

// ---------------------------------------------------------------------------------------------
// judging one file's bytes

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export interface FileBytes {
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

export type Judged = { kind: 'task'; task: Task; text: string } | { kind: 'invalid'; invalid: InvalidTask };

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

/** A file's bytes as a task, or what is wrong with them (oversize, not UTF-8, not JSON, the wrong shape, an id that is not its name). */
export function judge(file: string, bytes: FileBytes): Judged {
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
    orderKey: orderKeyOf(raw, bytes.mtimeMs),
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
  return { kind: 'task', task, text };
}
