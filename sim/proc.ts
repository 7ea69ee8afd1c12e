// What the real-client harnesses (sim/real/ for Claude Code, sim/agents/ for the other agent CLIs) read of
// /proc to find, weigh and wait on the processes they started: test-side code, never sunset's own reader
// (src/evidence/proc.ts). Every read tolerates a process that ends meanwhile.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll until cond() is true (a throw counts as not yet) or the deadline passes; returns whether it became true. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await cond()) return true;
    } catch {
      /* not yet */
    }
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

export interface ProcStat {
  state: string;
  ppid: number;
  pgid: number;
  /** clock ticks after boot: with the pid, names one process (a pid is reused) */
  starttime: number;
}

export function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], ppid: Number(f[1]), pgid: Number(f[2]), starttime: Number(f[19]) };
  } catch {
    return null;
  }
}

/** alive = /proc/<pid> exists and is not a zombie. */
export function pidAlive(pid: number | null | undefined): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  const st = procStat(pid);
  return !!st && st.state !== 'Z' && st.state !== 'X';
}

export function cmdline(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!raw) return null;
    const parts = raw.split('\0');
    if (parts[parts.length - 1] === '') parts.pop();
    return parts;
  } catch {
    return null;
  }
}

/** Whether `entry` (e.g. `HOME=/tmp/x`) is one of the process's environment entries (NUL-separated). */
export function environHas(pid: number, entry: Buffer): boolean {
  try {
    const env = readFileSync(`/proc/${pid}/environ`);
    let i = env.indexOf(entry);
    while (i >= 0) {
      if (i === 0 || env[i - 1] === 0) return true;
      i = env.indexOf(entry, i + 1);
    }
    return false;
  } catch {
    return false;
  }
}

export function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s*kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export function livePids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map(Number);
  } catch {
    return [];
  }
}

/** What each of a process's file descriptors points at (readlink of /proc/<pid>/fd/*): paths, `socket:[n]`, … */
export function fdTargets(pid: number): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const fd of fds) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}
