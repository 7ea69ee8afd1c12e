// Did the session leave? Every exit path confirms the same way: its process is gone (no /proc entry, a zombie,
// or the pid reused by a later process). Only a missing /proc entry proves the end; a read that fails otherwise
// is no evidence of it.
import { readFile } from 'node:fs/promises';
import { errorCode } from '../errors.js';
import { parseStat, PID_REUSE_SLACK_MS } from '../evidence/proc.js';
import type { ExitContext, ExitTarget } from './types.js';

/** Is this the same process still? /proc/<pid> exists, not a zombie, not a reused pid. */
export async function alive(pid: number, startedAt: string | null): Promise<boolean> {
  try {
    const s = parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
    if (!s || s.state === 'Z' || s.state === 'X') return false;
    const st = startedAt ? Date.parse(startedAt) : NaN;
    return !(Number.isFinite(st) && s.startMs > st + PID_REUSE_SLACK_MS);
  } catch (err) {
    // only a missing /proc entry proves the end; any other failure is not evidence of it
    return !(errorCode(err) === 'ENOENT' || errorCode(err) === 'ESRCH');
  }
}

/** Poll until the process ends or the deadline passes. */
export async function waitForEnd(pid: number, startedAt: string | null, deadline: number, poll = 50): Promise<boolean> {
  for (;;) {
    if (!(await alive(pid, startedAt))) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, Math.min(poll, Math.max(1, deadline - Date.now()))));
  }
}

/** An exit path's confirm(): the process ended by the deadline. */
export function processEnded(ctx: ExitContext, target: Pick<ExitTarget, 'pid' | 'startedAt'>, deadline: number): Promise<boolean> {
  return waitForEnd(target.pid, target.startedAt, deadline, ctx.poll);
}
