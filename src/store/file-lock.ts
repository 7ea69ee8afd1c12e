// A cooperative lock file: created exclusively (O_EXCL) with its holder written in it — or, as git's `index.lock`,
// holding the file's next version, renamed over the file to swap it and release the lock at once —, released only
// by the holder that made it (by inode), and broken when stale (older than LOCK_STALE_MS by its mtime, or its
// holder's process gone). The task latch (src/tasks/latch.ts) and the fleet sampler (src/report/sampler.ts) use it.
// Like atomic-file.ts, it imports node:fs and node:path only.
import * as fs from 'node:fs';
import { CREATE_FLAGS, errCode, openAsync, unlinkIfThere, writeAllAsync } from './atomic-file.js';

/** A lock file older than this (by its mtime) was left by a holder that died holding it. */
export const LOCK_STALE_MS = 10_000;

/** The lock was held by another holder for longer than the caller would wait. */
export class LockBusyError extends Error {
  override name = 'LockBusyError';
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
  }
}

/** What a taker sees of a lock file held by someone else, to judge whether its holder is gone. */
export interface HeldLock {
  /** Its text: read only for a `stale` judgement (null when it could not be read). */
  text: string | null;
  mtimeMs: number;
}

export interface LockOptions {
  /** The line written into the lock file when it is taken (who holds it), e.g. JSON of pid, host and time. */
  owner: string | (() => string);
  /** Whether the holder of a lock is gone. @defaultValue its mtime is older than staleMs */
  stale?: (held: HeldLock) => boolean;
  /** For the default `stale`. @defaultValue LOCK_STALE_MS */
  staleMs?: number;
  /** Test seam: called each time the taker finds the lock held and waits to try again. */
  onWait?: () => void;
}

type Release = () => void;

/** Is the lock file at path still the one this process created (a stale-breaker may have replaced it)? */
const stillOurs = (path: string, ino: number) => fs.statSync(path, { throwIfNoEntry: false })?.ino === ino;

/** The line a lock file holds: who holds it. */
const ownerLine = (owner: LockOptions['owner']) => {
  const line = typeof owner === 'function' ? owner() : owner;
  return Buffer.from(line.endsWith('\n') ? line : `${line}\n`);
};

/** The release of a lock this process created: removes it only if it is still ours. */
function releaser(path: string, ino: number): Release {
  return () => {
    if (stillOurs(path, ino)) unlinkIfThere(path);
  };
}

/** The lock file holds no lock of ours yet: create it and say who holds it. */
function writeOwner(fd: number, owner: LockOptions['owner']): number {
  try {
    fs.writeSync(fd, ownerLine(owner));
    return fs.fstatSync(fd).ino;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * acquireLock's: the owner line written and the lock file unlinked on the thread pool (a write into a new file,
 * and an unlink, wait on ext4's journal under a burst of latches: time the event loop would spend blocked).
 */
async function writeOwnerAsync(fd: number, owner: LockOptions['owner']): Promise<number> {
  try {
    await writeAllAsync(fd, ownerLine(owner));
    return fs.fstatSync(fd).ino;
  } finally {
    fs.closeSync(fd);
  }
}

function asyncReleaser(path: string, ino: number): () => Promise<void> {
  return async () => {
    if (!stillOurs(path, ino)) return;
    await fs.promises.unlink(path).catch((e) => {
      if (errCode(e) !== 'ENOENT') throw e;
    });
  };
}

/** When the lock at path is held by a holder that is gone, remove that file (only it, not a fresh one that replaced it): true when it was. */
function breakIfStale(path: string, o: LockOptions): boolean {
  const st = fs.statSync(path, { throwIfNoEntry: false });
  if (!st) return true; // gone meanwhile: try again
  let stale: boolean;
  if (o.stale) {
    let text: string | null = null;
    try {
      text = fs.readFileSync(path, 'utf8');
    } catch {
      text = null;
    }
    stale = o.stale({ text, mtimeMs: st.mtimeMs });
  } else stale = Date.now() - st.mtimeMs > (o.staleMs ?? LOCK_STALE_MS);
  if (!stale) return false;
  const again = fs.statSync(path, { throwIfNoEntry: false });
  if (again && again.ino === st.ino) fs.rmSync(path, { force: true });
  return true;
}

/** The longest wait between two tries at a held lock: a lock held for seconds costs its waiter a few hundred tries, not thousands. */
const MAX_RETRY_MS = 25;

/**
 * Create the file at `path` exclusively (on the thread pool), waiting up to waitMs while another holder has it —
 * tries at once, then at waits that grow to MAX_RETRY_MS (with jitter) —; a stale one is broken.
 */
async function createExclusive(path: string, waitMs: number, o: LockOptions, mode: number): Promise<number> {
  const deadline = Date.now() + waitMs;
  let wait = 0.2;
  for (;;) {
    try {
      return await openAsync(path, CREATE_FLAGS, mode);
    } catch (e) {
      if (errCode(e) !== 'EEXIST') throw e;
    }
    if (breakIfStale(path, o)) continue;
    if (Date.now() > deadline) throw new LockBusyError(`locked by another writer: ${path} was held for over ${waitMs} ms`, path);
    o.onWait?.();
    await new Promise((resolve) => setTimeout(resolve, wait * (0.5 + Math.random())));
    wait = Math.min(MAX_RETRY_MS, wait * 2);
  }
}

/**
 * Take the lock file at `path` (created exclusively), waiting up to waitMs for another holder; a lock whose
 * holder is gone (`stale`) is broken. Resolves with its release.
 * @throws LockBusyError when another holder kept it for longer than waitMs.
 */
export async function acquireLock(path: string, waitMs: number, o: LockOptions): Promise<() => Promise<void>> {
  const fd = await createExclusive(path, waitMs, o, 0o644);
  return asyncReleaser(path, await writeOwnerAsync(fd, o.owner));
}

/** A lock file that is also the file's next version (acquireLockFile): open for writing, empty; its mode and owner as created. */
export interface HeldLockFile {
  path: string;
  fd: number;
  ino: number;
  mode: number;
  uid: number;
  gid: number;
}

/**
 * Take the lock at `path` as git takes `index.lock`: the lock file, created exclusively and kept open, is where
 * the holder writes the file's next version, and the holder's rename of it over the file swaps the file and
 * releases the lock in one step (renameLockFile). One file created a write, where a lock file beside a temp file
 * is two: on ext4 without a journal, each create scans past every inode deleted in the last minutes (0.3–1 ms of
 * kernel CPU under a burst, holding the folder's lock). Waits, breaks stale holders and fails as acquireLock does;
 * the holder's staleness is its mtime (its write refreshes it). `mode`: the file's mode, created with (the umask
 * applies): where it is the one wanted, no chmod follows. Give it back unused with dropLockFile.
 */
export async function acquireLockFile(
  path: string,
  waitMs: number,
  o: Omit<LockOptions, 'owner'> & { mode?: number },
): Promise<HeldLockFile> {
  const fd = await createExclusive(path, waitMs, { owner: '', ...o }, o.mode ?? 0o600);
  try {
    const st = fs.fstatSync(fd);
    return { path, fd, ino: st.ino, mode: st.mode, uid: st.uid, gid: st.gid };
  } catch (e) {
    fs.closeSync(fd);
    unlinkIfThere(path);
    throw e;
  }
}

/**
 * The swap and the release in one: rename the lock file over `target` — only while it is still ours (a holder
 * that outlived LOCK_STALE_MS may have had it broken and taken by another: then nothing is renamed, and false).
 */
export function renameLockFile(held: HeldLockFile, target: string): boolean {
  if (!stillOurs(held.path, held.ino)) return false;
  fs.renameSync(held.path, target);
  return true;
}

/** Close a held lock file and remove it, if it is still ours (after renameLockFile there is nothing to remove). */
export function dropLockFile(held: HeldLockFile): void {
  try {
    fs.closeSync(held.fd);
  } catch {
    // closed already
  }
  if (stillOurs(held.path, held.ino)) unlinkIfThere(held.path);
}

/** acquireLock without waiting, synchronously: the release when this call took the lock, null when a live holder has it. */
export function tryLockSync(path: string, o: LockOptions): Release | null {
  for (let tries = 0; tries < 8; tries++) {
    let fd: number;
    try {
      fd = fs.openSync(path, CREATE_FLAGS, 0o644);
    } catch (e) {
      if (errCode(e) !== 'EEXIST') throw e;
      if (breakIfStale(path, o)) continue;
      return null;
    }
    return releaser(path, writeOwner(fd, o.owner));
  }
  return null;
}
