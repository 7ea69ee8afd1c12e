// The one place that knows how sunset writes a file so that a crash leaves either the old bytes or the
// new ones, never a torn mix, and — when asked to be durable — the new ones survive a power cut:
//
//   replace   a temp file in the same folder, written and fsynced, renamed over the file, then the folder
//             fsynced (the rename itself made durable); writeFileAtomicSync, writeFileAtomic (async),
//             stageFileSync (the rename left to the caller, for a compare before it)
//   swap      the same, but only if the file still holds exactly the bytes the new ones were computed from:
//             the task latch's compare-and-swap, in src/store/compare-and-swap.ts (built on the pieces here)
//   create    once, ever (O_EXCL), fsynced with its folder: createFileOnceSync
//   append    one line with O_APPEND (one write: concurrent appenders never interleave): appendLineSync
//   (a cooperative lock file, created exclusively, a stale one broken: src/store/file-lock.ts)
//
// It imports node:fs and node:path only: the Claude Code hook (src/cli/hook-event.ts) loads it on every call.
import * as fs from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface WriteOptions {
  /** The new file's mode, as open(2) takes it (the umask applies). @defaultValue 0o666 */
  mode?: number;
  /** fsync the file before the rename and the folder after it. false: atomic only (evidence rewritten often and soon stale). @defaultValue true */
  durable?: boolean;
}

// O_NONBLOCK: a FIFO named like the file must not hang a thread in open()
export const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);
export const CREATE_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;

export function errCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/** unlink, where a missing file is fine: rmSync's checks and retries cost more than the unlink on the latch's hot path. */
export function unlinkIfThere(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (e) {
    if (errCode(e) !== 'ENOENT') throw e;
  }
}

/** Whether a file name is one of tempNameFor's: a temp file a writer that died left behind (for a folder's pruner). */
export function isTempName(name: string): boolean {
  return name.startsWith('.') && /sunset-\d+-[0-9a-f]{12}\.tmp$/.test(name);
}

/** A fresh name beside `file` for its temp file: it starts with "." (no reader takes it for the file); a long name is left out of it. */
export function tempNameFor(file: string): string {
  const tag = `sunset-${process.pid}-${Math.random().toString(16).slice(2, 14).padEnd(12, '0')}.tmp`;
  const name = basename(file);
  return join(dirname(file), Buffer.byteLength(name) <= 190 ? `.${name}.${tag}` : `.${tag}`);
}

/** write(2) until the whole buffer is written. */
export function writeAllSync(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
}

/** pwrite(2) until the whole buffer is written at `position`. */
export function writeAllAtSync(fd: number, buf: Buffer, position: number): void {
  let off = 0;
  while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off, position + off);
}

const bytes = (data: string | Buffer): Buffer => (typeof data === 'string' ? Buffer.from(data, 'utf8') : data);

// ---------------------------------------------------------------------------------------------
// replace (synchronous)

/** A temp file written (and, when durable, fsynced) beside its target: commit() renames it over the target, discard() removes it. */
export interface StagedFile {
  readonly tmp: string;
  commit(): void;
  discard(): void;
}

/** Write `data` into a temp file beside `file`, for a caller that checks something before the rename. The folder must exist. */
export function stageFileSync(file: string, data: string | Buffer, o: WriteOptions = {}): StagedFile {
  const durable = o.durable ?? true;
  const tmp = tempNameFor(file);
  const fd = fs.openSync(tmp, CREATE_FLAGS, o.mode ?? 0o666);
  try {
    writeAllSync(fd, bytes(data));
    if (durable) fs.fsyncSync(fd);
  } catch (e) {
    fs.closeSync(fd);
    unlinkIfThere(tmp);
    throw e;
  }
  fs.closeSync(fd);
  let done = false;
  return {
    tmp,
    commit() {
      if (done) return;
      try {
        fs.renameSync(tmp, file);
      } catch (e) {
        unlinkIfThere(tmp);
        throw e;
      } finally {
        done = true;
      }
      if (durable) fsyncDirSync(dirname(file));
    },
    discard() {
      if (done) return;
      done = true;
      unlinkIfThere(tmp);
    },
  };
}

/** Replace `file` by `data` whole: a temp file beside it, fsynced, renamed over it, the folder fsynced. The folder must exist. */
export function writeFileAtomicSync(file: string, data: string | Buffer, o: WriteOptions = {}): void {
  stageFileSync(file, data, o).commit();
}

/** Makes the renames and creates in `dir` durable; some file systems refuse to fsync a folder, which is fine. */
export function fsyncDirSync(dir: string): void {
  try {
    const fd = fs.openSync(dir, fs.constants.O_RDONLY);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // best effort
  }
}

// ---------------------------------------------------------------------------------------------
// create once, append

/** Create `file` holding `data` only if it does not exist yet: true when this call created it (once, ever). The folder must exist. */
export function createFileOnceSync(file: string, data: string | Buffer, o: WriteOptions = {}): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, CREATE_FLAGS, o.mode ?? 0o666);
  } catch (e) {
    if (errCode(e) === 'EEXIST') return false;
    throw e;
  }
  try {
    writeAllSync(fd, bytes(data));
    if (o.durable ?? true) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  if (o.durable ?? true) fsyncDirSync(dirname(file));
  return true;
}

/** Append one line (`line` ends with "\n") in one write; not fsynced unless durable (a torn last line is every reader's to skip). */
export function appendLineSync(file: string, line: string, o: { durable?: boolean } = {}): void {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND, 0o666);
  try {
    writeAllSync(fd, Buffer.from(line, 'utf8'));
    if (o.durable) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** rename(2), the folder fsynced after it (when durable). */
export function moveFileSync(from: string, to: string, o: { durable?: boolean } = {}): void {
  fs.renameSync(from, to);
  if (o.durable ?? true) fsyncDirSync(dirname(to));
}

// ---------------------------------------------------------------------------------------------
// the thread pool: what a burst of writers would otherwise block the event loop on

/**
 * open(2) on the thread pool. Creating a file (a lock, a temp file) is the latch's slowest call: under a
 * burst of latches, with their fsyncs in flight, each create waits 1–1.5 ms in ext4 — time the event loop
 * would otherwise spend blocked. The compare-and-swap's stat, read and rename stay synchronous.
 */
export function openAsync(path: string, flags: number, mode: number): Promise<number> {
  return new Promise((resolve, reject) => fs.open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** write(2) of the whole buffer on the thread pool (a new file's first write also waits on ext4's journal). */
export async function writeAllAsync(fd: number, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.length) {
    const n = await new Promise<number>((resolve, reject) =>
      fs.write(fd, buf, off, buf.length - off, null, (err, written) => (err ? reject(err) : resolve(written))),
    );
    off += n;
  }
}

export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/**
 * Makes every rename in `dir` that returned before this call durable, sharing directory fsyncs between
 * writers: when one is running it may have started before the caller's rename, so the caller waits for
 * the next, which starts as soon as it ends and serves everyone who asked meanwhile. A burst of latches
 * in one folder then costs a few directory fsyncs (journal commits) instead of one each.
 */
export function syncDirAfter(dir: string): Promise<void> {
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

/** writeFileAtomicSync off the event loop: the create, the write and the fsyncs on the thread pool, the folder's fsync shared (syncDirAfter). */
export async function writeFileAtomic(file: string, data: string | Buffer, o: WriteOptions = {}): Promise<void> {
  const durable = o.durable ?? true;
  const tmp = tempNameFor(file);
  const fd = await openAsync(tmp, CREATE_FLAGS, o.mode ?? 0o666);
  let renamed = false;
  try {
    await writeAllAsync(fd, bytes(data));
    if (durable) await fsyncAsync(fd);
    await fs.promises.rename(tmp, file);
    renamed = true;
  } finally {
    fs.closeSync(fd);
    if (!renamed) unlinkIfThere(tmp);
  }
  if (durable) await syncDirAfter(dirname(file));
}
