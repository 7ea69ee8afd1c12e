// The resume ledger: a graceful exit keeps the conversation, so sunset can give it back. Every session it
// exited (from the exit ledger) and every one it gave up on (from the alarms), with what resumes it.
import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { listExits, type ExitRecord } from '../store/ledger.js';
import type { Alarm } from '../store/alarms.js';
import { EXIT_PATHS, exitPathOf } from '../agents/index.js';
import type { ExitPath } from '../agents/types.js';
import { resolveSession, type Resolved } from '../doctrine/identity.js';
import { MAX_EXIT_REQUESTS } from '../doctrine/chain.js';
import { keptUntil, listKept, resumeFromOf, transcriptsOf, type KeptMeta, type ResumeFrom } from '../store/kept.js';

/** sunset's copy of an exited session's transcript (src/store/kept.ts): its sizes, when made, when it goes by itself (null: when forgotten). */
export interface KeptCopy {
  bytes: number;
  gzBytes: number;
  keptAt: string;
  until: string | null;
}

export interface ResumeEntry {
  outcome: 'exited' | 'gave-up';
  taskId: string | null;
  sessionId: string;
  id: string | null;
  name?: string | null;
  kind: string | null;
  /** The agent CLI that ran it (claude-code, codex, gemini): its own resume command brings it back. */
  agent?: string;
  /** An agent CLI's session: the transcript sunset saw it write (its CLI resumes from it). */
  transcript?: string | null;
  cwd: string | null;
  at: string;
  why: string;
  rssFreedBytes: number | null;
  /** The command that resumes it, run in `cwd`. */
  resume: string[];
  /** An exited one: where it resumes from — its transcript, sunset's kept copy, or gone. null: gave up on (still running), or projectsDir could not be read. */
  resumeFrom: ResumeFrom | null;
  /** sunset's copy of its transcript, if one is kept. */
  kept: KeptCopy | null;
}

/** Its exit path resumes it; a record from before sunset wrote its kind resumes as it always did: `claude --resume`, here. */
function pathOf(r: { kind?: string | null; agent?: unknown }): ExitPath {
  return exitPathOf({ kind: r.kind ?? null, agent: typeof r.agent === 'string' ? r.agent : null }) ?? EXIT_PATHS['claude-background'];
}

function whyOf(r: ExitRecord & Record<string, unknown>): string {
  if (r.reason === 'person') return `a person's request (${r.by ?? '?'}: ${r.why ?? ''}${r.override ? ', overriding protection' : ''})`;
  if (r.reason === 'expire') return `untasked and idle past the expire window (request ${r.n})`;
  if (r.reason === 'chain') return `${r.chain ?? 'its chain'} finished (request ${r.n} of ${MAX_EXIT_REQUESTS})`;
  if (r.reason === 'job' || !r.taskId) return `its Claude Code job settled done (request ${r.n} of ${MAX_EXIT_REQUESTS})`;
  return `task ${r.taskId} finished (request ${r.n} of ${MAX_EXIT_REQUESTS})`;
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
      ...(typeof r.agent === 'string' ? { agent: r.agent, transcript: typeof r.transcript === 'string' ? r.transcript : null } : {}),
      cwd: r.cwd ?? null,
      at: r.finishedAt,
      why: whyOf(r),
      rssFreedBytes: r.rssBytes ?? null,
      resume: pathOf(r).resumeCommand(config, r.sessionId),
      resumeFrom: null,
      kept: null,
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
      resumeFrom: null,
      kept: null,
    });
  }
  return out.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
}

/** Pure: each exited entry with where it resumes from and its kept copy, given the transcripts there are (null: not known) and the copies. */
export function withResumeFrom(
  entries: ResumeEntry[],
  transcripts: ReadonlySet<string> | null,
  kept: KeptMeta[],
  keepDays: number | null,
): ResumeEntry[] {
  const bySid = new Map(kept.map((m) => [m.sessionId, m]));
  return entries.map((e) => {
    if (e.outcome !== 'exited') return e;
    const m = bySid.get(e.sessionId) ?? null;
    return {
      ...e,
      resumeFrom: transcripts ? resumeFromOf(transcripts.has(e.sessionId), m) : null,
      kept: m ? { bytes: m.bytes, gzBytes: m.gzBytes, keptAt: m.keptAt, until: keptUntil(m, keepDays) } : null,
    };
  });
}

export function loadResumeEntries(config: Config, alarms: Alarm[]): ResumeEntry[] {
  const entries = resumeEntries(config, listExits(config.stateDir), alarms);
  const sids = entries.filter((e) => e.outcome === 'exited').map((e) => e.sessionId);
  const index = sids.length ? transcriptsOf(config, sids) : new Map<string, string>();
  const transcripts = index ? new Set(index.keys()) : null;
  // an agent CLI's session resumes from the transcript its discovery tied it to, where that still is
  for (const e of entries) if (e.agent && e.transcript && existsSync(e.transcript)) transcripts?.add(e.sessionId);
  return withResumeFrom(entries, transcripts, listKept(config.stateDir), config.resume.keepDays);
}

/** The kept copies together: how many, their size, and the limits they are kept under. */
export function keptSummary(config: Pick<Config, 'stateDir' | 'resume'>): {
  copies: number;
  gzBytes: number;
  maxMB: number;
  keepDays: number | null;
  keep: boolean;
} {
  const all = listKept(config.stateDir);
  return { copies: all.length, gzBytes: all.reduce((a, m) => a + m.gzBytes, 0), ...config.resume };
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
  return pathOf(e).resumeArgv(config, e, insideTmux);
}

/** One word for a POSIX shell: left bare when it is plainly safe, else in single quotes. */
export function shellWord(w: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * What a person pastes to bring an exited session back, by where it resumes from. Its transcript (or not known):
 * `(cd CWD && claude --resume SID)` and `sunset resume KEY`. Only sunset's kept copy: `sunset resume KEY` alone —
 * it puts the copy back first; the raw command finds no conversation. Gone: none (null), nothing can resume it.
 */
export function resumeLines(e: ResumeEntry): { shell: string | null; sunset: string } | null {
  if (e.outcome !== 'exited' || !e.resume.length || e.resumeFrom === 'gone') return null;
  const sunset = `sunset resume ${shellWord(e.taskId ?? e.sessionId)}`;
  if (e.resumeFrom === 'kept copy') return { shell: null, sunset };
  const cmd = e.resume.map(shellWord).join(' ');
  return { shell: e.cwd ? `(cd ${shellWord(e.cwd)} && ${cmd})` : cmd, sunset };
}

/**
 * An entry as `sunset exited --json` and GET /api/exited give it: `resume` (the raw command) only where it works —
 * empty once the transcript is gone; `sunsetResume` the `sunset resume KEY` that brings it back (null: nothing does).
 */
export function entryJson(e: ResumeEntry): ResumeEntry & { sunsetResume: string | null } {
  const lines = resumeLines(e);
  return { ...e, resume: lines?.shell ? e.resume : [], sunsetResume: lines?.sunset ?? null };
}
