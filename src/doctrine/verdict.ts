// The verdict: may this session leave now? One pure function over plain data (DESIGN §4).
// Every worker, `sunset verdict` and the HTTP API call it; nothing else decides.
import { unsafeSession } from './ids.js';
import type { ChainFacts, ChainKind, ChainPolicy } from './chain.js';
import type { Reason } from './reasons.js';
import { dueOf, nextOf, type Due, type Next } from './next.js';
import type { Kind, Status } from '../evidence/roster.js';
import type { AgentView } from '../evidence/agent-view.js';

export type Verdict = 'record' | 'gone' | 'protected' | 'eligible';

export { CHAIN_ENDING, PERMANENT, REASONS, UNREACHABLE, type Reason } from './reasons.js';
export { dueOf, nextOf, type Due, type Next, type Step } from './next.js';

export interface TaskFacts {
  id: string;
  state: string;
  terminal: boolean;
  releasedAt?: string;
  exitAskedAt?: string;
  exitRequestedAt?: string;
  exitRequests: number;
  exitedAt?: string;
  exitGaveUpAt?: string;
  /** When exit job `exitRequests` finished (the exit ledger, not the task file): the next step is timed from it. */
  lastExitFinishedAt?: string;
}

/** A task's chain facts: its latched fields (and the ledger's finish of its latest exit job). */
export function taskChain(t: TaskFacts): ChainFacts {
  const f: ChainFacts = { kind: 'task', requests: t.exitRequests };
  if (t.releasedAt) f.startedAt = t.releasedAt;
  if (t.exitAskedAt) f.askedAt = t.exitAskedAt;
  if (t.exitRequestedAt) f.lastRequestAt = t.exitRequestedAt;
  if (t.lastExitFinishedAt) f.lastExitFinishedAt = t.lastExitFinishedAt;
  if (t.exitGaveUpAt) f.gaveUpAt = t.exitGaveUpAt;
  if (t.exitedAt) f.exitedAt = t.exitedAt;
  return f;
}

/** Is a task's chain still open (not exited, not given up)? chainOpen(taskChain(t)), without building the facts. */
export function taskChainOpen(t: Pick<TaskFacts, 'exitedAt' | 'exitGaveUpAt'>): boolean {
  return !t.exitedAt && !t.exitGaveUpAt;
}

/** An untasked session's chain, kept in stateDir by expire (per session and process start): the chain's facts without a kind. */
export type ExpireFacts = Omit<ChainFacts, 'kind'>;

export interface Evidence {
  /** Process alive: null when it cannot be told. */
  live: boolean | null;
  liveWhy?: string;
  status: Status;
  /** With status `waiting`: what the roster says it waits for. */
  waitingFor?: string | null;
  /** The roster's `state` (background jobs: working, blocked, done, failed, stopped); null when the row has none. */
  rosterState?: string | null;
  /** The background job's own state file (Claude Code's jobs/<id>/state.json); null = unreadable (unknown); absent = not read (interactive, or fleet.claudeDir null). */
  job?: JobFacts | null;
  /** Pinned by a person in Claude Code's pins file; null = the pins file is unreadable; absent = not read. */
  pinned?: boolean | null;
  /** How many open agent views (`claude agents`, the TUI that can open any background session it lists) list this session. */
  agentViews?: number;
  /** Those views: each one's pid and the folder it is narrowed to (`--cwd`; null: it lists every background session). */
  agentViewsListing?: AgentView[];
  /** A finished Claude Code job's own chain (untasked background session whose job settled done; its latches in stateDir). */
  native?: { key: string; facts: ExpireFacts } | null;
  /**
   * A chain of another kind that holds this untasked session (its adapter's `holds`, src/pipeline/chain-kinds/): its
   * kind, the steps it takes (its shape), its key and facts. Judged as a finished job's chain is.
   */
  held?: { kind: string; shape: ChainKind; key: string; facts: ExpireFacts } | null;
  /** An interactive session's input box holds a person's draft (read from its pane); null = it could not be read. */
  draft?: boolean | null;
  /** ms since the transcript was last written; null = unknown (missing, unreadable). */
  silenceMs: number | null;
  transcript?: string | null;
  attached: boolean | null;
  attachedBy?: string;
  /** Messages waiting in the inbox; null = unreadable. */
  inboxPending: number | null;
  /** Interactive sessions: 'not-read' when the sweep did not ask the tmux server (a protection that never passes by itself held it whatever tmux showed); pane, attached and draft are then unknown and add no reason. */
  tmux?: 'not-read';
  /** Interactive sessions: the pane that holds the pid; null = in no pane. Undefined for background ones. */
  pane?: { paneId: string; dead: boolean; clients: number; sessionName: string; from?: 'session-file' | 'process-tree' } | null;
  /** The session's messaging socket (Claude Code's sessions/<pid>.json); null = it names none; absent = not read. */
  socket?: string | null;
  /** The socket offers idle notices (peerFeatures "notify_idle"): a busy session can say when its turn ends. */
  notifyIdle?: boolean;
  /** Names of whole probes that failed (roster, proc, tmux, tasks, projects, inbox; session-file: its sessions/<pid>.json does not parse). */
  probeFailures: string[];
  /** The task that drives this session's chain: its latest terminal task, or the open one that protects it. */
  task: TaskFacts | null;
  /** Ids of the tasks naming it that are not terminal. */
  openTasks: string[];
  /** File names of invalid task files naming it. */
  invalidTasks: string[];
  expire?: ExpireFacts | null;
  /** What the session's own Claude Code hooks last said (optional evidence); absent when it has none. */
  hooks?: HookFacts | null;
}

/** What sunset takes from a background job's state.json (read defensively: a missing or odd field is unknown). */
export interface JobFacts {
  state: string | null;
  tempo: string | null;
  /** What the job needs a person to supply (a blocked job's question), when it says. */
  needs: string | null;
  /** Background shells, subagents, monitors and queued prompts in flight; null = cannot be told. */
  inFlight: number | null;
  updatedAt: string | null;
  /** When the job last settled in a terminal state (lastTerminalAt). */
  settledAt?: string | null;
  /** inFlight's parts: background tasks, queued prompts, the kinds of the tasks (null: cannot be told). */
  tasks?: number | null;
  queued?: number | null;
  kinds?: string[];
  /** The job's folder, and the one it was started from (a worktree's repository, a dispatch's folder): the agent view files it under originCwd, else cwd. */
  cwd?: string;
  originCwd?: string;
}

/** A session's latest hook state (src/hook-events.ts) as evidence; only a fresh one counts. */
export interface HookFacts {
  state: 'busy' | 'waiting' | 'idle' | 'ended';
  event: string;
  at: string;
  ageMs: number;
  fresh: boolean;
  backgroundTasks: number;
  notificationType?: string;
}

export interface SessionFacts {
  /** The short id `claude stop` takes (background rows); null for interactive rows, which have none. */
  id: string | null;
  sessionId: string;
  /** A pid-less row started this recently is starting, not a record (a new `claude --bg` for about a second). */
  starting?: boolean;
  kind: Kind | 'unknown';
  pid: number | null;
  /** The agent CLI that runs it ('codex', 'gemini'); absent = Claude Code. */
  agent?: string;
  /** What its exit path needs (src/agents/types.ts ExitPath); null: no path serves it. Absent: Claude Code's, by kind. */
  exit?: ExitNeeds | null;
  evidence: Evidence;
}

/** What a session's exit path needs of it: a tmux pane to type into (a draft there is in its way), a safe short id. */
export interface ExitNeeds {
  needsPane: boolean;
  passesId: boolean;
}

/** The facts' exit needs; facts that do not say are Claude Code's: an interactive session types, a background one passes its id. */
function exitNeedsOf(s: SessionFacts): ExitNeeds | null {
  if (s.exit !== undefined) return s.exit;
  return s.kind === 'unknown' ? null : { needsPane: s.kind === 'interactive', passesId: s.kind === 'background' };
}

export interface Policy extends ChainPolicy {
  silence: number;
  expireIdle: number;
  /** When a passing protection is looked at again (for `due`). @defaultValue 5 min */
  recheck?: number;
}

export interface Decision {
  verdict: Verdict;
  reasons: Reason[];
  next: Next | null;
  due?: Due;
  /** Plain words a person needs beside the reason codes: what a blocked job asks, what a waiting session waits for. */
  notes: string[];
}

const t = (s: string | undefined) => (s ? Date.parse(s) : NaN);

export function decide(s: SessionFacts, policy: Policy, now: number): Decision {
  if (s.pid === null && s.starting) return { verdict: 'protected', reasons: ['starting'], next: null, notes: [] };
  if (s.pid === null) return { verdict: 'record', reasons: [], next: null, notes: [] };
  const e = s.evidence;
  if (e.live === false) return { verdict: 'gone', reasons: [], next: null, notes: [] };

  const reasons = new Set<Reason>();
  const notes: string[] = [];
  if (e.live === null) reasons.add('liveness-unknown');
  if (e.probeFailures.length) reasons.add('probe-failed');

  // The task: not terminal protects, always (D4); an unreadable one protects those it names (§3).
  if (e.invalidTasks.length) reasons.add('task-invalid');
  if (e.openTasks.length) reasons.add('task-not-terminal');
  const task = e.task;
  if (task && !task.terminal) reasons.add('task-not-terminal');
  if (task?.terminal) {
    if (task.exitedAt) reasons.add('resumed');
    if (task.exitGaveUpAt) reasons.add('gave-up');
    if (!task.releasedAt) reasons.add('not-released');
    else if (!(now >= t(task.releasedAt) + policy.grace)) reasons.add('grace-pending');
  }
  const untasked = !task && !e.openTasks.length && !e.invalidTasks.length;
  // an untasked background session whose own job settled done: the same chain as a finished task (its latches in
  // stateDir); or a chain of another kind that holds it (e.held), judged the same way
  const own = untasked ? (e.native ?? e.held ?? null) : null;
  if (own) {
    const f = own.facts;
    if (f.exitedAt) reasons.add('resumed');
    if (f.gaveUpAt) reasons.add('gave-up');
    if (!f.askedAt && !(now >= t(f.startedAt) + policy.grace)) reasons.add('grace-pending');
    if (e.job && e.job.state !== 'done' && e.job.state !== 'blocked') reasons.add('job-working');
  } else {
    if (untasked && e.expire?.gaveUpAt) reasons.add('gave-up');
    if (untasked && e.expire?.exitedAt) reasons.add('resumed');
  }

  // The session itself: every piece of evidence must be positive; unknown never counts as idle (D5).
  if (e.status === 'busy') reasons.add('status-busy');
  else if (e.status === 'waiting') {
    reasons.add('status-waiting');
    if (e.waitingFor) notes.push(`waiting for: ${e.waitingFor}`);
  } else if (e.status !== 'idle') reasons.add('status-unknown');

  // Claude Code's own word on the job: a question a person must answer, work still in flight, a pin.
  const job = e.job;
  if (e.rosterState === 'blocked' || job?.state === 'blocked') {
    reasons.add('job-blocked');
    if (job?.needs) notes.push(`it asks: ${job.needs}`);
  }
  if (job === null) reasons.add('job-unknown');
  else if (job) {
    if (job.inFlight === null) reasons.add('job-unknown');
    else if (job.inFlight > 0) reasons.add('job-in-flight');
  }
  if (e.pinned === null) reasons.add('pins-unknown');
  else if (e.pinned) reasons.add('pinned');

  if (e.silenceMs === null) reasons.add('transcript-unknown');
  else if (untasked && !own) {
    if (e.silenceMs < policy.expireIdle) reasons.add('idle-short');
  } else if (e.silenceMs < policy.silence) reasons.add('transcript-recent');

  if (e.attached === null) {
    if (e.tmux !== 'not-read') reasons.add('attach-unknown');
  } else if (e.attached) reasons.add('client-attached');
  if (s.kind !== 'interactive' && e.agentViews) {
    // an agent view can open any background session it lists: unless it is proven elsewhere, a person may be watching this one
    reasons.add('attach-unknown');
    notes.push(agentViewNote(e.agentViews, e.agentViewsListing));
  }

  if (e.inboxPending === null) reasons.add('inbox-unknown');
  else if (e.inboxPending > 0) reasons.add('inbox-pending');

  // An id the exit command could take for an option, or that is not one path segment, is never asked or requested:
  // the exit worker would refuse it at the last moment, so the chain would only spend its requests and alarm.
  const needs = exitNeedsOf(s);
  if (unsafeSession(needs?.passesId ? (s.id ?? '') : null, s.sessionId)) reasons.add('id-unsafe');

  // no exit path serves it (the roster did not say its kind, or no path serves its agent): nothing can end it
  if (needs === null) reasons.add('kind-unknown');
  if (needs?.needsPane && e.pane === null) reasons.add('no-pane');
  if (e.draft === true) reasons.add('draft-pending');
  else if (needs?.needsPane && e.pane && e.draft === null) reasons.add('draft-unknown');

  // Hook events are optional evidence: stale or absent ones change nothing, and fresh ones only add protection.
  const h = e.hooks;
  if (h?.fresh) {
    if (h.state === 'busy') reasons.add('hook-busy');
    if (h.state === 'waiting') reasons.add('hook-waiting');
    if (h.backgroundTasks > 0) reasons.add('hook-background-tasks');
    if (hookDisagrees(e.status, h.state)) reasons.add('hook-disagrees');
  }

  const chain: ChainFacts | null = own
    ? { ...own.facts, kind: e.native || !e.held ? 'job' : e.held.shape }
    : untasked
      ? { kind: 'expire', requests: 0, ...(e.expire ?? {}) }
      : task?.terminal
        ? taskChain(task)
        : null;
  if (reasons.size) {
    const list = [...reasons];
    return { verdict: 'protected', reasons: list, next: null, notes, due: dueOf(list, chain, policy, now, e.silenceMs) };
  }
  const next = nextOf(chain!, policy, now);
  return {
    verdict: 'eligible',
    reasons: [],
    next,
    notes,
    due: {
      ...(next ? { step: next.step, ...(next.n ? { n: next.n } : {}), ...(next.at ? { at: next.at } : {}) } : {}),
      waitsFor: [],
      passes: true,
    },
  };
}

/** What a person reads of the agent views that list a session: each one, and whether any lists every session. */
function agentViewNote(n: number, by: readonly AgentView[] | undefined): string {
  if (!by?.length)
    return `a person has the agent view open (claude agents${n > 1 ? `, ${n} of them` : ''}): any background session may be on their screen`;
  const one = (v: AgentView) =>
    v.cwd !== null
      ? `claude agents --cwd ${v.cwd}, pid ${v.pid}`
      : `claude agents, pid ${v.pid}${v.cwdUnresolved !== undefined ? `, its --cwd ${v.cwdUnresolved} unresolved` : ''}`;
  const all = by.some((v) => v.cwd === null);
  return `a person has the agent view open (${by.map(one).join('; ')}): ${all ? 'any background session' : 'it lists this session, which'} may be on their screen`;
}

/** The roster says idle while the hooks say a turn or a prompt is open, or the roster says busy while the hooks say the turn ended. */
export function hookDisagrees(status: Status, hook: HookFacts['state']): boolean {
  if (status === 'idle') return hook === 'busy' || hook === 'waiting';
  if (status === 'busy') return hook === 'idle' || hook === 'ended';
  return false;
}

export function policyFrom(c: {
  windows: {
    grace: number;
    silence: number;
    askWait: number;
    retryWait: number;
    expireIdle: number;
    exitConfirm: number;
    recheck?: number;
  };
  maxExitRequests: number;
}): Policy {
  const w = c.windows;
  return {
    grace: w.grace,
    silence: w.silence,
    askWait: w.askWait,
    retryWait: w.retryWait,
    expireIdle: w.expireIdle,
    exitConfirm: w.exitConfirm,
    maxExitRequests: c.maxExitRequests,
    recheck: w.recheck,
  };
}
