// The sweep: gather every piece of evidence for the whole fleet with a fixed number of child
// processes (one roster call, one tmux call), then judge every row with the one verdict.
import { join } from 'node:path';
import type { Config } from '../config.js';
import { labelOf, readRoster, type RosterRow } from './roster.js';
import { attachedTo, claudeNames, findClients, isInTree, liveness, pidsRss, readProcTable } from './proc.js';
import { readSessionFiles } from './sessions.js';
import { chooseRoster } from './file-roster.js';
import { claudeReaperEta, type ReaperEta } from './claude-reaper.js';
import { memAvailable } from './meminfo.js';
import { jobChainReader, jobKey } from '../store/job-state.js';
import { readMade } from '../store/pins-made.js';
import { expireKey } from '../store/expire-state.js';
import type { DryRunLatches } from '../pipeline/dry-run.js';
import { fleetOverhead, readJobState, readPins, sessionPids, type Overhead } from './claude-code.js';
import { listPanes, panesDrafts } from './tmux.js';
import { findPane, indexTranscripts, inboxPending } from './files.js';
export { ASK_FILE_PREFIX, findPane, inboxPending } from './files.js';
export { sessionJson, snapshotJson } from './fleet-json.js';
import { readTasks, type Task, type InvalidTask } from '../tasks/tasks.js';
import { hookFacts, hooksDir } from './hooks.js';
import { readExit } from '../store/ledger.js';
import { jobExitId, requestExitId } from '../../queues/session-exit.js';
import { hookFileName, listHookFiles, readHookState } from './hook-events.js';
import { decide, policyFrom, type Decision, type Evidence, type ExpireFacts, type SessionFacts, type TaskFacts } from '../doctrine/verdict.js';

/** A pid-less row in one of these job states has ended; any other young pid-less row may still be starting. */
const ENDED_STATES = new Set(['stopped', 'done', 'failed']);

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
  /** Open agent views (`claude agents` TUIs): while one is open every background session may be on a person's screen. */
  agentViews: number;
  /** Whose roster the sweep stood on: the CLI's (`claude agents --json --all`), or Claude Code's own files. */
  rosterFrom: 'cli' | 'files';
}

export interface GatherOptions {
  now?: () => number;
  /** Untasked sessions' expire chains (kept in stateDir by expire). */
  expireFacts?: (row: RosterRow, procStartMs: number | null) => ExpireFacts | null;
  /** Skip RSS (cheaper) when the caller does not need memory. */
  rss?: boolean;
  /** A dry run's latches, over the files' (what it would have latched: src/pipeline/dry-run.ts). */
  dry?: DryRunLatches;
  /** Whose roster: the CLI's (its word: at start, reconcile, just before an exit), or Claude Code's files where they can be read (the default). */
  roster?: 'cli' | 'files';
}

/** A tasks folder that does not exist is no tasks (DESIGN §3), and a person should hear it: a typo looks the same. */
export function missingTasksDir(dir: string): string {
  return `the tasks folder ${dir} does not exist: no session has a task, so every live one is judged as untasked (expire after windows.expireIdle) — check fleet.tasksDir`;
}

export async function gatherFleet(config: Config, opts: GatherOptions = {}): Promise<FleetSnapshot> {
  const now = opts.now ?? Date.now;
  const f = config.fleet;
  const probeErrors: Record<string, string> = {};
  const problems: string[] = [];

  // the sweep's time is taken before any evidence is read: silences and windows are never overstated
  const at = now();
  const procsRead = readProcTable().catch((err: Error) => err);
  const chosen = chooseRoster(config, opts.roster ?? 'files', procsRead, () => readRoster(f.rosterCommand, config.probeTimeout));
  const [choice, panes, table, tasks, transcripts, pins] = await Promise.all([
    chosen,
    listPanes(f.tmuxSocket, config.probeTimeout),
    procsRead,
    readTasks(f.tasksDir),
    indexTranscripts(f.projectsDir),
    f.claudeDir === null ? null : readPins(f.claudeDir),
  ]);

  const roster = choice.roster;
  problems.push(...choice.problems);
  if (!roster.ok) {
    probeErrors.roster = roster.error;
    problems.push(roster.error);
  } else problems.push(...roster.problems);
  if (!panes.ok) probeErrors.tmux = panes.error;
  if (table instanceof Error) probeErrors.proc = `reading /proc failed: ${table.message}`;
  if (!tasks.ok) probeErrors.tasks = tasks.error;
  if (transcripts instanceof Error) probeErrors.projects = `reading ${f.projectsDir} failed: ${transcripts.message}`;
  if (tasks.ok && tasks.missing) problems.push(missingTasksDir(f.tasksDir));
  const invalid = tasks.ok ? tasks.invalid : [];
  for (const bad of invalid) problems.push(`task file ${bad.file} is invalid and was left untouched: ${bad.problem}`);
  if (pins && !pins.ok) probeErrors.pins = pins.error;
  for (const k of ['tmux', 'proc', 'tasks', 'projects', 'pins']) if (probeErrors[k]) problems.push(probeErrors[k]);

  const procs = table instanceof Error ? null : table;
  const cliNames = claudeNames(f.claudeCommand, f.attachArgv);
  const clients = procs ? findClients(procs, cliNames, f.attachArgv, f.claudeDir) : null;
  const agentViews = clients?.agentViews.length ?? 0;
  const base = { at, host: config.host, rosterFrom: choice.from, tasks: tasks.ok ? tasks.tasks : [], invalidTasks: invalid, problems, probeErrors, overhead: null, agentViews };
  // A roster that failed makes every row unknown: there is nothing to judge (DESIGN §4).
  if (!roster.ok) return { ...base, roster: { ok: false, error: roster.error }, sessions: [] };
  const byTask = indexTasks(tasks.ok ? tasks.tasks : []);
  const jobChains = jobChainReader(config.stateDir);
  // Claude Code's reaper waits 60 s instead of an hour when free memory is under 1 GiB
  const avail = f.claudeDir !== null ? memAvailable() : null;
  const lowMemory = avail !== null && avail < 1024 * 1024 * 1024;
  const sunsetPins = new Set(f.claudeDir !== null ? readMade(config.stateDir) : []);
  // Claude Code's per-process files: each live session's messaging socket and tmux pane (docs/claude-code.md)
  const sessionFiles = f.claudeDir !== null ? await readSessionFiles(f.claudeDir, procs, (pid) => procs?.procs.get(pid)?.startTicks ?? null) : null;
  if (sessionFiles && !sessionFiles.ok) problems.push(sessionFiles.error);
  const counted = new Set<number>(); // every pid some session's memory holds
  const policy = policyFrom(config);
  // Claude Code hook events (optional evidence, docs/hooks.md): one readdir, then only the files of live rows.
  const hookDir = hooksDir(config);
  const hookFiles = listHookFiles(hookDir);

  // drafts in interactive sessions' input boxes: one tmux call for every pane (a person's draft is never typed over)
  const drafts =
    panes.ok && procs && roster.rows.some((r) => r.kind === 'interactive' && r.pid !== null)
      ? await panesDrafts(
          f.tmuxSocket,
          roster.rows.flatMap((r) => (r.kind === 'interactive' && r.pid !== null ? [findPane(panes.panes, procs, r.pid)?.paneId ?? ''] : [])).filter(Boolean),
          config.probeTimeout,
        )
      : new Map<string, boolean | null>();
  const sessions = await Promise.all(
    roster.rows.map(async (row): Promise<SessionView> => {
      const failures: string[] = [];
      const paneNotes: string[] = []; // what the sweep saw that a person should read beside the verdict
      let reaper: ReaperEta | undefined;
      let live: boolean | null = null;
      let liveWhy: string | undefined;
      let procStartMs: number | null = null;
      // a new `claude --bg` shows no pid for about a second: starting, not a record (it holds a slot, and no chain ends on it)
      const startedMs = row.startedAt ? Date.parse(row.startedAt) : NaN;
      const starting = row.pid === null && row.kind !== 'interactive' && !ENDED_STATES.has(row.state ?? '') && at - startedMs < config.windows.starting && at - startedMs > -config.windows.starting;
      if (row.pid === null) live = false;
      else if (procs) {
        const l = liveness(procs, row.pid, row.startedAt);
        live = l.alive;
        liveWhy = l.why;
        if (live) procStartMs = procs.procs.get(row.pid)?.startMs ?? null;
      } else failures.push('proc');

      const evidence: Evidence = {
        live,
        ...(liveWhy ? { liveWhy } : {}),
        status: row.status,
        ...(row.waitingFor ? { waitingFor: row.waitingFor } : {}),
        rosterState: row.state,
        silenceMs: null,
        attached: null,
        inboxPending: null,
        probeFailures: failures,
        task: null,
        openTasks: [],
        invalidTasks: [],
      };
      const view = (): SessionView => {
        const facts: SessionFacts = { id: row.id, sessionId: row.sessionId, kind: row.kind, pid: row.pid, evidence, ...(starting ? { starting } : {}) };
        const d = decide(facts, policy, at);
        if (paneNotes.length) d.notes = [...d.notes, ...paneNotes];
        return {
          ...facts,
          ...d,
          row,
          label: labelOf(row),
          name: row.name,
          live: row.pid === null ? (starting ? null : false) : live,
          taskId: evidence.task?.id ?? null,
          taskState: evidence.task?.state ?? null,
          rssBytes: null,
          procStartMs,
          ...(reaper ? { claudeReaper: reaper } : {}),
        };
      };
      // Records and gone rows need no further evidence (but a record's pin: Claude Code's reaper skips a pinned job, so it tells who ended it).
      if (row.pid === null && row.id !== null && pins && pins.ok) evidence.pinned = pins.pins.has(row.id);
      if (row.pid === null || live === false) return view();
      const sf = sessionFiles?.ok ? sessionFiles.byPid.get(row.pid) : undefined;
      // the session's messaging socket: how the one message reaches its model (null: the file names none)
      if (f.claudeDir !== null) evidence.socket = sf?.socket ?? null;
      if (sf?.socket && sf.features.includes('notify_idle')) evidence.notifyIdle = true;
      // its file did not parse (caught mid-write, or a shape we do not know): whether it has a socket is unknown
      if (sessionFiles?.ok && sessionFiles.unreadable.includes(row.pid)) failures.push('session-file');

      // Tasks
      if (!tasks.ok) failures.push('tasks');
      const named = [...new Set([...(byTask.get(row.sessionId) ?? []), ...(row.id === null ? [] : (byTask.get(row.id) ?? []))])];
      const open = named.filter((t) => !t.terminal);
      evidence.openTasks = open.map((t) => t.id);
      const terminal = named.filter((t) => t.terminal).sort((a, b) => b.orderKey - a.orderKey || (a.id < b.id ? 1 : -1));
      const driving = open[0] ?? terminal[0];
      if (driving) evidence.task = opts.dry ? opts.dry.task(taskFacts(driving, config.stateDir)) : taskFacts(driving, config.stateDir);
      evidence.invalidTasks = invalid.filter((bad) => names(bad, row)).map((bad) => bad.name);

      // Transcript silence
      if (transcripts instanceof Error) failures.push('projects');
      else {
        const tr = transcripts.get(row.sessionId);
        if (tr) {
          evidence.transcript = tr.path;
          evidence.silenceMs = Math.max(0, Math.floor(at - tr.mtimeMs));
        } else evidence.transcript = null;
      }

      // Attached clients and the pane
      if (row.kind === 'interactive') {
        if (!panes.ok) failures.push('tmux');
        else if (procs) {
          const byTree = findPane(panes.panes, procs, row.pid);
          // the pane its session file names, when that pane (on the configured tmux server) holds this process
          const named = sf?.paneId ? panes.panes.find((p) => p.paneId === sf.paneId && !p.dead) : undefined;
          const byFile = named && isInTree(procs, named.panePid, row.pid) ? named : undefined;
          const pane = byFile ?? byTree;
          if (sf?.paneId && !byFile) paneNotes.push(byTree ? `its session file names tmux pane ${sf.paneId}, but ${byTree.paneId} holds it: typing into ${byTree.paneId}` : `its session file names tmux pane ${sf.paneId} (${sf.tmux}), which is not on the configured tmux server (fleet.tmuxSocket ${f.tmuxSocket ?? 'default'})`);
          evidence.pane = pane ? { paneId: pane.paneId, dead: pane.dead, clients: pane.clients, sessionName: pane.sessionName, ...(byFile ? { from: 'session-file' } : { from: 'process-tree' }) } : null;
          if (pane) {
            // the pane named by the session file may not be the one the tree search read: unknown then, until the next sweep
            evidence.draft = drafts.has(pane.paneId) ? drafts.get(pane.paneId)! : null;
            evidence.attached = pane.clients > 0;
            evidence.attachedBy = 'tmux';
          } else evidence.attached = false;
        }
        if (row.attached === true) {
          evidence.attached = true;
          evidence.attachedBy = 'roster';
        }
      } else if (row.attached !== null) {
        evidence.attached = row.attached;
        evidence.attachedBy = 'roster';
      } else if (clients) {
        const by = attachedTo(clients.attach, row);
        evidence.attached = by.length > 0;
        evidence.attachedBy = by.length ? `claude attach (pid ${by.join(', ')})` : 'proc';
      }
      if (row.kind !== 'interactive' && agentViews) evidence.agentViews = agentViews;

      // Claude Code's own files: the job's state (in flight, blocked and what it asks), a person's pin
      if (row.kind !== 'interactive' && f.claudeDir !== null) {
        evidence.job = row.id === null ? null : await readJobState(f.claudeDir, row.id);
        // a pin sunset made itself (a task still open) is not a person's
        evidence.pinned = pins && pins.ok ? row.id !== null && pins.pins.has(row.id) && !sunsetPins.has(row.id) : null;
        reaper = claudeReaperEta(evidence.job, { pinned: pins && pins.ok ? row.id !== null && pins.pins.has(row.id) : null, attached: evidence.attached, lowMemory });
      }

      // Inbox
      evidence.inboxPending = await inboxPending(join(f.inboxDir, row.sessionId));
      if (evidence.inboxPending === null) failures.push('inbox');

      // Hooks: absent or unreadable is no evidence at all (it never protects nor clears anything)
      if (hookFiles?.has(hookFileName(row.sessionId))) {
        const h = hookFacts(readHookState(hookDir, row.sessionId), at, config.hooks?.freshFor ?? 15 * 60_000);
        if (h) evidence.hooks = h;
      }

      const untasked = !evidence.task && !evidence.openTasks.length && !evidence.invalidTasks.length;
      // a finished Claude Code job: its own chain (grace, the ask, requests), its latches in stateDir
      if (untasked && f.jobChain && row.kind === 'background' && row.id !== null && evidence.job) {
        const key = jobKey(row.id, String(Math.round(procStartMs ?? 0)));
        const rec = jobChains(key);
        const settled = evidence.job.state === 'done' && evidence.job.inFlight === 0;
        if (rec?.askedAt || settled) {
          const { shortId: _s, sessionId: _i, start: _t, ...facts } = rec ?? { shortId: '', sessionId: '', start: '', requests: 0 };
          const startedAt = facts.startedAt ?? evidence.job.settledAt ?? evidence.job.updatedAt ?? undefined;
          if (facts.requests > 0 && !facts.lastExitFinishedAt) {
            const finished = readExit(config.stateDir, jobExitId(row.id, String(Math.round(procStartMs ?? 0)), facts.requests))?.finishedAt;
            if (finished) facts.lastExitFinishedAt = finished;
          }
          const withStart = { ...facts, ...(startedAt ? { startedAt } : {}) };
          evidence.native = { key, facts: opts.dry ? opts.dry.facts(`job/${key}`, withStart) : withStart };
        }
      }
      if (untasked && !evidence.native && opts.expireFacts) {
        const x = opts.expireFacts(row, procStartMs);
        evidence.expire = opts.dry ? opts.dry.facts(`expire/${expireKey(row.sessionId, procStartMs)}`, x ?? { requests: 0 }) : x;
      }
      const v = view();
      if (opts.rss !== false && procs && procs.procs.has(row.pid)) {
        const pids = sessionPids(procs, row.pid, row.kind, cliNames);
        for (const p of pids) counted.add(p);
        v.rssBytes = pidsRss(pids);
      }
      return v;
    }),
  );
  const overhead = opts.rss !== false && procs ? fleetOverhead(procs, counted, cliNames, { claudeDir: f.claudeDir }) : null;
  return { ...base, roster: { ok: true }, sessions, overhead };
}

function taskFacts(t: Task, stateDir: string): TaskFacts {
  const f: TaskFacts = { id: t.id, state: t.state, terminal: t.terminal, exitRequests: t.exitRequests };
  for (const k of ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt', 'exitGaveUpAt'] as const) if (t[k]) f[k] = t[k];
  // the next step is timed from when the latest exit job finished (the exit ledger, not the task file)
  if (t.exitRequests > 0 && t.sessionId && t.terminal && !t.exitedAt && !t.exitGaveUpAt) {
    const finished = readExit(stateDir, requestExitId(t.id, t.sessionId, t.exitRequests))?.finishedAt;
    if (finished) f.lastExitFinishedAt = finished;
  }
  return f;
}

function indexTasks(tasks: Task[]): Map<string, Task[]> {
  const m = new Map<string, Task[]>();
  for (const t of tasks) {
    if (!t.sessionId) continue;
    const list = m.get(t.sessionId);
    if (list) list.push(t);
    else m.set(t.sessionId, [t]);
  }
  return m;
}

/** Does an invalid task file name this session: in its parsed fields, or anywhere in its bytes? */
function names(bad: InvalidTask, row: RosterRow): boolean {
  if (bad.parsed) return bad.sessionIds.includes(row.sessionId) || (row.id !== null && bad.sessionIds.includes(row.id));
  if (bad.text === null) return false;
  return bad.text.includes(row.sessionId) || (row.id !== null && row.id.length >= 4 && bad.text.includes(row.id));
}
