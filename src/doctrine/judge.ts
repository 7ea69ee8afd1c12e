// May this job act now? One pure judgement for every act of the pipeline — the ask, request n, the give-up,
// expire's request n, a person's exit, and the exit call itself — over the session's fresh verdict: act,
// defer to a time, or end (and why). Judging writes nothing; the worker that acts latches.
import { CHAIN_ENDING, UNREACHABLE, type Reason } from './reasons.js';
import type { SessionView } from '../evidence/fleet.js';

export type Act = 'ask' | 'request' | 'give-up' | 'expire' | 'exit' | 'person';

export type Judgement =
  | { kind: 'act'; view: SessionView }
  /** a protection that may pass: look again at `at` */
  | { kind: 'defer'; at: number; why: string; view?: SessionView }
  /** the act will never be right on this chain: `gone` means the session is not running any more (latch exitedAt) */
  | { kind: 'end'; why: string; gone?: boolean; view?: SessionView };

export interface JudgeInput {
  act: Act;
  /** The session's rows in a sweep that answered (sessionFor); null when it is absent from the roster. */
  view: SessionView | null;
  /** false: the roster did not answer (missing evidence protects, and passes). */
  rosterOk: boolean;
  /** The task whose chain this is (ask, request, give-up, exit of a request). */
  taskId?: string;
  /** An untasked session's chain (expire, a Claude Code job's): it ends once a task names the session. */
  untasked?: boolean;
  /** A Claude Code job's chain: its key (short id @ process start); it ends once the session is no longer that finished job. */
  jobKey?: string;
  /** A person's exit: their override of every protection but the unreachable ones. */
  override?: boolean;
  now: number;
  /** When a passing protection is looked at again. */
  recheck: number;
  /** When the grace window ends (a chain that has one): grace-pending alone is deferred to then, not to recheck. */
  graceEnd?: number;
  /** The silence window: a session protected only by a recent transcript (and the grace) is deferred to when both have passed. */
  silence?: number;
}

export function judge(j: JudgeInput): Judgement {
  const later = j.now + j.recheck;
  if (!j.rosterOk) return { kind: 'defer', at: later, why: 'roster probe failed' };
  const v = j.view;
  if (!v || v.verdict === 'record' || v.verdict === 'gone')
    return { kind: 'end', why: v ? v.verdict : 'absent from the roster', gone: true, ...(v ? { view: v } : {}) };

  if (j.act === 'person') {
    const hard = v.reasons.filter((r) => UNREACHABLE.has(r));
    if (hard.length) return { kind: 'end', why: hard.join(','), view: v };
    if (v.verdict === 'eligible' || j.override) return { kind: 'act', view: v };
    return { kind: 'end', why: v.reasons.join(','), view: v };
  }

  // the chain's owner: a later task on the same session supersedes this one; a task that now names an untasked session ends expire
  if (j.taskId !== undefined && v.taskId && v.taskId !== j.taskId && !v.evidence.openTasks.length)
    return { kind: 'end', why: `superseded by task ${v.taskId}`, view: v };
  if ((j.act === 'expire' || j.untasked) && (v.taskId || v.evidence.openTasks.length || v.evidence.invalidTasks.length))
    return { kind: 'end', why: 'a task now names this session', view: v };
  if (j.jobKey !== undefined && v.evidence.native?.key !== j.jobKey)
    return { kind: 'end', why: 'no longer the finished job this chain began with', view: v };

  if (v.verdict === 'protected') {
    const ending = v.reasons.filter((r) => CHAIN_ENDING.has(r));
    if (ending.length) return { kind: 'end', why: ending.join(','), view: v };
    // the scan judges untasked sessions on the expire window alone: a protection now means the next scan looks again
    // (an exit job already requested waits instead, like any other: a request counts only once delivered)
    if (j.act === 'expire') return { kind: 'end', why: v.reasons.join(','), view: v };
    return { kind: 'defer', at: passesAt(j, v) ?? later, why: v.reasons.join(','), view: v };
  }
  return { kind: 'act', view: v };
}

/** When protections that pass by time alone (the grace, a recent transcript) have all passed; undefined: another protects. */
function passesAt(j: JudgeInput, v: SessionView): number | undefined {
  let at = -Infinity;
  for (const r of v.reasons as Reason[]) {
    if (r === 'grace-pending' && j.graceEnd !== undefined && Number.isFinite(j.graceEnd)) at = Math.max(at, j.graceEnd);
    else if (r === 'transcript-recent' && j.silence !== undefined && v.evidence.silenceMs !== null)
      at = Math.max(at, j.now - v.evidence.silenceMs + j.silence);
    else return undefined;
  }
  return Number.isFinite(at) ? at : undefined;
}
