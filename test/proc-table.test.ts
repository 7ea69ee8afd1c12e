// readProcTable on a /proc of our own making: what a sweep keeps between reads (argv, kernel threads) and
// what makes it read again (a new comm, a pid whose /proc folder was made anew).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProcTable } from '../src/evidence/proc.js';

const PF_KTHREAD = 0x00200000;
/** A stat line: pid (comm) state ppid pgrp session tty tpgid flags … starttime (field 22). */
const stat = (pid: number, comm: string, ppid: number, flags = 0x400000, start = 100) => `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 ${flags} ${Array(12).fill(0).join(' ')} ${start} 0 0\n`;

function proc(root: string, pid: number, text: string, argv: string[]) {
  mkdirSync(join(root, String(pid)), { recursive: true });
  writeFileSync(join(root, String(pid), 'stat'), text);
  writeFileSync(join(root, String(pid), 'cmdline'), argv.length ? argv.join('\0') + '\0' : '');
}

describe('readProcTable', () => {
  it('keeps a settled process’s argv until its comm changes, and a kernel thread until its /proc folder is made anew', async () => {
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

      // a kernel thread's stat is not read again while its folder stays; a pid reused is a new folder, read at once
      writeFileSync(join(root, '10', 'stat'), stat(10, 'kworker/0:1', 2, PF_KTHREAD, 999));
      t = await readProcTable(root);
      expect(t.procs.get(10)?.startTicks).toBe('100');
      rmSync(join(root, '10'), { recursive: true });
      await new Promise((r) => setTimeout(r, 20)); // a new folder's ctime differs
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
});
