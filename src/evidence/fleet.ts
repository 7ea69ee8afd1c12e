// One sweep: every session on the roster, the evidence about it, and its verdict. In four steps, each in a file of
// its own: what is read once for the whole fleet (sweep-sources.ts), each row's probes (row-evidence.ts), the tmux
// server where a row needs it (pane-evidence.ts), each row's verdict and view (session-view.ts).
import type { Config } from '../config.js';
import type { RosterRow } from './roster.js';
import type { AgentView } from './agent-view.js';
import type { ReaperEta } from './claude-reaper.js';
import { memAvailable } from './meminfo.js';
import { pruneFileCache } from './file-cache.js';
import { jobChainReader } from '../store/job-state.js';
import type { DryRunLatches } from '../pipeline/dry-run.js';
import { fleetOverhead, type Overhead } from './claude-code.js';
import { inboxReader } from './files.js';
import { hooksDir } from './hooks.js';
import { listHookFiles } from './hook-events.js';
import type { Task, InvalidTask } from '../tasks/tasks.js';
import { policyFrom, type Decision, type ExpireFacts, type SessionFacts } from '../doctrine/verdict.js';
import { readSources, type Sources } from './sweep-sources.js';
import { rowEvidence, type Sweep } from './row-evidence.js';
import { paneEvidence } from './pane-evidence.js';
import { indexTasks } from './task-evidence.js';
import { lazyField, sessionView } from './session-view.js';
import { filesSeen } from './claude-files.js';
import { unreadableFinding, type UnreadableFinding } from '../doctrine/unreadable.js';
export { ASK_FILE_PREFIX, findPane, inboxPending } from './files.js';
export { sessionJson, snapshotJson } from './fleet-json.js';
export { missingTasksDir } from './sweep-sources.js';
export { couldAct } from './pane-evidence.js';

export interface SessionView extends SessionFacts, Decision {
  row: RosterRow;
  /** What people read: the short id, else the first 8 characters of the sessionId. */
  label: string;
  name: string | null;
  live: boolean | null;
  taskId: string | null;
  taskState: string | null;
  rssBytes: number | null;
  /** The process's start (ms), for per-process keys such as expire's; null when not live. */
  procStartMs: number | null;
  /** When Claude Code's own reaper would retire it (background sessions, claudeDir read): the other reaper, in view. */
  claudeReaper?: ReaperEta;
}

export interface FleetSnapshot {
  at: number;
  host: string;
  roster: { ok: true } | { ok: false; error: string };
  sessions: SessionView[];
  tasks: Task[];
  invalidTasks: InvalidTask[];
  /** Things a person should hear about: invalid task files, skipped roster rows, failed probes. */
  problems: string[];
  probeErrors: Record<string, string>;
  /** What the fleet holds beside its sessions (the daemon, warm spares, people's clients); null when /proc could not be read or RSS was not asked for. */
  overhead: Overhead | null;
  /** Open agent views (`claude agents` TUIs): while one is open every background session it lists may be on a person's screen. */
  agentViews: number;
  /** Those views: each one's pid and the folder its `--cwd` narrows it to (null: it lists every background session). */
  agentViewsOpen: AgentView[];
  /** Whose roster the sweep stood on: the CLI's (`claude agents --json --all`), or Claude Code's own files. */
  rosterFrom: 'cli' | 'files';
  /**
   * Claude Code's own files for the live background sessions (claude-code-unreadable, src/doctrine/unreadable.ts):
   * how many were looked at, and what does not read; null when they are not read (claudeDir null, the roster failed).
   */
  claudeFiles?: { checked: number; unreadable: UnreadableFinding | null } | null;
}

export interface GatherOptions {
  now?: () => number;
  /** Untasked sessions' expire chains (kept in stateDir by expire). */
  expireFacts?: (row: RosterRow, procStartMs: number | null) => ExpireFacts | null;
  /** A chain of another kind holding an untasked session, by its kind's adapter (src/pipeline/chain-kinds/ chainHolds). */
  chainHolds?: (row: RosterRow, procStartMs: number | null) => NonNullable<SessionFacts['evidence']['held']> | null;
  /** Skip RSS (cheaper) when the caller does not need memory. */
  rss?: boolean;
  /** A dry run's latches, over the files' (what it would have latched: src/pipeline/dry-run.ts). */
  dry?: DryRunLatches;
  /** Whose roster: the CLI's (its word: at start, reconcile, a person's exit), or Claude Code's files where they can be read (the default). */
  roster?: 'cli' | 'files';
  /**
   * The tmux server (an interactive session's pane, its clients, a draft in its input box): read for every live
   * interactive session (`all`, the default: what a person reads, and what an exit acts on), or only for those whose
   * verdict could turn on it (`if-needed`: the schedule's sweeps; the others carry `evidence.tmux: 'not-read'`).
   */
  tmux?: 'all' | 'if-needed';
}

export async function gatherFleet(config: Config, opts: GatherOptions = {}): Promise<FleetSnapshot> {
  // the sweep's time is taken before any evidence is read: silences and windows are never overstated
  const at = (opts.now ?? Date.now)();
  const src = await readSources(config, opts);
  const base = {
    at,
    host: config.host,
    rosterFrom: src.rosterFrom,
    tasks: src.tasks.ok ? src.tasks.tasks : [],
    invalidTasks: src.tasks.ok ? src.tasks.invalid : [],
    problems: src.problems,
    probeErrors: src.probeErrors,
    overhead: null,
    agentViews: src.views.length,
    agentViewsOpen: src.views,
    claudeFiles: null,
  };
  // A roster that failed makes every row unknown: there is nothing to judge (DESIGN §4).
  if (!src.roster.ok) return { ...base, roster: { ok: false, error: src.roster.error }, sessions: [] };
  const sweep = await sweepOf(config, opts, src, at);
  const built = src.roster.rows.map((row) => rowEvidence(sweep, row));
  await paneEvidence(sweep, built);
  const counted = new Set<number>(); // every pid some session's memory holds
  const sessions = built.map((b) => sessionView(sweep, b, counted));
  pruneFileCache(); // an ended session's files are not kept
  const claudeDir = config.fleet.claudeDir;
  const seen =
    claudeDir === null
      ? null
      : filesSeen(
          claudeDir,
          sweep.sessionFilesRead,
          built.filter((b) => b.evidence.live !== false).map((b) => b.row),
        );
  const claudeFiles = seen ? { checked: seen.sessions.length, unreadable: unreadableFinding(seen) } : null;
  const snap: FleetSnapshot = { ...base, roster: { ok: true }, sessions, overhead: null, claudeFiles };
  // what the fleet holds beside its sessions is worked out when first read (the census, the web, a report): the
  // schedule's sweeps never read it, and it walks every process's ancestry (and a few environments) each time
  const procs = src.procs;
  if (opts.rss !== false && procs)
    lazyField(snap, 'overhead', () => fleetOverhead(procs, counted, src.cliNames, { claudeDir: config.fleet.claudeDir }));
  return snap;
}

/** What every row's probes share, read once (once the roster has answered). */
async function sweepOf(config: Config, opts: GatherOptions, src: Sources, at: number): Promise<Sweep> {
  const claudeDir = config.fleet.claudeDir;
  const tasksBy = indexTasks(src.tasks);
  const jobChains = jobChainReader(config.stateDir);
  // Claude Code's reaper waits 60 s instead of an hour when free memory is under 1 GiB
  const avail = claudeDir !== null ? memAvailable() : null;
  // Claude Code's per-process files: each live session's messaging socket and tmux pane (docs/claude-code.md)
  const sessionFilesRead = src.sessionFiles ? await src.sessionFiles : null;
  if (sessionFilesRead && !sessionFilesRead.ok) src.problems.push(sessionFilesRead.error);
  const policy = policyFrom(config);
  // Claude Code hook events (optional evidence, docs/hooks.md): one readdir, then only the files of live rows.
  const hookDir = hooksDir(config);
  return {
    ...src,
    config,
    opts,
    at,
    policy,
    tasksBy,
    sessionFilesRead,
    jobChains,
    lowMemory: avail !== null && avail < 1024 * 1024 * 1024,
    hookDir,
    hookFiles: listHookFiles(hookDir),
    inboxOf: inboxReader(config.fleet.inboxDir),
  };
}
