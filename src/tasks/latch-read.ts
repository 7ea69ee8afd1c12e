// Reading a task file for a latch: its bytes (where a symlink points, so the link stays a link) and its
// judgement. Apart from latch.ts because callers use it too: readForLatch is a chain job's one read of its
// task, and the latch's first attempt edits those bytes.
import * as fs from 'node:fs';
import { join } from 'node:path';
import { badIdRead, errCode, GONE, readFileBytesSync, takeRecentRead, unreadable } from './read-tasks.js';
import { judge, TaskInvalidError, validateTaskId, type FileBytes, type InvalidTask, type Task } from './task-file.js';

export interface Loaded {
  /** The task file's path, as the latch names it. */
  file: string;
  /** Where the bytes live: the file itself, or what it links to. */
  target: string;
  bytes: FileBytes & { buf: Buffer };
  task: Task;
  text: string;
}

/** The task file as it is now, for one attempt of the latch. @throws TaskInvalidError when it is invalid or gone. */
export function loadForLatch(file: string): Loaded {
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
  if (judged.kind === 'invalid')
    throw new TaskInvalidError(`task file ${file} is invalid: ${judged.invalid.problem}`, file, judged.invalid);
  return { file, target, bytes: bytes as Loaded['bytes'], task: judged.task, text: judged.text };
}

/** A task file as read for a later latch (LatchOptions.base): opaque to its holder. */
export type LatchBase = Loaded;

/**
 * One task by id, read as readTask reads it, with the bytes a latch can start from (a chain job reads its task,
 * then latches: one read, not two). Missing: gone, or not a regular file; invalid: what is wrong with it.
 */
export function readForLatch(
  dir: string,
  id: string,
): { kind: 'task'; task: Task; base: LatchBase } | { kind: 'invalid'; invalid: InvalidTask } | { kind: 'missing' } {
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
