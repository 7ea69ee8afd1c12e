// A sweep's second step: each roster row's evidence, one probe at a time — is it live, its session file, its tasks,
// its transcript's silence, who is attached, Claude Code's own files (the job's state, a pin, its reaper), the agent
// views that list it, its inbox, its hook events, its chain (a finished job's, or expire's). Only the tmux server is
// left for the third step (src/evidence/pane-evidence.ts): one call for every row that needs it.
import type { Config } from '../config.js';
import type { RosterRow } from './roster.js';
import { attachedTo } from './clients.js';
import { liveness } from './proc.js';
import { listedFolder, lists } from './agent-view.js';
import type { SessionFile, SessionFiles } from './sessions.js';
import { claudeReaperEta, type ReaperEta } from './claude-reaper.js';
import { readJobState } from './claude-code.js';
import { hookFacts } from './hooks.js';
import { hookFileName, readHookState } from './hook-events.js';
import { type jobChainReader, jobKey } from '../store/job-state.js';
import { expireKey } from '../store/expire-state.js';
import { exitFinishedAt } from '../store/ledger.js';
import { jobExitId } from '../../queues/session-exit.js';
import { couldAct } from './pane-evidence.js';
import { drivingTask, namedTasks, type TaskIndex } from './task-evidence.js';
import type { Sources } from './sweep-sources.js';
import type { GatherOptions } from './fleet.js';
import type { Evidence, Policy } from '../doctrine/verdict.js';

/** A pid-less row in one of these job states has ended; any other young pid-less row may still be starting. */
const ENDED_STATES = new Set(['stopped', 'done', 'failed']);

/** What every row's probes share: the sweep's sources, and what is read once for all rows. */
export interface Sweep extends Sources {
  config: Config;
  opts: GatherOptions;
  at: number;
  policy: Policy;
  tasksBy: TaskIndex;
  sessionFilesRead: SessionFiles | null;
  jobChains: ReturnType<typeof jobChainReader>;
  /** Claude Code's reaper waits 60 s instead of an hour when free memory is under 1 GiB. */
  lowMemory: boolean;
  hookDir: string;
  hookFiles: Set<string> | null;
  inboxOf: (sessionId: string) => number | null;
}

/** A row after its probes: its evidence, and whether the tmux server is read for it. */
export interface Built {
  row: RosterRow;
  evidence: Evidence;
  failures: string[];
  /** What the sweep saw that a person should read beside the verdict. */
  paneNotes: string[];
  sf?: SessionFile;
  /** A new `claude --bg` with no pid yet: starting, not a record (it holds a slot, and no chain ends on it). */
  starting: boolean;
  procStartMs: number | null;
  reaper?: ReaperEta;
  tmux: boolean;
}

export function rowEvidence(s: Sweep, row: RosterRow): Built {
  const failures: string[] = [];
  // Built field by field, never by spreading: in V8 an object literal that spreads and then adds fields is made
  // in dictionary mode (~6 KB and ~20 µs a row here; 2,300 rows a pass), one with its fields listed ~0.5 KB.
  const evidence: Evidence = {
    live: null,
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
  const b: Built = { row, evidence, failures, paneNotes: [], starting: startingRow(s, row), procStartMs: null, tmux: false };
  liveProbe(s, b);
  if (row.waitingFor) evidence.waitingFor = row.waitingFor;
  // Records and gone rows need no further evidence (but a record's pin: Claude Code's reaper skips a pinned job, so it tells who ended it).
  if (row.pid === null && row.id !== null && s.pins?.ok) evidence.pinned = s.pins.pins.has(row.id);
  if (row.pid === null || evidence.live === false) return b;
  sessionFileProbe(s, b, row.pid);
  taskProbe(s, b);
  transcriptProbe(s, b);
  attachProbe(s, b);
  claudeFilesProbe(s, b);
  agentViewProbe(s, b);
  evidence.inboxPending = s.inboxOf(row.sessionId);
  if (evidence.inboxPending === null) failures.push('inbox');
  hookProbe(s, b);
  chainProbe(s, b);
  b.tmux =
    row.kind === 'interactive' && s.procs !== null && (s.opts.tmux !== 'if-needed' || couldAct(row, evidence, b.starting, s.policy, s.at));
  return b;
}

function startingRow(s: Sweep, row: RosterRow): boolean {
  const startedMs = row.startedAt ? Date.parse(row.startedAt) : NaN;
  const window = s.config.windows.starting;
  return (
    row.pid === null &&
    row.kind !== 'interactive' &&
    !ENDED_STATES.has(row.state ?? '') &&
    s.at - startedMs < window &&
    s.at - startedMs > -window
  );
}

/** Is its process alive (not a zombie, not a reused pid), and since when. */
function liveProbe(s: Sweep, b: Built): void {
  const pid = b.row.pid;
  if (pid === null) b.evidence.live = false;
  else if (s.procs) {
    const l = liveness(s.procs, pid, b.row.startedAt);
    b.evidence.live = l.alive;
    if (l.why) b.evidence.liveWhy = l.why;
    if (l.alive) b.procStartMs = s.procs.procs.get(pid)?.startMs ?? null;
  } else b.failures.push('proc');
}

/** Its session file: the messaging socket the one message reaches its model by (null: the file names none). */
function sessionFileProbe(s: Sweep, b: Built, pid: number): void {
  const files = s.sessionFilesRead;
  const sf = files?.ok ? files.byPid.get(pid) : undefined;
  b.sf = sf;
  if (s.config.fleet.claudeDir !== null) b.evidence.socket = sf?.socket ?? null;
  if (sf?.socket && sf.features.includes('notify_idle')) b.evidence.notifyIdle = true;
  // its file did not parse (caught mid-write, or a shape we do not know): whether it has a socket is unknown
  if (files?.ok && files.unreadable.includes(pid)) b.failures.push('session-file');
  // a messaging protocol sunset does not know: the file is not read as sunset knows it (claude-code-unreadable)
  else if (sf && !sf.protocolKnown) b.failures.push('session-file');
}

/** The tasks that name it: the open ones, the one that drives it, invalid files that may. */
function taskProbe(s: Sweep, b: Built): void {
  if (!s.tasks.ok) b.failures.push('tasks');
  const { open, driving } = namedTasks(s.tasksBy, b.row);
  b.evidence.openTasks = open.map((t) => t.id);
  if (driving) b.evidence.task = drivingTask(driving, s.config.stateDir, s.opts.dry);
  b.evidence.invalidTasks = s.tasksBy.invalidNaming(b.row);
}

/** How long its transcript has been silent. */
function transcriptProbe(s: Sweep, b: Built): void {
  const own = b.row.transcript;
  if (own) {
    b.evidence.transcript = own.path;
    b.evidence.silenceMs = Math.max(0, Math.floor(s.at - own.mtimeMs));
    return;
  }
  if (s.transcripts instanceof Error) {
    b.failures.push('projects');
    return;
  }
  const tr = s.transcripts.get(b.row.sessionId);
  if (tr) {
    b.evidence.transcript = tr.path;
    b.evidence.silenceMs = Math.max(0, Math.floor(s.at - tr.mtimeMs));
  } else b.evidence.transcript = null;
}

/** Who is attached: the roster's word, else `claude attach` clients (an interactive session's pane and its clients: tmux, later). */
function attachProbe(s: Sweep, b: Built): void {
  const { row, evidence } = b;
  if (row.kind === 'interactive') {
    if (row.attached === true) {
      evidence.attached = true;
      evidence.attachedBy = 'roster';
    }
  } else if (row.attached !== null) {
    evidence.attached = row.attached;
    evidence.attachedBy = 'roster';
  } else if (s.clients) {
    const by = attachedTo(s.clients.attach, row);
    evidence.attached = by.length > 0;
    evidence.attachedBy = by.length ? `claude attach (pid ${by.join(', ')})` : 'proc';
  }
}

/** Claude Code's own files: the job's state (in flight, blocked and what it asks), a person's pin, its own reaper's eta. */
function claudeFilesProbe(s: Sweep, b: Built): void {
  const { row, evidence } = b;
  const claudeDir = s.config.fleet.claudeDir;
  if (row.kind === 'interactive' || claudeDir === null) return;
  const pins = s.pins;
  evidence.job = row.id === null ? null : readJobState(claudeDir, row.id);
  // a pin sunset made itself (a task still open) is not a person's
  evidence.pinned = pins?.ok ? row.id !== null && pins.pins.has(row.id) && !s.sunsetPins.has(row.id) : null;
  b.reaper = claudeReaperEta(evidence.job, {
    pinned: pins?.ok ? row.id !== null && pins.pins.has(row.id) : null,
    attached: evidence.attached,
    lowMemory: s.lowMemory,
  });
}

/** The open agent views that list it (all of them, but for one narrowed by --cwd to a folder it is not under). */
function agentViewProbe(s: Sweep, b: Built): void {
  if (b.row.kind === 'interactive' || !s.views.length) return;
  const folder = listedFolder(b.evidence.job, b.row.cwd);
  const by = s.views.filter((v) => lists(v, folder));
  if (by.length) {
    b.evidence.agentViews = by.length;
    b.evidence.agentViewsListing = by;
  }
}

/** Its hook events: absent or unreadable is no evidence at all (it never protects nor clears anything). */
function hookProbe(s: Sweep, b: Built): void {
  if (!s.hookFiles?.has(hookFileName(b.row.sessionId))) return;
  const h = hookFacts(readHookState(s.hookDir, b.row.sessionId), s.at, s.config.hooks?.freshFor ?? 15 * 60_000);
  if (h) b.evidence.hooks = h;
}

/** An untasked session's chain: a finished Claude Code job's own (its latches in stateDir), a chain of another kind that holds it, else expire's. */
function chainProbe(s: Sweep, b: Built): void {
  const { row, evidence } = b;
  const dry = s.opts.dry;
  const untasked = !evidence.task && !evidence.openTasks.length && !evidence.invalidTasks.length;
  if (!untasked) return;
  if (s.config.fleet.jobChain && row.kind === 'background' && row.id !== null && evidence.job) {
    const start = String(Math.round(b.procStartMs ?? 0));
    const key = jobKey(row.id, start);
    const rec = s.jobChains(key);
    const settled = evidence.job.state === 'done' && evidence.job.inFlight === 0;
    if (rec?.askedAt || settled) {
      const { shortId: _s, sessionId: _i, start: _t, ...facts } = rec ?? { shortId: '', sessionId: '', start: '', requests: 0 };
      const startedAt = facts.startedAt ?? evidence.job.settledAt ?? evidence.job.updatedAt ?? undefined;
      if (facts.requests > 0 && !facts.lastExitFinishedAt) {
        const finished = exitFinishedAt(s.config.stateDir, jobExitId(row.id, start, facts.requests));
        if (finished) facts.lastExitFinishedAt = finished;
      }
      const withStart = { ...facts, ...(startedAt ? { startedAt } : {}) };
      evidence.native = { key, facts: dry ? dry.facts(`job/${key}`, withStart) : withStart };
    }
  }
  const held = evidence.native ? null : (s.opts.chainHolds?.(row, b.procStartMs) ?? null);
  if (held) evidence.held = dry ? { ...held, facts: dry.facts(held.key, held.facts) } : held;
  else if (!evidence.native && s.opts.expireFacts) {
    const x = s.opts.expireFacts(row, b.procStartMs);
    evidence.expire = dry ? dry.facts(`expire/${expireKey(row.sessionId, b.procStartMs)}`, x ?? { requests: 0 }) : x;
  }
}
