// readProcTable on a /proc of our own making: what a sweep keeps between reads (argv) and what makes it read
// again (a new comm, a pid whose /proc folder was made anew); and on the real /proc, whose stat files it keeps
// open between sweeps: what it reads through them is each sweep's own (a process's state, its end); a kernel thread,
// whose parent, start and argv never change, is known through one file kept open until it ends.
import { spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProcTable } from '../src/evidence/proc.js';

const PF_KTHREAD = 0x00200000;
/** A stat line: pid (comm) state ppid pgrp session tty tpgid flags … starttime (field 22). */
const stat = (pid: number, comm: string, ppid: number, flags = 0x400000, start = 100) =>
  `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 ${flags} ${Array(12).fill(0).join(' ')} ${start} 0 0\n`;

function proc(root: string, pid: number, text: string, argv: string[]) {
  mkdirSync(join(root, String(pid)), { recursive: true });
  writeFileSync(join(root, String(pid), 'stat'), text);
  writeFileSync(join(root, String(pid), 'cmdline'), argv.length ? `${argv.join('\0')}\0` : '');
}

describe('readProcTable', () => {
  it('keeps a settled process’s argv until its comm changes; reads every stat (a kernel thread’s too) each time', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sunset-proc-'));
    try {
      proc(root, 10, stat(10, 'kworker/0:1', 2, PF_KTHREAD), []);
      proc(root, 20, stat(20, 'claude', 1), ['claude', 'attach', 'a1b2']);
      let t = await readProcTable(root);
      expect(t.procs.get(10)).toMatchObject({ ppid: 2, argv: [] });
      expect(t.procs.get(20)?.argv).toEqual(['claude', 'attach', 'a1b2']);

      // argv is set at exec: a cmdline that changed under the same pid, start and comm is not read again ...
      writeFileSync(join(root, '20', 'cmdline'), 'claude\0agents\0');
      t = await readProcTable(root);
      expect(t.procs.get(20)?.argv).toEqual(['claude', 'attach', 'a1b2']);
      // ... but an exec (a new comm) is
      writeFileSync(join(root, '20', 'stat'), stat(20, 'node', 1));
      t = await readProcTable(root);
      expect(t.procs.get(20)?.argv).toEqual(['claude', 'agents']);

      // a kernel thread's stat is read each time (its argv is never read); a pid reused is read as the new process
      writeFileSync(join(root, '10', 'stat'), stat(10, 'kworker/0:1', 2, PF_KTHREAD, 999));
      t = await readProcTable(root);
      expect(t.procs.get(10)).toMatchObject({ startTicks: '999', argv: [] });
      rmSync(join(root, '10'), { recursive: true });
      proc(root, 10, stat(10, 'claude', 1), ['claude', 'attach', 'c3d4']);
      t = await readProcTable(root);
      expect(t.procs.get(10)).toMatchObject({ ppid: 1, argv: ['claude', 'attach', 'c3d4'] });

      // a process gone is gone
      rmSync(join(root, '20'), { recursive: true });
      t = await readProcTable(root);
      expect(t.procs.has(20)).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('on the real /proc, a stat kept open reads as each sweep finds it: a process turned zombie, a process ended, a new one', async () => {
    // `sleep 30` never reaps its child: the inner `sleep 0.3` turns zombie under it when it ends
    const outer = spawn('sh', ['-c', 'sleep 0.3 & exec sleep 30'], { stdio: 'ignore' });
    try {
      const inner = await until(() => {
        const kids = readFileSync(`/proc/${outer.pid}/task/${outer.pid}/children`, 'utf8').trim();
        return kids ? Number(kids.split(' ')[0]) : null;
      });
      let t = await readProcTable();
      expect(t.procs.get(inner)?.state).toMatch(/^[SR]$/);
      expect(t.children.get(outer.pid!)).toContain(inner);
      const zombie = await until(async () => ((await readProcTable()).procs.get(inner)?.state === 'Z' ? true : null));
      expect(zombie).toBe(true);
      // its end: the parent goes, the zombie is reaped by init; neither is in the next table
      outer.kill('SIGKILL'); // our own test process
      await until(async () => {
        t = await readProcTable();
        return !t.procs.has(outer.pid!) && !t.procs.has(inner) ? true : null;
      });
      // the files kept open are the processes listed now: none leaks past its process (counted for the
      // processes of this test: other processes on a shared box come and go between two sweeps)
      const held = (pid: number) =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`/proc/${pid}/`);
          } catch {
            return false; // closed between the listing and the look
          }
        });
      const again = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        await until(async () => ((await readProcTable()).procs.get(again.pid!)?.argv[0] === 'sleep' ? true : null));
        expect(held(again.pid!).length).toBeGreaterThan(0); // its stat is kept open while it lives
      } finally {
        again.kill('SIGKILL');
      }
      await until(async () => (!(await readProcTable()).procs.has(again.pid!) ? true : null));
      for (const pid of [again.pid!, outer.pid!, inner]) expect(held(pid)).toEqual([]);
    } finally {
      if (outer.exitCode === null && outer.signalCode === null) outer.kill('SIGKILL');
    }
  });

  it('a file of /proc kept open fails its read once its process has ended and been reaped: how a known kernel thread is told to be the same one', async () => {
    // a kernel thread cannot be ended from here; a process's cmdline file behaves the same (bound to the process)
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const fd = openSync(`/proc/${child.pid}/cmdline`, 'r');
    try {
      const buf = Buffer.alloc(4096);
      expect(buf.toString('utf8', 0, readSync(fd, buf, 0, buf.length, 0))).toBe('sleep\x0030\x00');
      const ended = new Promise((resolve) => child.once('exit', resolve)); // reaped by node
      child.kill('SIGKILL'); // our own test process
      await ended;
      expect(() => readSync(fd, buf, 0, buf.length, 0)).toThrow(/ESRCH/);
    } finally {
      closeSync(fd);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  const kthreadsHere = kernelThreads();
  it.skipIf(kthreadsHere.length === 0)(
    'on the real /proc, a kernel thread is in every table as its stat says, known through its cmdline kept open',
    async () => {
      const first = await readProcTable();
      const fds = readdirSync('/proc/self/fd').length;
      const kthreadd = kthreadsHere[0].pid; // pid 2 where the box's pid namespace is the kernel's: it never ends
      for (let sweep = 0; sweep < 3; sweep++) {
        const t = await readProcTable();
        for (const { pid, ppid, start } of kernelThreads()) {
          // a thread that ended between the two reads is not in both: only those in both are compared
          const p = t.procs.get(pid);
          if (!p) continue;
          expect(p).toMatchObject({ ppid, startTicks: start, argv: [] });
        }
        // known, not read again: the very object of the first table
        expect(t.procs.get(kthreadd)).toBe(first.procs.get(kthreadd));
      }
      // kept through its cmdline, its stat let go; no file a sweep (a worker thread may come or go meanwhile)
      const links = readdirSync('/proc/self/fd').map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      });
      expect(links).toContain(`/proc/${kthreadd}/cmdline`);
      expect(links).not.toContain(`/proc/${kthreadd}/stat`);
      expect(Math.abs(links.length - fds)).toBeLessThan(5);
    },
  );
});

/** The kernel threads this /proc shows (PF_KTHREAD in stat's flags), read plainly: pid, parent, start. */
function kernelThreads(): { pid: number; ppid: number; start: string }[] {
  const out: { pid: number; ppid: number; start: string }[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let text: string;
    try {
      text = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const f = text
      .slice(text.lastIndexOf(')') + 2)
      .trim()
      .split(' ');
    if ((Number(f[6]) & PF_KTHREAD) !== 0) out.push({ pid: Number(name), ppid: Number(f[1]), start: f[19] });
  }
  return out;
}

/** Poll until fn gives a value (not null), within 10 s. */
async function until<T>(fn: () => T | null | Promise<T | null>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}
