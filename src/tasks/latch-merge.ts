// The latch's rules, pure: which of a patch's fields may change a task file (a set-once field only while absent,
// exitRequests only growing, to the ceiling) and the file's new text, nothing else in it touched. Apart from
// latch.ts so that they read, and are tested, without the lock, the compare-and-swap and the retries around them.
import { setTopLevelMembers } from './json-edit.js';
import {
  EXIT_REQUESTS_CEILING,
  isIsoTime,
  judge,
  preview,
  SET_ONCE,
  TIME_RULE,
  type FileBytes,
  type Judged,
  type LatchedField,
  type Task,
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

/** A patch no caller should send (a time that is not ISO 8601, a count that is not whole) is a TypeError: nothing is read or written. */
export function checkPatch(patch: LatchPatch): void {
  for (const k of [...SET_ONCE, 'exitRequestedAt'] as const) {
    const v = patch[k];
    if (v !== undefined && !isIsoTime(v)) throw new TypeError(`latch ${k}: ${TIME_RULE} (got ${preview(v)})`);
  }
  const n = patch.exitRequests;
  if (n !== undefined && !(Number.isInteger(n) && n >= 0))
    throw new TypeError(`latch exitRequests: must be a whole number (got ${preview(n)})`);
}

/** The new text of a task file: the patch's fields set in the old text, everything else byte for byte; checked. */
export function edit(
  file: string,
  l: { text: string; bytes: FileBytes & { buf: Buffer }; task: Task },
  applied: LatchPatch,
): { text: string; buf: Buffer; task: Task } {
  const text = setTopLevelMembers(l.text, applied as Record<string, unknown>);
  const buf = Buffer.from(text, 'utf8');
  return { text, buf, task: assertSameApartFrom(l.task.raw, judge(file, { ...l.bytes, buf, size: buf.length }), applied) };
}

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
