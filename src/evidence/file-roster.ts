// The roster from the files the CLI itself reads (docs/claude-code.md): `~/.claude/sessions/<pid>.json` for
// every live session (liveness by pid and process start, never by a stale file), `~/.claude/jobs/<id>/state.json`
// for each background job's state and for the records (jobs whose session has ended). One readdir of each folder
// and a stat-keyed cache of the state files: a sweep costs what the evidence costs (~1 ms on a real fleet),
// where `claude agents --json --all` costs 0.2–0.4 s and a 134 MB child. The CLI's own word is still taken where
// it matters — at start, at each reconcile, before an exit takes a session as gone — and wins when they disagree.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ProcTable } from './proc.js';
import { jsonObject } from './claude-code.js';
import { readSessionFiles, type SessionFiles } from './sessions.js';
import { readCachedText } from './file-cache.js';
import { parseRosterRows, type RosterResult } from './roster.js';
import { errorCode } from '../errors.js';
import { daemonRosterKnown } from './claude-files.js';

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

/** Every job's state.json (parsed again only when its stat moved: file-cache.ts). */
function readJobs(jobsDir: string): Map<string, Record<string, unknown>> | Error {
  let names: string[];
  try {
    names = readdirSync(jobsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return new Map();
    return err instanceof Error ? err : new Error(String(err));
  }
  const out = new Map<string, Record<string, unknown>>();
  for (const n of names) {
    // a job folder with no state (the agent view's own session) is not a job; one that does not parse is left out
    const r = readCachedText(join(jobsDir, n, 'state.json'));
    const o = r.ok ? jsonObject(r.text) : null;
    if (o) out.set(n, o);
  }
  return out;
}

/** The roster state the CLI shows for a job: a permission prompt (tempo blocked) reads blocked. */
function rosterState(job: Record<string, unknown> | undefined): string | undefined {
  if (!job) return undefined;
  if (job.tempo === 'blocked' && job.state === 'working') return 'blocked';
  return str(job.state);
}

/**
 * The roster, in the shapes `claude agents --json --all` prints (and through the same parser): live rows from
 * the session files whose process still runs, records from the jobs whose session has ended. `ok: false` when
 * a folder cannot be read — the caller then asks the CLI.
 */
export async function readFileRoster(claudeDir: string, procs: ProcTable, sessionFiles?: Promise<SessionFiles>): Promise<RosterResult> {
  const files = await (sessionFiles ?? readSessionFiles(claudeDir, procs, (pid) => procs.procs.get(pid)?.startTicks ?? null));
  const jobs = readJobs(join(claudeDir, 'jobs'));
  if (!files.ok) return { ok: false, error: files.error };
  // a running process whose file cannot be read: the files cannot say what it is, so they are not the roster
  if (files.unreadable.length)
    return {
      ok: false,
      error: `${join(claudeDir, 'sessions')}/${files.unreadable[0]}.json${files.unreadable.length > 1 ? ` (and ${files.unreadable.length - 1} more)` : ''} does not parse`,
    };
  if (jobs instanceof Error)
    return { ok: false, error: `cannot read ${join(claudeDir, 'jobs')}: ${(jobs as NodeJS.ErrnoException).code ?? jobs.message}` };
  const rows: Record<string, unknown>[] = [];
  const liveJobs = new Set<string>();
  for (const f of files.byPid.values()) {
    if (f.spare || !f.sessionId) continue; // the agent view's own session is not on the roster
    const raw = f.raw;
    const background = f.kind === 'bg';
    const job = background && f.jobId ? jobs.get(f.jobId) : undefined;
    if (background && f.jobId) liveJobs.add(f.jobId);
    rows.push({
      pid: f.pid,
      ...(background ? { id: f.jobId } : {}),
      cwd: str(raw.cwd) ?? str(job?.cwd),
      kind: background ? 'background' : 'interactive',
      startedAt: raw.startedAt,
      sessionId: f.sessionId,
      name: str(raw.name) ?? str(job?.name),
      status: str(raw.status),
      ...(str(raw.waitingFor) ? { waitingFor: raw.waitingFor } : {}),
      ...(background ? { state: rosterState(job) } : {}),
    });
  }
  for (const [id, job] of jobs) {
    if (liveJobs.has(id) || !str(job.sessionId)) continue;
    const created = str(job.createdAt);
    rows.push({
      id,
      cwd: str(job.cwd),
      kind: 'background',
      startedAt: created && Number.isFinite(Date.parse(created)) ? Date.parse(created) : undefined,
      sessionId: job.sessionId,
      name: str(job.name),
      state: rosterState(job),
    });
  }
  return parseRosterRows(rows);
}

// ---------------------------------------------------------------------------------------------------------
// which roster a sweep takes

/** Once the CLI has listed a live session its files did not, this process asks the CLI alone (a CLI version whose files read otherwise). */
let filesUntrusted: string | null = null;

/** For tests: forget a distrust. */
export function trustFilesAgain(): void {
  filesUntrusted = null;
}

export interface RosterChoice {
  roster: RosterResult;
  from: 'cli' | 'files';
  /** What a person should hear: the CLI and the files disagreed, the files could not be read. */
  problems: string[];
}

/**
 * The roster a sweep stands on. `want: 'cli'` (start, reconcile, an exit's "gone"): the CLI's word, checked
 * against the files; else the files where they can be read (fleet.rosterFrom auto: once the daemon's roster
 * exists, i.e. the real CLI with background sessions), else the CLI.
 */
export async function chooseRoster(
  config: {
    fleet: { rosterFrom: 'auto' | 'cli' | 'files'; claudeDir: string | null; rosterCommand: readonly string[] };
    probeTimeout: number;
  },
  want: 'cli' | 'files',
  procs: Promise<ProcTable | Error>,
  cli: () => Promise<RosterResult>,
  /** The sweep's own read of the session files (so they are read once per sweep). */
  sessionFiles?: Promise<SessionFiles>,
): Promise<RosterChoice> {
  const f = config.fleet;
  const usable =
    f.claudeDir !== null &&
    f.rosterFrom !== 'cli' &&
    !filesUntrusted &&
    // a daemon roster of a protocol sunset does not know: its files are not stood on (claude-code-unreadable)
    daemonRosterKnown(f.claudeDir) &&
    (f.rosterFrom === 'files' || existsSync(join(f.claudeDir, 'daemon', 'roster.json')));
  if (!usable || want === 'cli') {
    const roster = await cli();
    const problems: string[] = [];
    if (usable && roster.ok && f.claudeDir !== null) {
      const table = await procs;
      if (!(table instanceof Error)) {
        const files = await readFileRoster(f.claudeDir, table, sessionFiles);
        const said = disagreement(roster, files);
        if (said) {
          // a file that did not parse this once (mid-write) is no reason to stop reading them
          const distrust = said.startsWith('the CLI lists');
          problems.push(`${said}: the CLI's word is taken${distrust ? '; its files are not read again by this process' : ''}`);
          if (distrust) filesUntrusted = said;
        }
      }
    }
    return { roster, from: 'cli', problems };
  }
  const table = await procs;
  if (table instanceof Error) return { roster: await cli(), from: 'cli', problems: [] };
  const files = await readFileRoster(f.claudeDir!, table, sessionFiles);
  if (files.ok) return { roster: files, from: 'files', problems: [] };
  return { roster: await cli(), from: 'cli', problems: [`Claude Code's files could not be read (${files.error}): asked the CLI`] };
}

/** Live sessions one lists and the other does not (by pid), in words; null when they agree. */
export function disagreement(cli: RosterResult, files: RosterResult): string | null {
  if (!cli.ok) return null;
  if (!files.ok) return `Claude Code's files could not be read (${files.error})`;
  const pids = (r: RosterResult) => new Set(r.ok ? r.rows.filter((x) => x.pid !== null).map((x) => x.pid!) : []);
  const a = pids(cli);
  const b = pids(files);
  const onlyCli = [...a].filter((p) => !b.has(p));
  const onlyFiles = [...b].filter((p) => !a.has(p));
  if (onlyCli.length)
    return `the CLI lists live session${onlyCli.length === 1 ? '' : 's'} (pid ${onlyCli.join(', ')}) that Claude Code's files do not`;
  // a session started or ended between the two reads: said, not held against the files
  if (onlyFiles.length)
    return `Claude Code's files show live session${onlyFiles.length === 1 ? '' : 's'} (pid ${onlyFiles.join(', ')}) the CLI does not list`;
  return null;
}
