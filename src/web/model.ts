// What the pages and the JSON API show, derived from one snapshot: each row's lane, the step its chain
// is on, its reasons in words, and each task's latched steps as a timeline. Pure but for ledger reads.
export { resumeLines, shellWord } from '../report/resume.js';
import { sessionJson, snapshotJson, type FleetSnapshot, type SessionView } from '../evidence/fleet.js';
import { buildReport, laneOf, type Lane, type Report } from '../report/report.js';
import { readExit } from '../store/ledger.js';
import { requestExitId } from '../../queues/session-exit.js';
import { REASONS, taskChain, type ExpireFacts, type Reason, type TaskFacts } from '../doctrine/verdict.js';
import { stepWords, timeline, type TimelineStep } from '../doctrine/chain.js';
import { memAvailable, underPressure } from '../evidence/meminfo.js';
import type { Config } from '../config.js';

/** A task's latched steps: the verdict's TaskFacts without the id. */
export type Latched = Omit<TaskFacts, 'id'>;

/** Where a chain stands, in a person's words (the doctrine's chain: src/doctrine/chain.ts). */
export function stepOf(task: Latched | null, expire: ExpireFacts | null | undefined, max: number): string {
  if (task) return task.terminal ? stepWords(taskChain({ ...task, id: '' }), max) : '';
  return expire ? stepWords({ kind: 'expire', ...expire }, max) : '';
}

export type { TimelineStep };

/** A task's latched steps in order, with the ones still ahead; each request's own time from the exit ledger. */
export function timelineOf(task: Latched & { id: string }, sessionId: string | null, stateDir: string, max: number): TimelineStep[] {
  return timeline(taskChain(task), max, (n) =>
    sessionId ? readExit(stateDir, requestExitId(task.id, sessionId, n))?.calledAt : undefined,
  );
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
  const moved = (t: (typeof snap.tasks)[number]) =>
    Math.max(...[t.releasedAt, t.exitAskedAt, t.exitRequestedAt, t.exitedAt, t.exitGaveUpAt].filter(Boolean).map((x) => Date.parse(x!)));
  return snap.tasks
    .filter((t) => t.terminal && t.releasedAt)
    .map((t) => ({ t, latest: moved(t) }))
    .sort((a, b) => b.latest - a.latest || (a.t.id < b.t.id ? -1 : 1))
    .slice(0, limit) // the ledger is read only for the tasks shown
    .map(({ t, latest }) => ({
      id: t.id,
      state: t.state,
      sessionId: t.sessionId,
      step: stepOf(t, null, max),
      latest,
      timeline: timelineOf(t, t.sessionId, stateDir, max),
    }));
}

export interface MemoryNow {
  availableBytes: number | null;
  /** MemAvailable is known and under memoryFloorMB: eligible exits go largest RSS first. */
  pressure: boolean;
  floorBytes: number | null;
}

/** MemAvailable now (from config meminfoPath), against the configured floor (src/meminfo.ts; a floor of null is never under). */
export function memoryNow(
  config: Pick<Config, 'memoryFloorMB'> & Partial<Pick<Config, 'meminfoPath'>>,
  available: number | null = memAvailable(config.meminfoPath),
): MemoryNow {
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
