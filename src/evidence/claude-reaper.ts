// Claude Code's own reaper, seen from outside (docs/real-cli-notes.md, "Claude Code's own reaper"; read from the
// 2.1.328 binary and checked by running it): every 60 s its daemon retires a background session that is settled
// and idle for an hour (60 s when free memory is under 1 GiB), unless someone is attached, it is pinned, or it
// has work queued or in flight. sunset shows when that would happen, so a person sees both reapers in one place;
// sunset's pins keep it off lanes a person is waiting on (src/pipeline/pins.ts). Pure over what sunset reads
// (state.json, the pins, attached clients); what the daemon keeps only in memory (recent input) is not seen, so
// this is the earliest it could act, never a promise.
import type { JobFacts } from '../doctrine/verdict.js';

export const REAPER_IDLE_MS = 60 * 60_000;
export const REAPER_IDLE_LOW_MEMORY_MS = 60_000;
/** Kinds of in-flight work the daemon counts as leftovers once a job is final (it retires those anyway). */
const LEFTOVER_KINDS = new Set(['local_bash']);

export interface ReaperEta {
  /** When Claude Code's daemon would retire it at the earliest; null: it will not while this holds. */
  at: string | null;
  why: string;
}

export function claudeReaperEta(
  job: JobFacts | null | undefined,
  o: { pinned: boolean | null; attached: boolean | null; lowMemory?: boolean },
): ReaperEta {
  if (!job) return { at: null, why: 'no job state: Claude Code does not retire it' };
  if (o.attached) return { at: null, why: 'a person is attached' };
  if (o.pinned) return { at: null, why: 'pinned' };
  if (job.queued === null || job.inFlight === null)
    return { at: null, why: 'its work in flight cannot be told: Claude Code does not retire it' };
  if ((job.queued ?? 0) > 0) return { at: null, why: 'a prompt is queued' };
  const final = job.state === 'done' || job.state === 'failed' || job.state === 'stopped';
  if ((job.tasks ?? 0) > 0 && !(final && (job.kinds ?? []).every((k) => LEFTOVER_KINDS.has(k)))) return { at: null, why: 'work in flight' };
  const settled = (final && job.tempo !== 'active') || job.tempo === 'idle' || job.tempo === 'blocked';
  if (!settled) return { at: null, why: 'not settled: a turn is running' };
  const since = job.updatedAt ? Date.parse(job.updatedAt) : NaN;
  if (!Number.isFinite(since)) return { at: null, why: 'when it settled cannot be told' };
  const wait = o.lowMemory ? REAPER_IDLE_LOW_MEMORY_MS : REAPER_IDLE_MS;
  return {
    at: new Date(since + wait).toISOString(),
    why: `settled (${job.state}) since ${job.updatedAt}: idle ${o.lowMemory ? '60 s (low memory)' : 'an hour'} and Claude Code retires it`,
  };
}
