// The sweep: gather every piece of evidence for the whole fleet with a fixed number of child
// processes (one roster call, one tmux call), then judge every row with the one verdict.
import { join } from 'node:path';
import type { Config } from '../config.js';
import { labelOf, readRoster, type RosterRow } from './roster.js';
import { attachedTo, claudeNames, findClients, isInTree, liveness, pidsRss, readProcTable, type ProcTable } from './proc.js';
import { readSessionFiles, type SessionFile } from './sessions.js';
import { chooseRoster } from './file-roster.js';
import { claudeReaperEta, type ReaperEta } from './claude-reaper.js';
import { memAvailable } from './meminfo.js';
import { pruneFileCache } from './file-cache.js';
import { jobChainReader, jobKey } from '../store/job-state.js';
import { readMade } from '../store/pins-made.js';
import { expireKey } from '../store/expire-state.js';
import type { DryRunLatches } from '../pipeline/dry-run.js';
import { fleetOverhead, readJobState, readPins, sessionPids, type Overhead } from './claude-code.js';
import { panesAndDrafts, panesDrafts, type Pane } from './tmux.js';
import { findPane, inboxReader, indexTranscripts } from './files.js';
export { ASK_FILE_PREFIX, findPane, inboxPending } from './files.js';
export { sessionJson, snapshotJson } from './fleet-json.js';
import { readTasks, type Task, type InvalidTask } from '../tasks/tasks.js';
import { hookFacts, hooksDir } from './hooks.js';
import { readExit } from '../store/ledger.js';
import { jobExitId, requestExitId } from '../../queues/session-exit.js';
import { hookFileName, listHookFiles, readHookState } from './hook-events.js';
import { decide, policyFrom, taskChainOpen, type Decision, type Evidence, type ExpireFacts, type Policy, type SessionFacts, type TaskFacts } from '../doctrine/verdict.js';

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
  /**
   * The tmux server (an interactive session's pane, its clients, a draft in its input box): read for every live
   * interactive session (`all`, the default: what a person reads, and what an exit acts on), or only for those whose
   * verdict could turn on it (`if-needed`: the schedule's sweeps; the others carry `evidence.tmux: 'not-read'`).
   */
  tmux?: 'all' | 'if-needed';
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
  // Claude Code's per-process files, read once: the file roster and each live session's socket and pane
  const filesRead = f.claudeDir === null ? null : procsRead.then((t) => (t instanceof Error ? null : t)).then((t) => readSessionFiles(f.claudeDir!, t, (pid) => t?.procs.get(pid)?.startTicks ?? null));
  const chosen = chooseRoster(config, opts.roster ?? 'files', procsRead, () => readRoster(f.rosterCommand, config.probeTimeout), filesRead ?? undefined);
  const [choice, table, tasks, pins] = await Promise.all([
    chosen,
    procsRead,
    readTasks(f.tasksDir),
    f.claudeDir === null ? null : readPins(f.claudeDir),
  ]);
  // the transcripts of the sessions that run (a box keeps every past one's)
  const transcripts = indexTranscripts(f.projectsDir, new Set(choice.roster.ok ? choice.roster.rows.filter((r) => r.pid !== null).map((r) => r.sessionId) : []));

  const roster = choice.roster;
  problems.push(...choice.problems);
  if (!roster.ok) {
    probeErrors.roster = roster.error;
    problems.push(roster.error);
  } else problems.push(...roster.problems);
  if (table instanceof Error) probeErrors.proc = `reading /proc failed: ${table.message}`;
  if (!tasks.ok) probeErrors.tasks = tasks.error;
  if (transcripts instanceof Error) probeErrors.projects = `reading ${f.projectsDir} failed: ${transcripts.message}`;
  if (tasks.ok && tasks.missing) problems.push(missingTasksDir(f.tasksDir));
  const invalid = tasks.ok ? tasks.invalid : [];
  for (const bad of invalid) problems.push(`task file ${bad.file} is invalid and was left untouched: ${bad.problem}`);
  if (pins && !pins.ok) probeErrors.pins = pins.error;
  for (const k of ['proc', 'tasks', 'projects', 'pins']) if (probeErrors[k]) problems.push(probeErrors[k]);

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
  const sessionFiles = filesRead ? await filesRead : null;
  if (sessionFiles && !sessionFiles.ok) problems.push(sessionFiles.error);
  const counted = new Set<number>(); // every pid some session's memory holds
  const policy = policyFrom(config);
  // Claude Code hook events (optional evidence, docs/hooks.md): one readdir, then only the files of live rows.
  const hookDir = hooksDir(config);
  const hookFiles = listHookFiles(hookDir);
  const inboxOf = inboxReader(f.inboxDir);

  // pass 1: each row's evidence but the tmux server's; an interactive row says whether its verdict could turn on it
  const built = roster.rows.map((row): Built => {
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

      // Built field by field, never by spreading: in V8 an object literal that spreads and then adds fields is made
      // in dictionary mode (~6 KB and ~20 µs a row here; 2,300 rows a pass), one with its fields listed ~0.5 KB.
      const evidence: Evidence = {
        live,
        status: row.status,
        rosterState: row.state,
        silenceMs: null,
        attached: null,
        inboxPending: null,
        probeFailures: failures,
        task: null,
        openTasks: [],
        invalidTasks: [],
      };
      if (liveWhy) evidence.liveWhy = liveWhy;
      if (row.waitingFor) evidence.waitingFor = row.waitingFor;
      const view = (): SessionView => {
        const facts: SessionFacts = { id: row.id, sessionId: row.sessionId, kind: row.kind, pid: row.pid, evidence };
        if (starting) facts.starting = starting;
        const d = decide(facts, policy, at);
        if (paneNotes.length) d.notes = [...d.notes, ...paneNotes];
        const v: SessionView = {
          id: facts.id,
          sessionId: facts.sessionId,
          kind: facts.kind,
          pid: facts.pid,
          evidence,
          verdict: d.verdict,
          reasons: d.reasons,
          next: d.next,
          notes: d.notes,
          row,
          label: labelOf(row),
          name: row.name,
          live: row.pid === null ? (starting ? null : false) : live,
          taskId: evidence.task?.id ?? null,
          taskState: evidence.task?.state ?? null,
          rssBytes: null,
          procStartMs,
        };
        if (starting) v.starting = starting;
        if (d.due) v.due = d.due;
        if (reaper) v.claudeReaper = reaper;
        return v;
      };
      // Records and gone rows need no further evidence (but a record's pin: Claude Code's reaper skips a pinned job, so it tells who ended it).
      if (row.pid === null && row.id !== null && pins && pins.ok) evidence.pinned = pins.pins.has(row.id);
      if (row.pid === null || live === false) return { row, evidence, failures, paneNotes, view, tmux: false };
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

      // Attached clients (an interactive session's pane and its clients: pass 2)
      if (row.kind === 'interactive') {
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
        evidence.job = row.id === null ? null : readJobState(f.claudeDir, row.id);
        // a pin sunset made itself (a task still open) is not a person's
        evidence.pinned = pins && pins.ok ? row.id !== null && pins.pins.has(row.id) && !sunsetPins.has(row.id) : null;
        reaper = claudeReaperEta(evidence.job, { pinned: pins && pins.ok ? row.id !== null && pins.pins.has(row.id) : null, attached: evidence.attached, lowMemory });
      }

      // Inbox
      evidence.inboxPending = inboxOf(row.sessionId);
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
      const tmux = row.kind === 'interactive' && procs !== null && (opts.tmux !== 'if-needed' || couldAct(row, evidence, starting, policy, at));
      return { row, evidence, failures, paneNotes, sf, view, tmux };
    });

  // pass 2: the tmux server, only where it is needed (a sweep of the pipeline's, `tmux: 'if-needed'`: where a row's
  // verdict could turn on it) — one call for the panes and the drafts of the panes the session files name
  const wanting = built.filter((b) => b.tmux);
  if (wanting.length && procs) {
    const named = wanting.flatMap((b) => (b.sf?.paneId ? [b.sf.paneId] : []));
    const read = await panesAndDrafts(f.tmuxSocket, named, config.probeTimeout);
    const drafts = read.drafts;
    if (!read.panes.ok) {
      probeErrors.tmux = read.panes.error;
      problems.push(read.panes.error);
      for (const b of wanting) b.failures.push('tmux');
    } else {
      const panes = read.panes.panes;
      const found = wanting.map((b) => ({ b, ...paneOf(panes, procs, b.row.pid!, b.sf) }));
      // a pane the files did not name (the test fleet's, a session file that names another): its draft in a second call
      const more = found.flatMap((x) => (x.pane && !drafts.has(x.pane.paneId) ? [x.pane.paneId] : []));
      if (more.length) for (const [k, v] of await panesDrafts(f.tmuxSocket, more, config.probeTimeout)) drafts.set(k, v);
      for (const { b, pane, byFile, byTree } of found) {
        const sf = b.sf;
        const e = b.evidence;
        if (sf?.paneId && !byFile) b.paneNotes.push(byTree ? `its session file names tmux pane ${sf.paneId}, but ${byTree.paneId} holds it: typing into ${byTree.paneId}` : `its session file names tmux pane ${sf.paneId} (${sf.tmux}), which is not on the configured tmux server (fleet.tmuxSocket ${f.tmuxSocket ?? 'default'})`);
        e.pane = pane ? { paneId: pane.paneId, dead: pane.dead, clients: pane.clients, sessionName: pane.sessionName, ...(byFile ? { from: 'session-file' } : { from: 'process-tree' }) } : null;
        if (pane) e.draft = drafts.has(pane.paneId) ? drafts.get(pane.paneId)! : null;
        if (b.row.attached !== true) {
          e.attached = pane ? pane.clients > 0 : false;
          if (pane) e.attachedBy = 'tmux';
        }
      }
    }
  }
  // an interactive row that needed no tmux: a protection that never passes by itself holds it, whatever tmux shows
  for (const b of built) if (b.row.kind === 'interactive' && b.row.pid !== null && b.evidence.live && procs && !b.tmux) b.evidence.tmux = 'not-read';

  const sessions = built.map((b) => {
    const v = b.view();
    const pid = b.row.pid;
    if (pid !== null && b.evidence.live && opts.rss !== false && procs && procs.procs.has(pid)) {
      const pids = sessionPids(procs, pid, b.row.kind, cliNames);
      for (const p of pids) counted.add(p);
      // read when first asked for (an exit's priority, a report, the web): most of the schedule's sweeps never ask,
      // and reading each session's processes' statm was ~8 % of a 12-session sweep
      let rss: number | undefined;
      Object.defineProperty(v, 'rssBytes', {
        enumerable: true,
        configurable: true,
        get: () => (rss ??= pidsRss(pids)),
        set: (x: number | null) => Object.defineProperty(v, 'rssBytes', { value: x, enumerable: true, configurable: true, writable: true }),
      });
    }
    return v;
  });
  pruneFileCache(); // an ended session's files are not kept
  const snap: FleetSnapshot = { ...base, roster: { ok: true }, sessions, overhead: null };
  // what the fleet holds beside its sessions is worked out when first read (the census, the web, a report): the
  // schedule's sweeps never read it, and it walks every process's ancestry (and a few environments) each time
  if (opts.rss !== false && procs) {
    let memo: Overhead | undefined;
    Object.defineProperty(snap, 'overhead', { enumerable: true, configurable: true, get: () => (memo ??= fleetOverhead(procs, counted, cliNames, { claudeDir: f.claudeDir })) });
  }
  return snap;
}

/** A row after pass 1: its evidence, and whether pass 2 reads the tmux server for it. */
interface Built {
  row: RosterRow;
  evidence: Evidence;
  failures: string[];
  paneNotes: string[];
  sf?: SessionFile;
  view: () => SessionView;
  tmux: boolean;
}

/**
 * Could this interactive row's verdict be anything but held by a protection that never passes by itself, whatever
 * tmux shows? Judged with tmux's most permissive word (in a pane, nobody attached, no draft): tmux's evidence only
 * ever adds protections, so when even that verdict is held for good (a task not done, a chain ended), so is the
 * real one, and the sweep needs no tmux call for it. Pure.
 */
export function couldAct(row: RosterRow, evidence: Evidence, starting: boolean, policy: Policy, at: number): boolean {
  const best: Evidence = { ...evidence, pane: { paneId: '%0', dead: false, clients: 0, sessionName: '' }, draft: false, attached: row.attached === true ? true : false };
  const d = decide({ id: row.id, sessionId: row.sessionId, kind: row.kind, pid: row.pid, evidence: best, ...(starting ? { starting } : {}) }, policy, at);
  return d.verdict === 'eligible' || d.due?.passes !== false;
}

/** The pane that holds an interactive session: the one its session file names (when it holds the process), else the one whose tree does. */
function paneOf(panes: Pane[], procs: ProcTable, pid: number, sf: SessionFile | undefined): { pane: Pane | null; byFile?: Pane; byTree: Pane | null } {
  const byTree = findPane(panes, procs, pid);
  const named = sf?.paneId ? panes.find((p) => p.paneId === sf.paneId && !p.dead) : undefined;
  const byFile = named && isInTree(procs, named.panePid, pid) ? named : undefined;
  return { pane: byFile ?? byTree, byFile, byTree };
}

function taskFacts(t: Task, stateDir: string): TaskFacts {
  const f: TaskFacts = { id: t.id, state: t.state, terminal: t.terminal, exitRequests: t.exitRequests };
  for (const k of ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt', 'exitGaveUpAt'] as const) if (t[k]) f[k] = t[k];
  // the next step is timed from when the latest exit job finished (the exit ledger, not the task file)
  if (t.exitRequests > 0 && t.sessionId && t.terminal && taskChainOpen(t)) {
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
