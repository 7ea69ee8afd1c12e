// What reading /proc keeps from one sweep to the next: files held open, kernel threads known, argv and Claude Code
// homes by process, the boot time and the page size. One object holds it all, and its life is the process's: the
// files it holds are this process's descriptors, and everything in it is keyed to processes that come and go, so
// each sweep's listing of /proc lets go of what has ended (readProcTable). `procCache` is the process's own.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { ProcInfo } from './proc.js';

/** One scratch buffer for every small /proc read: every use is synchronous (read, then copied out). */
const small = Buffer.allocUnsafe(4096);

/** One small /proc file whole, through the one buffer (an open, a read, a close: no fstat, no buffer per file). */
export function readSmall(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const n = readSync(fd, small, 0, small.length, 0);
    // a stat line is far shorter than the buffer: a full read is a longer file, read the plain way
    return n < small.length ? small.toString('utf8', 0, n) : readFileSync(path, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** A process's argv, under the key (start ticks and comm) it was read with. */
export interface KeptArgv {
  key: string;
  argv: string[];
}

/** A process's Claude Code home and global config file (from its environment), under its start ticks. */
export interface KeptHome {
  ticks: string;
  dir: string | null;
  /** Its `.claude.json` (the global config: `defaultToAgentsView`), where its environment says. */
  config: string | null;
}

export class ProcCache {
  private bootMs: number | null = null;
  private pageSize: number | null = null;
  /**
   * /proc files kept open between sweeps (a process's stat, and its statm where its memory is read): a read at
   * offset 0 of an open /proc file is made anew by the kernel, so a sweep reads a process with one call rather than
   * an open, a read and a close (half the cost). The file is bound to the process, not to its number: once it has
   * ended a read fails (ESRCH), and a pid reused is opened anew. Each sweep closes those of pids its listing no
   * longer shows. At most a quarter of the process's open-file limit is kept (and 2,048); beyond that files are
   * read the plain way. Only the real /proc is kept open (a test's folder of plain files is read anew), and every
   * use is synchronous (claimed, read, put back), so sweeps in flight together share it safely. Files are opened
   * close-on-exec: no child process inherits them.
   */
  private readonly held = new Map<string, number>();
  private maxHeld: number | null = null;
  /**
   * Kernel threads, known through a file kept open: a kernel thread's parent, start and argv (none) never change,
   * so the one question a sweep has of it is whether it is still the same thread. Its `cmdline`, kept open, answers
   * that for a fraction of a stat read: a kernel thread has no memory of its own, so the read is empty — and, bound
   * to the thread and not to its number, it fails once the thread has ended (ESRCH): a pid reused reads as the new
   * process. A read that is not empty is a task that has stopped being a kernel thread (before Linux 5.19 a usermode
   * helper was one from its fork to its exec): it is read anew.
   * Its ProcInfo is the one first read (its state as then: no use of a state is about a kernel thread). ~60 of a
   * real 12-session fleet's ~110 processes are kernel threads.
   */
  private readonly kthreads = new Map<number, { fd: number; info: ProcInfo }>();
  /**
   * Each process's argv by `<procRoot>/<pid>`, kept while its pid, start and command name (stat's comm) stay the
   * same: argv is set at exec (the real CLI starts its helpers with theirs, `claude bg-pty-host …`), and an exec
   * changes comm. Only the processes the last read saw (another procRoot's too: tests read fake /proc folders,
   * one at a time).
   */
  argv = new Map<string, KeptArgv>();
  /** Each process's Claude Code home by `<procRoot>/<pid>`: /proc/<pid>/environ is the environment it was started with. */
  readonly homes = new Map<string, KeptHome>();

  /** The boot time (ms since the epoch), from /proc/stat's btime, read once. */
  btime(): number {
    if (this.bootMs === null) {
      const m = /^btime\s+(\d+)/m.exec(readFileSync('/proc/stat', 'utf8'));
      this.bootMs = m ? Number(m[1]) * 1000 : 0;
    }
    return this.bootMs;
  }

  /** The page size, derived from our own VmRSS (kB) over our resident pages, so no child process is needed. */
  pageBytes(): number {
    if (this.pageSize === null) {
      try {
        const statm = readFileSync('/proc/self/statm', 'utf8').split(' ');
        const status = readFileSync('/proc/self/status', 'utf8');
        const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
        const pages = Number(statm[1]);
        const guess = (kb * 1024) / pages;
        this.pageSize = [4096, 16384, 65536].reduce((a, b) => (Math.abs(b - guess) < Math.abs(a - guess) ? b : a));
      } catch {
        this.pageSize = 4096;
      }
    }
    return this.pageSize;
  }

  /** A /proc file's text (path under /proc/<pid>/), through the kept file when there is one and its process lives. */
  readKept(path: string): string {
    const fd = this.held.get(path);
    if (fd !== undefined) {
      this.held.delete(path);
      try {
        const n = readSync(fd, small, 0, small.length, 0);
        if (n < small.length) {
          this.held.set(path, fd);
          return small.toString('utf8', 0, n);
        }
      } catch {
        /* ended: the pid, if listed, is another process now */
      }
      closeSync(fd);
    }
    if (this.keptFull()) return readSmall(path);
    const fresh = openSync(path, 'r');
    let n: number;
    try {
      n = readSync(fresh, small, 0, small.length, 0);
    } catch (err) {
      closeSync(fresh);
      throw err;
    }
    if (n >= small.length) {
      closeSync(fresh);
      return readFileSync(path, 'utf8');
    }
    this.held.set(path, fresh);
    return small.toString('utf8', 0, n);
  }

  /** A kernel thread's info, while the thread lives; null (and its file closed) once it has ended, or if not known. */
  knownKthread(pid: number): ProcInfo | null {
    const k = this.kthreads.get(pid);
    if (!k) return null;
    let n = -1;
    try {
      n = readSync(k.fd, small, 0, small.length, 0);
    } catch {
      /* ended */
    }
    if (n === 0) return k.info;
    this.kthreads.delete(pid);
    closeSync(k.fd);
    return null;
  }

  /** Keep a kernel thread just read through its kept stat (`at` = /proc/<pid>): its cmdline opened, its stat let go. */
  keepKthread(at: string, info: ProcInfo): void {
    if (this.keptFull()) return;
    let fd: number;
    try {
      fd = openSync(`${at}/cmdline`, 'r');
    } catch {
      return;
    }
    const stat = this.held.get(`${at}/stat`);
    try {
      // the stat file, opened before, still reads: the thread lived after cmdline was opened, so both are its own;
      // and cmdline reads empty, as a kernel thread's does
      if (stat === undefined) throw new Error('no kept stat');
      readSync(stat, small, 0, small.length, 0);
      if (readSync(fd, small, 0, small.length, 0) !== 0) throw new Error('not a kernel thread now');
    } catch {
      closeSync(fd);
      return;
    }
    this.held.delete(`${at}/stat`);
    closeSync(stat);
    this.kthreads.set(info.pid, { fd, info });
  }

  /** Close the kept files of processes this listing of /proc does not show: they have ended. */
  dropUnlisted(listed: ReadonlySet<string>): void {
    for (const [path, fd] of this.held) {
      const pid = path.slice(6, path.indexOf('/', 6)); // '/proc/<pid>/…'
      if (listed.has(pid)) continue;
      this.held.delete(path);
      closeSync(fd);
    }
    for (const [pid, k] of this.kthreads) {
      if (listed.has(String(pid))) continue;
      this.kthreads.delete(pid);
      closeSync(k.fd);
    }
  }

  /** Are as many files kept open as may be (stat files and kernel threads' cmdline files together)? */
  private keptFull(): boolean {
    return this.held.size + this.kthreads.size >= this.heldLimit();
  }

  private heldLimit(): number {
    if (this.maxHeld === null) {
      let limits = '';
      try {
        limits = readSmall('/proc/self/limits');
      } catch {
        /* unknown: the default below */
      }
      const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
      const soft = m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : 1024;
      this.maxHeld = Math.max(0, Math.min(2048, Math.floor(soft / 4)));
    }
    return this.maxHeld;
  }
}

/** This process's: what every sweep in it reads /proc through. */
export const procCache = new ProcCache();
