// A sweep's first step: what it reads once for the whole fleet, together — /proc, the roster (Claude Code's files or
// the CLI), the task files, the pins, the transcripts' folder, people's clients — and what a person should hear of
// any of it that failed. Each probe's failure is its own: the others are read all the same (src/evidence/fleet.ts).
import type { Config } from '../config.js';
import { readRoster, type RosterResult, type RosterRow } from './roster.js';
import { agentsRead } from '../agents/clis.js';
import { whichFile } from '../which.js';
import type { FoundSession } from '../agents/agent-cli.js';
import { readProcTable, type ProcTable } from './proc.js';
import { claudeNames, findClients, type Clients } from './clients.js';
import { agentViewsOf, type AgentView } from './agent-view.js';
import { readSessionFiles, type SessionFiles } from './sessions.js';
import { chooseRoster } from './file-roster.js';
import { readPins, type PinsResult } from './claude-code.js';
import { readMade } from '../store/pins-made.js';
import { indexTranscripts } from './files.js';
import { readTasks, type ReadTasksResult } from '../tasks/tasks.js';
import type { GatherOptions } from './fleet.js';

/** What one sweep read for the whole fleet. */
export interface Sources {
  roster: RosterResult;
  rosterFrom: 'cli' | 'files';
  /** null: /proc could not be read (probeErrors.proc says why). */
  procs: ProcTable | null;
  tasks: ReadTasksResult;
  /** null: fleet.claudeDir is null (Claude Code's own files are not read). */
  pins: PinsResult | null;
  /** The pins sunset made itself (stateDir/pins-made.json), read just before the pins file: see readSources. */
  sunsetPins: ReadonlySet<string>;
  transcripts: Map<string, { path: string; mtimeMs: number }> | Error;
  /** Claude Code's per-process files, read once: the file roster's and each live session's socket and pane. */
  sessionFiles: Promise<SessionFiles> | null;
  cliNames: Set<string>;
  /** People's clients; null when /proc could not be read. */
  clients: Clients | null;
  views: AgentView[];
  problems: string[];
  probeErrors: Record<string, string>;
}

/** A tasks folder that does not exist is no tasks (DESIGN §3), and a person should hear it: a typo looks the same. */
export function missingTasksDir(dir: string): string {
  return `no tasks folder at ${dir} (fleet.tasksDir): no session has a task; finished background jobs still leave by their own chain, the rest after windows.expireIdle idle`;
}

export async function readSources(config: Config, opts: GatherOptions): Promise<Sources> {
  const f = config.fleet;
  const probeErrors: Record<string, string> = {};
  const problems: string[] = [];
  const procsRead = readProcTable().catch((err: Error) => err);
  const sessionFiles =
    f.claudeDir === null
      ? null
      : procsRead
          .then((t) => (t instanceof Error ? null : t))
          .then((t) => readSessionFiles(f.claudeDir!, t, (pid) => t?.procs.get(pid)?.startTicks ?? null));
  const chosen = chooseRoster(
    config,
    opts.roster ?? 'files',
    procsRead,
    () => readRoster(f.rosterCommand, config.probeTimeout),
    sessionFiles ?? undefined,
  );
  // sunset's own pins before the pins file: it takes a pin back from the file first and from its list after, so
  // a list read first still names any pin of its the file holds (read the other way round, a pin being taken
  // back looked like a person's for a moment, and a wave's exit requests waited a recheck on it)
  const sunsetPins = new Set(f.claudeDir !== null ? readMade(config.stateDir) : []);
  const [choice, table, tasks, pins] = await Promise.all([
    chosen,
    procsRead,
    readTasks(f.tasksDir),
    f.claudeDir === null ? null : readPins(f.claudeDir),
  ]);
  // the agent CLIs beside Claude Code (src/agents/clis.ts): their sessions join the roster as rows of their own
  const claude = choice.roster.ok ? choice.roster : noClaudeCode(config, choice.roster);
  const roster = claude.ok && !(table instanceof Error) ? await withAgents(config, claude, table, problems) : claude;
  // the transcripts of the sessions that run (a box keeps every past one's)
  const transcripts = indexTranscripts(
    f.projectsDir,
    new Set(roster.ok ? roster.rows.filter((r) => r.pid !== null).map((r) => r.sessionId) : []),
  );

  problems.push(...choice.problems);
  if (!roster.ok) {
    probeErrors.roster = roster.error;
    problems.push(roster.error);
  } else problems.push(...roster.problems);
  if (table instanceof Error) probeErrors.proc = `reading /proc failed: ${table.message}`;
  if (!tasks.ok) probeErrors.tasks = tasks.error;
  if (transcripts instanceof Error) probeErrors.projects = `reading ${f.projectsDir} failed: ${transcripts.message}`;
  if (tasks.ok && tasks.missing) problems.push(missingTasksDir(f.tasksDir));
  for (const bad of tasks.ok ? tasks.invalid : []) problems.push(`task file ${bad.file} is invalid and was left untouched: ${bad.problem}`);
  if (pins && !pins.ok) probeErrors.pins = pins.error;
  for (const k of ['proc', 'tasks', 'projects', 'pins']) if (probeErrors[k]) problems.push(probeErrors[k]);

  const procs = table instanceof Error ? null : table;
  const cliNames = claudeNames(f.claudeCommand, f.attachArgv);
  const clients = procs ? findClients(procs, cliNames, f.attachArgv, { claudeDir: f.claudeDir, isSession: sessionPids(roster) }) : null;
  const views = clients && procs ? agentViewsOf(procs, clients.agentViews, cliNames) : [];
  return {
    roster,
    rosterFrom: choice.from,
    procs,
    tasks,
    pins,
    sunsetPins,
    transcripts,
    sessionFiles,
    cliNames,
    clients,
    views,
    problems,
    probeErrors,
  };
}

/**
 * A box with no Claude Code on it (its roster command not on PATH) but another agent CLI that is read: Claude Code
 * has no sessions here, and the others' are still read. Any other failure of its roster stays a failure.
 */
function noClaudeCode(config: Config, failed: Extract<RosterResult, { ok: false }>): RosterResult {
  const cmd = config.fleet.rosterCommand[0];
  if (!cmd || whichFile(cmd, process.env, process.cwd()) || !agentsRead(config).length) return failed;
  return {
    ok: true,
    rows: [],
    problems: [`Claude Code is not installed (${cmd} is not on PATH): only the other agent CLIs' sessions are read`],
  };
}

/** The roster with every read agent CLI's sessions added (discovery's problems said; a failed one is no rows). */
async function withAgents(
  config: Config,
  roster: Extract<RosterResult, { ok: true }>,
  procs: ProcTable,
  problems: string[],
): Promise<RosterResult> {
  const read = agentsRead(config);
  if (!read.length) return roster;
  const at = Date.now();
  const found = await Promise.all(
    read.map(({ cli, cfg }) =>
      cli
        .discover(procs, cfg, at)
        .catch((err: Error) => ({ sessions: [], problems: [`${cli.name}: its sessions could not be read: ${err.message}`] })),
    ),
  );
  const rows = [...roster.rows];
  for (const d of found) {
    problems.push(...d.problems);
    rows.push(...d.sessions.map(agentRow));
  }
  return { ...roster, rows };
}

/** An agent CLI's session as a roster row: interactive, no short id, busy while its transcript or a tool says so. */
export function agentRow(f: FoundSession): RosterRow {
  const status = f.turnInFlight === true || f.toolPids.length > 0 ? 'busy' : f.turnInFlight === false ? 'idle' : 'unknown';
  return {
    id: null,
    sessionId: f.sessionId,
    name: null,
    kind: 'interactive',
    pid: f.pid,
    state: null,
    status,
    waitingFor: null,
    cwd: f.cwd,
    startedAt: f.startedAt,
    attached: null,
    raw: { agent: f.agent, transcript: f.transcript.path, ...(f.toolPids.length ? { toolPids: f.toolPids } : {}) },
    agent: f.agent,
    transcript: f.transcript,
  };
}

/** Is a pid one of the roster's live sessions? The set is made when first asked (only a plain `claude` asks). */
function sessionPids(roster: RosterResult): (pid: number) => boolean {
  let pids: Set<number> | null = null;
  return (pid) => {
    pids ??= new Set(roster.ok ? roster.rows.flatMap((r) => (r.pid === null ? [] : [r.pid])) : []);
    return pids.has(pid);
  };
}
