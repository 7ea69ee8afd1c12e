// session-cap, the counting (DESIGN §6): how many live sessions hold a slot against the ceiling, which
// finished ones are already on their way out, and which lanes awaiting a human hold slots. Pure over a
// snapshot: `sunset cap` and `sunset admit` both count with countCap, so they cannot disagree.
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import { laneOf } from '../report/report.js';
import { holdsProcess } from '../doctrine/identity.js';
import { leaving } from '../doctrine/chain.js';
import { taskChain } from '../doctrine/verdict.js';

export interface Leaving {
  /** The short id (background), null for an interactive session; label is what people read. */
  id: string | null;
  label: string;
  sessionId: string;
  /** The task whose chain is asking it to leave; null for an untasked session expire is requesting. */
  taskId: string | null;
  via: 'task' | 'expire';
  /** asked = the one message sent, no request yet; requested = at least one exit request made. */
  step: 'asked' | 'requested';
  requests: number;
  /** When the latest ask or request was made. */
  since: string | null;
  rssBytes: number | null;
}

export interface HeldLane {
  id: string | null;
  label: string;
  sessionId: string;
  taskId: string | null;
  rssBytes: number | null;
}

export interface CapCount {
  ceiling: number;
  /** Rows with a live pid; a row whose liveness cannot be told counts as live (D5). Records never count (D9). */
  live: number;
  /** Of `live`, rows counted only because their liveness is unknown. */
  liveUnknown: number;
  records: number;
  gone: number;
  leaving: Leaving[];
  awaitingHuman: HeldLane[];
}

/** Does this row hold a slot? A pid that lives, or whose liveness is unknown, or a session starting (no pid yet). */
export function holdsSlot(s: Pick<SessionView, 'pid' | 'live' | 'starting'>): boolean {
  return holdsProcess(s);
}

export function countCap(snap: Pick<FleetSnapshot, 'sessions'>, ceiling: number): CapCount {
  const out: CapCount = { ceiling, live: 0, liveUnknown: 0, records: 0, gone: 0, leaving: [], awaitingHuman: [] };
  for (const s of snap.sessions) {
    if (s.pid === null && !s.starting) {
      out.records++;
      continue;
    }
    if (s.live === false) {
      out.gone++;
      continue;
    }
    out.live++;
    if (s.live === null) out.liveUnknown++;
    const leaving = leavingOf(s);
    if (leaving) out.leaving.push(leaving);
    if (laneOf(s) === 'awaiting-human')
      out.awaitingHuman.push({ id: s.id, label: s.label, sessionId: s.sessionId, taskId: s.taskId, rssBytes: s.rssBytes });
  }
  return out;
}

/** On its way out: its task is terminal, asked or requested, not yet exited or given up — or expire is requesting it. */
export function leavingOf(s: SessionView): Leaving | null {
  const e = s.evidence;
  const base = { id: s.id, label: s.label, sessionId: s.sessionId, rssBytes: s.rssBytes };
  if (e.openTasks.length || e.invalidTasks.length) return null;
  const t = e.task;
  if (t) {
    const l = t.terminal ? leaving(taskChain(t)) : null;
    return l ? { ...base, taskId: t.id, via: 'task', ...l } : null;
  }
  const l = e.expire ? leaving({ kind: 'expire', ...e.expire }) : null;
  return l ? { ...base, taskId: null, via: 'expire', ...l } : null;
}

/** "4 finished sessions are being asked to exit" */
export function leavingPhrase(n: number): string {
  return n === 1 ? '1 finished session is being asked to exit' : `${n} finished sessions are being asked to exit`;
}

/**
 * The one log line of a refused start (DESIGN §6): `cap reached: 36/35 — not starting; 4 finished
 * sessions are being asked to exit`. `counted` is live rows plus admissions not yet on the roster;
 * `queued` the --wait starts ahead of this one, which a free slot goes to first.
 */
export function capLine(counted: number, ceiling: number, leaving: number, o: { queued?: number; doing?: string } = {}): string {
  const q = o.queued ? ` + ${o.queued} queued` : '';
  return `cap reached: ${counted}/${ceiling}${q} — ${o.doing ?? 'not starting'}; ${leavingPhrase(leaving)}`;
}

/** The hour an alarm key is bucketed by, so cap-reached is raised at most once per hour: "2026-11-30T12". */
export function hourBucket(ms: number): string {
  return new Date(ms).toISOString().slice(0, 13);
}
