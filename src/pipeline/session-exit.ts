// How a session leaves: the single implementation (ADR-0010 consequence 3, doctrine D1).
// Background → `<claude> stop <id>`; interactive → `/exit` typed into its pane, then Enter.
// Then wait up to exitConfirm for the process to end. No signal, anywhere: there is no stronger instrument.
// Only the exit worker calls this (D2); everything else enqueues an exit job.
import { readFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import { parseStat, PID_REUSE_SLACK_MS } from '../evidence/proc.js';
import { readRoster } from '../evidence/roster.js';
import { run } from '../run.js';
import { typeIntoPane } from '../evidence/tmux.js';

export interface ExitTarget {
  /** The short id `claude stop` takes: background sessions only (interactive ones have none). */
  id: string | null;
  sessionId: string;
  kind: 'interactive' | 'background';
  pid: number;
  startedAt: string | null;
  /** For interactive sessions: the pane that holds the pid, from fresh evidence. */
  paneId?: string | null;
}

export interface ExitOutcome {
  method: 'claude-stop' | 'typed-exit' | 'typed-exit+claude-stop';
  /** The exit path was invoked (the command ran / the keys were typed). */
  called: boolean;
  /** The process ended within exitConfirm. */
  exited: boolean;
  ms: number;
  error?: string;
}

import { unsafeId } from '../doctrine/ids.js';

export async function sessionExit(target: ExitTarget, config: Config, opts: { poll?: number } = {}): Promise<ExitOutcome> {
  const started = Date.now();
  const bad = target.kind === 'background' ? unsafeId(target.id ?? '') : null;
  if (bad) return { method: target.kind === 'interactive' ? 'typed-exit' : 'claude-stop', called: false, exited: false, ms: 0, error: `refused: ${bad}` };

  if (target.kind === 'background') {
    const r = await stop(target.id!, config);
    const exited = await waitForEnd(target.pid, target.startedAt, started + config.windows.exitConfirm, opts.poll);
    return { method: 'claude-stop', called: true, exited, ms: Date.now() - started, ...(r.ok || exited ? {} : { error: r.error }) };
  }

  if (!target.paneId) return { method: 'typed-exit', called: false, exited: false, ms: 0, error: 'no pane holds this session: nothing can type /exit into it' };
  const typed = await typeIntoPane(config.fleet.tmuxSocket, target.paneId, '/exit', config.probeTimeout);
  if (!typed.ok) return { method: 'typed-exit', called: false, exited: false, ms: Date.now() - started, error: typed.error };
  const deadline = started + config.windows.exitConfirm;
  const ended = await waitForEnd(target.pid, target.startedAt, deadline, opts.poll);
  if (!ended) return { method: 'typed-exit', called: true, exited: false, ms: Date.now() - started };

  // `/exit` can send a session to the background instead of ending it: the same id then lives on
  // as a background row with a new pid, and the background path finishes it. The successor's row can
  // lag the old process's end (or a roster read fail): while the roster still shows this session with
  // no live successor (its old pid, no pid yet) or does not answer, look again, up to windows.starting.
  const successor = await findSuccessor(target, config, Date.now() + config.windows.starting, opts.poll);
  if (!successor) return { method: 'typed-exit', called: true, exited: true, ms: Date.now() - started };
  const r = await stop(successor.id, config);
  const exited = await waitForEnd(successor.pid!, successor.startedAt, Math.max(deadline, Date.now() + config.windows.exitConfirm / 2), opts.poll);
  return { method: 'typed-exit+claude-stop', called: true, exited, ms: Date.now() - started, ...(r.ok || exited ? {} : { error: r.error }) };
}

type Successor = { id: string; pid: number; startedAt: string | null };

async function findSuccessor(target: ExitTarget, config: Config, until: number, poll = 50): Promise<Successor | null> {
  for (;;) {
    const roster = await readRoster(config.fleet.rosterCommand, config.probeTimeout);
    const same = roster.ok ? roster.rows.filter((r) => (target.id !== null && r.id === target.id) || r.sessionId === target.sessionId) : [];
    const next = same.find((r) => r.pid !== null && r.pid !== target.pid && r.kind === 'background');
    if (next) {
      if (next.id === null || unsafeId(next.id) || !(await alive(next.pid!, next.startedAt))) return null;
      return { id: next.id, pid: next.pid!, startedAt: next.startedAt };
    }
    // the session is off the roster (or a pid-less record of a job that is over): it ended
    const pending = !roster.ok || same.some((r) => r.pid === target.pid || (r.pid === null && r.raw.status != null));
    if (!pending || Date.now() >= until) return null;
    await new Promise((r) => setTimeout(r, Math.max(poll, 100)));
  }
}

async function stop(id: string, config: Config) {
  const r = await run([config.fleet.claudeCommand, 'stop', id], { timeoutMs: config.probeTimeout });
  return r.ok ? r : { ...r, error: `${config.fleet.claudeCommand} stop failed: ${r.error}${r.stderr.trim() ? ` (${r.stderr.trim()})` : ''}` };
}

/** Is this the same process still? /proc/<pid> exists, not a zombie, not a reused pid. */
export async function alive(pid: number, startedAt: string | null): Promise<boolean> {
  try {
    const s = parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
    if (!s || s.state === 'Z' || s.state === 'X') return false;
    const st = startedAt ? Date.parse(startedAt) : NaN;
    return !(Number.isFinite(st) && s.startMs > st + PID_REUSE_SLACK_MS);
  } catch (err: any) {
    // only a missing /proc entry proves the end; any other failure is not evidence of it
    return !(err?.code === 'ENOENT' || err?.code === 'ESRCH');
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
