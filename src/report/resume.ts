// The resume ledger: a graceful exit keeps the conversation, so sunset can give it back. Every session it
// exited (from the exit ledger) and every one it gave up on (from the alarms), with what resumes it.
import type { Config } from '../config.js';
import { listExits, type ExitRecord } from '../store/ledger.js';
import type { Alarm } from '../store/alarms.js';
import { tmuxArgv } from '../evidence/tmux.js';
import { resolveSession, type Resolved } from '../doctrine/identity.js';

export interface ResumeEntry {
  outcome: 'exited' | 'gave-up';
  taskId: string | null;
  sessionId: string;
  id: string | null;
  name?: string | null;
  kind: string | null;
  cwd: string | null;
  at: string;
  why: string;
  rssFreedBytes: number | null;
  /** The command that resumes it, run in `cwd`. */
  resume: string[];
}

export function resumeCommand(config: Pick<Config, 'fleet'>, sessionId: string): string[] {
  const argv = config.fleet.resumeCommand ?? [config.fleet.claudeCommand, '--resume', '{sessionId}'];
  return argv.map((w) => w.replace(/\{sessionId\}/g, sessionId));
}

function whyOf(r: ExitRecord & Record<string, unknown>): string {
  if (r.reason === 'person') return `a person's request (${r.by ?? '?'}: ${r.why ?? ''}${r.override ? ', overriding protection' : ''})`;
  if (r.reason === 'expire') return `untasked and idle past the expire window (request ${r.n})`;
  if (r.reason === 'job' || !r.taskId) return `its Claude Code job settled done (request ${r.n} of 3)`;
  return `task ${r.taskId} finished (request ${r.n} of 3)`;
}

/** Pure over the ledger and the alarms: newest first. */
export function resumeEntries(config: Pick<Config, 'fleet'>, exits: ExitRecord[], alarms: Alarm[]): ResumeEntry[] {
  const out: ResumeEntry[] = [];
  for (const r of exits as Array<ExitRecord & Record<string, unknown>>) {
    if (r.outcome !== 'exited' || !r.finishedAt) continue;
    out.push({
      outcome: 'exited',
      taskId: r.taskId ?? null,
      sessionId: r.sessionId,
      id: r.id ?? null,
      name: (r.name as string | null | undefined) ?? null,
      kind: r.kind ?? null,
      cwd: r.cwd ?? null,
      at: r.finishedAt,
      why: whyOf(r),
      rssFreedBytes: r.rssBytes ?? null,
      resume: resumeCommand(config, r.sessionId),
    });
  }
  for (const a of alarms) {
    if (a.kind !== 'session-will-not-exit' || !a.sessionId) continue;
    out.push({
      outcome: 'gave-up',
      taskId: a.taskId ?? null,
      sessionId: a.sessionId,
      id: (a.id as string) ?? null,
      kind: null,
      cwd: null,
      at: a.at,
      why: a.message,
      rssFreedBytes: null,
      resume: [],
    });
  }
  return out.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
}

export function loadResumeEntries(config: Config, alarms: Alarm[]): ResumeEntry[] {
  return resumeEntries(config, listExits(config.stateDir), alarms);
}

/** The newest exited entry for a task id, or a session's short id, sessionId, a unique prefix of either, or name. */
export function findExited(entries: ResumeEntry[], key: string): ResumeEntry | null {
  const r = lookupExited(entries, key);
  return r.kind === 'one' ? r.row : null;
}

export function lookupExited(entries: ResumeEntry[], key: string): Resolved<ResumeEntry> {
  const exited = entries.filter((e) => e.outcome === 'exited');
  const byTask = exited.find((e) => e.taskId === key);
  if (byTask) return { kind: 'one', row: byTask };
  return resolveSession(exited, key); // newest first: several exits of one session resolve to the newest
}

/**
 * The argv `sunset resume` hands to admit: an interactive session comes back in a new tmux window
 * (a new detached session on the configured socket when not inside tmux); a background one runs here.
 */
export function resumeArgv(config: Pick<Config, 'fleet'>, e: ResumeEntry, insideTmux: boolean): { argv: string[]; attach: string | null } {
  if (e.kind !== 'interactive') return { argv: e.resume, attach: null };
  const cwd = e.cwd ?? '.';
  if (insideTmux && !config.fleet.tmuxSocket) return { argv: ['tmux', 'new-window', '-c', cwd, '--', ...e.resume], attach: null };
  const name = `sunset-resume-${(e.id ?? e.sessionId).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)}`;
  const argv = tmuxArgv(config.fleet.tmuxSocket, 'new-session', '-d', '-s', name, '-c', cwd, '--', ...e.resume);
  return { argv, attach: tmuxArgv(config.fleet.tmuxSocket, 'attach', '-t', name).join(' ') };
}

/** One word for a POSIX shell: left bare when it is plainly safe, else in single quotes. */
export function shellWord(w: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/** What a person pastes to bring an exited session back: `(cd CWD && claude --resume SID)`, and `sunset resume KEY`. */
export function resumeLines(e: ResumeEntry): { shell: string; sunset: string } | null {
  if (e.outcome !== 'exited' || !e.resume.length) return null;
  const cmd = e.resume.map(shellWord).join(' ');
  return { shell: e.cwd ? `(cd ${shellWord(e.cwd)} && ${cmd})` : cmd, sunset: `sunset resume ${shellWord(e.taskId ?? e.sessionId)}` };
}
