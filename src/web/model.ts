// What the pages and the JSON API show, derived from one snapshot: each row's lane, the step its chain
// is on, its reasons in words, and each task's latched steps as a timeline. Pure but for ledger reads.
export { resumeLines, shellWord } from '../report/resume.js';
import { sessionJson, snapshotJson, type FleetSnapshot, type SessionView } from '../evidence/fleet.js';
import { buildReport, laneOf, type Lane, type Report } from '../report/report.js';
import { readExit } from '../store/ledger.js';
import { requestExitId } from '../../queues/session-exit.js';
import { REASONS, type ExpireFacts, type Reason, type TaskFacts } from '../doctrine/verdict.js';
import { memAvailable, underPressure } from '../evidence/meminfo.js';
import type { Config } from '../config.js';

/** A task's latched steps: the verdict's TaskFacts without the id. */
export type Latched = Omit<TaskFacts, 'id'>;

/** Where a chain stands, in a person's words: released / asked / request n of 3 / exited / gave up. */
export function stepOf(task: Latched | null, expire: ExpireFacts | null | undefined, max: number): string {
  if (!task) {
    if (!expire) return '';
    if (expire.exitedAt) return 'exited';
    if (expire.gaveUpAt) return 'gave up';
    return expire.requests ? `expire request ${expire.requests} of ${max}` : '';
  }
  if (!task.terminal) return '';
  if (task.exitGaveUpAt) return 'gave up';
  if (task.exitedAt) return 'exited';
  if (task.exitRequests) return `request ${task.exitRequests} of ${max}`;
  if (task.exitAskedAt) return 'asked';
  if (task.releasedAt) return 'released';
  return 'not yet released';
}

export interface TimelineStep {
  label: string;
  at: string | null;
  done: boolean;
}

/** A task's latched steps in order, with the ones still ahead (released → asked → requests → the end). */
export function timelineOf(task: Latched & { id: string }, sessionId: string | null, stateDir: string, max: number): TimelineStep[] {
  const steps: TimelineStep[] = [
    { label: 'released', at: task.releasedAt ?? null, done: Boolean(task.releasedAt) },
    { label: 'asked', at: task.exitAskedAt ?? null, done: Boolean(task.exitAskedAt) },
  ];
  for (let n = 1; n <= max; n++) {
    const done = task.exitRequests >= n;
    // each request's own time is in the exit ledger; the task file keeps only the latest
    const called = done && sessionId ? readExit(stateDir, requestExitId(task.id, sessionId, n))?.calledAt : undefined;
    steps.push({ label: `request ${n}`, at: called ?? (done && n === task.exitRequests ? (task.exitRequestedAt ?? null) : null), done });
  }
  if (task.exitGaveUpAt) steps.push({ label: 'gave up', at: task.exitGaveUpAt, done: true });
  else steps.push({ label: 'exited', at: task.exitedAt ?? null, done: Boolean(task.exitedAt) });
  return steps;
}

export function reasonWords(r: string): string {
  return (REASONS as Record<string, string>)[r] ?? r;
}

export interface Row {
  s: SessionView;
  lane: Lane | null;
  step: string;
  timeline: TimelineStep[] | null;
}

export function rowsOf(snap: FleetSnapshot, stateDir: string, max: number): Row[] {
  return snap.sessions.map((s) => {
    const live = s.live === true;
    const task = s.evidence.task;
    return {
      s,
      lane: live ? laneOf(s) : null,
      step: stepOf(task, s.evidence.expire, max),
      timeline: task?.terminal ? timelineOf(task, s.sessionId, stateDir, max) : null,
    };
  });
}

export interface TaskTimeline {
  id: string;
  state: string;
  sessionId: string | null;
  step: string;
  latest: number;
  timeline: TimelineStep[];
}

/** Terminal tasks that have latched anything, most recently moved first. */
export function taskTimelines(snap: FleetSnapshot, stateDir: string, max: number, limit = 40): TaskTimeline[] {
  const moved = (t: (typeof snap.tasks)[number]) => Math.max(...[t.releasedAt, t.exitAskedAt, t.exitRequestedAt, t.exitedAt, t.exitGaveUpAt].filter(Boolean).map((x) => Date.parse(x!)));
  return snap.tasks
    .filter((t) => t.terminal && t.releasedAt)
    .map((t) => ({ t, latest: moved(t) }))
    .sort((a, b) => b.latest - a.latest || (a.t.id < b.t.id ? -1 : 1))
    .slice(0, limit) // the ledger is read only for the tasks shown
    .map(({ t, latest }) => ({ id: t.id, state: t.state, sessionId: t.sessionId, step: stepOf(t, null, max), latest, timeline: timelineOf(t, t.sessionId, stateDir, max) }));
}

export interface MemoryNow {
  availableBytes: number | null;
  /** MemAvailable is known and under memoryFloorMB: eligible exits go largest RSS first. */
  pressure: boolean;
  floorBytes: number | null;
}

/** MemAvailable now, against the configured floor (src/meminfo.ts; a floor of null is never under). */
export function memoryNow(config: Pick<Config, 'memoryFloorMB'>, available: number | null = memAvailable()): MemoryNow {
  const floorBytes = config.memoryFloorMB === null ? null : config.memoryFloorMB * 1024 * 1024;
  return { availableBytes: available, pressure: underPressure(floorBytes, available), floorBytes };
}

/** The report with what the memory figures need: the eligible give-back, MemAvailable and the pressure flag. */
export function reportNow(snap: FleetSnapshot, mem: MemoryNow): Report {
  return buildReport(snap, { availableBytes: mem.availableBytes, pressure: mem.pressure });
}

/** `GET /api/sessions`: the `sunset verdict --json` object, each session with its lane, step and reasons in words. */
export function sessionsJson(snap: FleetSnapshot, stateDir: string, max: number, mem: MemoryNow) {
  const rows = rowsOf(snap, stateDir, max);
  const report: Report = reportNow(snap, mem);
  return {
    ...snapshotJson(snap),
    sessions: rows.map((r) => ({
      ...sessionJson(r.s),
      lane: r.lane,
      step: r.step || null,
      reasonWords: r.s.reasons.map((x: Reason) => reasonWords(x)),
    })),
    // totalBytes, byLane, eligible { sessions, bytes }, availableBytes, pressure; and the floor they are judged by
    memory: { ...report.memory, floorBytes: mem.floorBytes },
  };
}
