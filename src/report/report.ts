// `sunset report`: what the fleet holds and who holds it. Pure over a snapshot; it reports, never acts (D10).
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import type { Task } from '../tasks/tasks.js';
import type { Overhead } from '../evidence/claude-code.js';
import type { AgentView } from '../evidence/agent-view.js';

export type Lane = 'awaiting-human' | 'active' | 'finished' | 'untasked';
export const LANES: Lane[] = ['awaiting-human', 'active', 'finished', 'untasked'];

export interface AwaitingLane {
  taskId: string;
  sessionId: string | null;
  live: boolean;
  rssBytes: number | null;
  waitingSince: string | null;
  waitingSinceFrom: 'stateChangedAt' | 'awaitingHumanSince' | 'file mtime';
  waitedMs: number | null;
}

export interface Report {
  at: string;
  host: string;
  roster: { ok: boolean; error?: string; rows: number; live: number; records: number; gone: number };
  verdicts: Record<string, number>;
  tasks: { total: number; invalid: number; byState: Record<string, number> };
  memory: {
    totalBytes: number;
    byLane: Record<Lane, { sessions: number; bytes: number; share: number }>;
    /** The live sessions' memory by the agent CLI that runs them: 'claude-code', 'codex', 'gemini'. */
    byAgent: Record<string, { sessions: number; bytes: number }>;
    /** What the sessions eligible right now would give back by leaving. */
    eligible: { sessions: number; bytes: number };
    /** MemAvailable, and whether it is under the configured floor (then exits go largest first). */
    availableBytes: number | null;
    pressure: boolean;
    /** What the fleet holds beside its sessions: Claude Code's daemon, warm spares, people's clients (null: /proc unread). */
    overhead: Overhead | null;
    /** Sessions plus overhead: what Claude Code holds on this box. */
    fleetBytes: number;
  };
  /** Open agent views: while one is open, every background session it lists is attach-unknown. */
  agentViews: number;
  /** Each one's pid and the folder its `--cwd` narrows it to (null: it lists every background session). */
  agentViewsOpen: AgentView[];
  /** Claude Code's own reaper: the live background sessions it would retire, soonest first (the next one at most an hour on). */
  claudeReaper: Array<{ id: string | null; label: string; sessionId: string; at: string; why: string; taskState: string | null }>;
  awaitingHuman: AwaitingLane[];
  problems: string[];
}

/** The agent CLI that runs a session, by its name in the report and the metrics. */
export function agentOf(s: Pick<SessionView, 'agent'>): string {
  return s.agent ?? 'claude-code';
}

export function laneOf(s: SessionView): Lane {
  if (s.evidence.openTasks.length || (s.evidence.task && !s.evidence.task.terminal)) {
    return s.taskState === 'awaiting-human' ? 'awaiting-human' : 'active';
  }
  return s.evidence.task ? 'finished' : 'untasked';
}

/** When a lane started waiting, and from which field that was read. */
export function waitingSince(t: Task): { at: string | null; from: AwaitingLane['waitingSinceFrom'] } {
  for (const k of ['stateChangedAt', 'awaitingHumanSince'] as const) {
    const v = t[k];
    if (typeof v === 'string' && Number.isFinite(Date.parse(v))) return { at: new Date(Date.parse(v)).toISOString(), from: k };
  }
  return { at: new Date(t.mtimeMs).toISOString(), from: 'file mtime' };
}

export function buildReport(
  f: FleetSnapshot,
  mem: { availableBytes: number | null; pressure: boolean } = { availableBytes: null, pressure: false },
): Report {
  const live = f.sessions.filter((s) => s.live === true);
  const verdicts: Record<string, number> = {};
  for (const s of f.sessions) verdicts[s.verdict] = (verdicts[s.verdict] ?? 0) + 1;
  const byState: Record<string, number> = {};
  for (const t of f.tasks) byState[t.state] = (byState[t.state] ?? 0) + 1;

  const byLane = Object.fromEntries(LANES.map((l) => [l, { sessions: 0, bytes: 0, share: 0 }])) as Report['memory']['byLane'];
  let total = 0;
  const byAgent: Report['memory']['byAgent'] = {};
  for (const s of live) {
    const lane = byLane[laneOf(s)];
    lane.sessions++;
    lane.bytes += s.rssBytes ?? 0;
    const agent = (byAgent[agentOf(s)] ??= { sessions: 0, bytes: 0 });
    agent.sessions++;
    agent.bytes += s.rssBytes ?? 0;
    total += s.rssBytes ?? 0;
  }
  for (const l of LANES) byLane[l].share = total ? byLane[l].bytes / total : 0;
  const eligible = live.filter((s) => s.verdict === 'eligible');
  const eligibleBytes = eligible.reduce((a, s) => a + (s.rssBytes ?? 0), 0);

  const liveBySession = new Map<string, SessionView>();
  for (const s of live) {
    liveBySession.set(s.sessionId, s);
    if (s.id !== null) liveBySession.set(s.id, s);
  }
  const awaitingHuman = f.tasks
    .filter((t) => t.state === 'awaiting-human')
    .map((t): AwaitingLane => {
      const s = t.sessionId ? liveBySession.get(t.sessionId) : undefined;
      const w = waitingSince(t);
      return {
        taskId: t.id,
        sessionId: t.sessionId,
        live: Boolean(s),
        rssBytes: s?.rssBytes ?? null,
        waitingSince: w.at,
        waitingSinceFrom: w.from,
        waitedMs: w.at ? Math.max(0, f.at - Date.parse(w.at)) : null,
      };
    })
    .sort((a, b) => (b.waitedMs ?? -1) - (a.waitedMs ?? -1));

  return {
    at: new Date(f.at).toISOString(),
    host: f.host,
    roster: {
      ok: f.roster.ok,
      ...(f.roster.ok ? {} : { error: f.roster.error }),
      rows: f.sessions.length,
      live: live.length,
      records: f.sessions.filter((s) => s.verdict === 'record').length,
      gone: f.sessions.filter((s) => s.verdict === 'gone').length,
    },
    verdicts,
    tasks: { total: f.tasks.length, invalid: f.invalidTasks.length, byState },
    memory: {
      totalBytes: total,
      byLane,
      byAgent,
      eligible: { sessions: eligible.length, bytes: eligibleBytes },
      ...mem,
      overhead: f.overhead,
      fleetBytes: total + (f.overhead?.bytes ?? 0),
    },
    agentViews: f.agentViews,
    agentViewsOpen: f.agentViewsOpen,
    claudeReaper: live
      .filter((s) => s.claudeReaper?.at)
      .map((s) => ({
        id: s.id,
        label: s.label,
        sessionId: s.sessionId,
        at: s.claudeReaper!.at!,
        why: s.claudeReaper!.why,
        taskState: s.taskState,
      }))
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at)),
    awaitingHuman,
    problems: f.problems,
  };
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return 'unknown';
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GB`;
  if (n >= 1024 ** 2) return `${Math.round(n / 1024 ** 2)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} B`;
}
