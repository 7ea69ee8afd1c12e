// The compare-and-swap: replace a file only if it still holds exactly the bytes the new ones were computed
// from (the task latch, the pins file, the sampler's lock). Apart from atomic-file.ts, which the Claude Code
// hook loads on every call and which needs none of this; like it, this imports node:fs and node:path only.
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { CREATE_FLAGS, fsyncAsync, openAsync, READ_FLAGS, syncDirAfter, writeAllAsync } from './atomic-file.js';

let ids: { uid: number | undefined; gid: number | undefined } | null = null;

/**
 * Give a new file (by its fd) the permission bits and owner of the file it replaces; an owner not ours to give is
 * left. `has`: what the new file has already (its fstat), so that nothing is changed that need not be.
 */
export function fitOwnership(
  fd: number,
  o: { mode: number; uid: number; gid: number },
  has?: { mode: number; uid: number; gid: number },
): void {
  if (!has || (has.mode & 0o7777) !== (o.mode & 0o7777)) fs.fchmodSync(fd, o.mode & 0o7777);
  ids ??= { uid: process.getuid?.(), gid: process.getgid?.() };
  if (has ? o.uid !== has.uid || o.gid !== has.gid : o.uid !== ids.uid || o.gid !== ids.gid) {
    try {
      fs.fchownSync(fd, o.uid, o.gid);
    } catch {
      // not ours to give away: the file keeps our ownership, its mode is still the original's
    }
  }
}

/** True when the file at path still has exactly these bytes (and nobody swapped it since we looked). */
export function stillHolds(path: string, expected: Buffer): boolean {
  const fd = holdIfStill(path, expected);
  if (fd === null) return false;
  fs.closeSync(fd);
  return true;
}

/**
 * stillHolds, keeping the file open when it does hold them (null when not): a rename over it made at once then
 * only unlinks it, and the freeing of its inode — 0.3–0.5 ms of kernel CPU on ext4 under a burst, paid by the
 * thread that drops the last reference — waits for the close, which renameIfStill makes on the thread pool.
 */
function holdIfStill(path: string, expected: Buffer): number | null {
  let fd: number;
  try {
    fd = fs.openSync(path, READ_FLAGS);
  } catch {
    return null;
  }
  let held = false;
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (!st.isFile() || st.size !== BigInt(expected.length)) return null;
    const buf = Buffer.allocUnsafe(expected.length + 1);
    let len = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, len, buf.length - len, null);
      if (n === 0) break;
      len += n;
      if (len === buf.length) return null;
    }
    if (len !== expected.length || !buf.subarray(0, len).equals(expected)) return null;
    // the same inode, untouched while we read it, is still the one at the path
    const now = fs.statSync(path, { bigint: true, throwIfNoEntry: false });
    held =
      !!now && now.ino === st.ino && now.dev === st.dev && now.mtimeNs === st.mtimeNs && now.ctimeNs === st.ctimeNs && now.size === st.size;
    return held ? fd : null;
  } finally {
    if (!held) fs.closeSync(fd);
  }
}

/**
 * The compare-and-swap's last step: if `target` still holds exactly `expected`, `rename` at once (it puts the new
 * version over `target`) and give its result; null, renaming nothing, when the file had changed. The old version
 * is kept open across the rename and closed on the thread pool after it (holdIfStill): its inode is freed there.
 */
export function renameIfStill<T>(target: string, expected: Buffer, rename: () => T): T | null {
  const old = holdIfStill(target, expected);
  if (old === null) return null;
  try {
    return rename();
  } finally {
    fs.close(old, () => {}); // a failed close is nothing to act on
  }
}

export interface SwapOptions {
  /** The temp file's path (beside the target, so the rename stays in one file system). */
  tmp: string;
  /** The original's permission bits and owner, given to the new file (an owner not ours to give is left). */
  mode: number;
  uid: number;
  gid: number;
  /**
   * fsync the new file before the rename (true) or after it (false: a writer that rewrites the file faster
   * than an fsync takes cannot starve the swap; the file is durable by the time this returns either way).
   */
  syncFirst: boolean;
  /** Test seam: runs after the new bytes are in the temp file, just before the compare. */
  beforeSwap?: () => void | Promise<void>;
}

/**
 * Replace `target` by `data` only if it still holds exactly `expected`: the temp file is written (on the
 * thread pool), then the compare and the rename run at once, synchronously — only that stretch is open to
 * a writer that takes no lock. Durable when it resolves: the file fsynced, then the folder (syncDirAfter).
 * @returns swapped false when the file had changed (nothing written); else the new file's mtime and inode.
 */
export async function swapIfUnchanged(
  target: string,
  expected: Buffer,
  data: Buffer,
  o: SwapOptions,
): Promise<{ swapped: false } | { swapped: true; mtimeMs: number; dev: number; ino: number; size: number }> {
  let fd: number | null = await openAsync(o.tmp, CREATE_FLAGS, 0o600);
  let renamed = false;
  try {
    await writeAllAsync(fd, data);
    fitOwnership(fd, o);
    if (o.syncFirst) await fsyncAsync(fd);
    const { mtimeMs, dev, ino, size } = fs.fstatSync(fd);
    await o.beforeSwap?.();

    // compare, then swap at once
    const swap = () => {
      fs.renameSync(o.tmp, target);
      return true;
    };
    if (renameIfStill(target, expected, swap) === null) return { swapped: false };
    renamed = true;
    if (!o.syncFirst) await fsyncAsync(fd);
    fs.closeSync(fd);
    fd = null;
    await syncDirAfter(dirname(target));
    return { swapped: true, mtimeMs, dev, ino, size };
  } finally {
    if (fd !== null) fs.closeSync(fd);
    if (!renamed) fs.rmSync(o.tmp, { force: true });
  }
}
