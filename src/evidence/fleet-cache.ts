// One sweep shared by every job that needs evidence at about the same moment, and never two of a kind at once:
// callers that accept evidence up to `maxAgeMs` old share the last snapshot or the sweep in flight; a
// caller that needs fresher evidence waits for the next sweep, which every such caller shares. Sweeps on the
// CLI's word (`claude agents --json --all`: a reconcile, a person's exit) and sweeps on Claude Code's files
// each have a lane of their own: a CLI call takes seconds on a loaded box (docs/benchmarks.md, the exit wave),
// and the schedule's steps, which read the files, do not wait behind it.
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot, type GatherOptions } from './fleet.js';
import { BIG_SWEEP, collectGarbage } from '../heap.js';

/**
 * A snapshot at most maxAgeMs old; `roster: 'cli'` asks for one that stands on the CLI's own word (not its files);
 * `tmux: 'if-needed'` takes one that read the tmux server only where a verdict could turn on it (the schedule's
 * sweeps: src/evidence/fleet.ts GatherOptions.tmux) — by default every interactive session's pane is read.
 */
export type FleetSource = ((maxAgeMs: number, o?: { roster?: 'cli'; tmux?: 'if-needed' }) => Promise<FleetSnapshot>) & {
  /** Hear of every snapshot this source gathers (the census rides on the reconcile's sweep); returns the unsubscribe. */
  onSweep?: (listener: (snap: FleetSnapshot) => void) => () => void;
};

/** What a sweep stood on: a sweep serves a caller when it is at least as strong in both. */
interface Strength {
  cli: boolean;
  tmux: boolean;
}
const covers = (have: Strength, want: Strength) => (have.cli || !want.cli) && (have.tmux || !want.tmux);

/**
 * How long the last snapshot is kept: longer than any caller's maxAgeMs (the web's 2 s is the longest), and no
 * longer — let go before V8's memory reducer runs its GCs after a pass (~8 s on), so that they free it.
 */
export const KEEP_MS = 3_000;

export function fleetCache(config: Config, opts: () => GatherOptions = () => ({})): FleetSource {
  type Sweep = Strength & { started: number; p: Promise<FleetSnapshot> };
  /** One sweep in flight at most, and the one that follows it (shared by every caller waiting for it). */
  type Lane = { inflight: Sweep | null; next: (Strength & { p: Promise<FleetSnapshot> }) | null };
  let last: (Strength & { started: number; snap: FleetSnapshot }) | null = null;
  const lanes: { cli: Lane; files: Lane } = { cli: { inflight: null, next: null }, files: { inflight: null, next: null } };

  // no caller takes evidence older than a few seconds: a snapshot of a big fleet (every row, every task) is not
  // kept past that, so that sunset at rest holds none of it (docs/benchmarks.md, idle RSS)
  let dropTimer: NodeJS.Timeout | null = null;
  const forget = () => {
    if (dropTimer) clearTimeout(dropTimer);
    const kept = last;
    // the timer lets go of itself when it fires: a fired Timeout still holds its callback, and so `kept` (the
    // whole snapshot, ~4 MB on the census fleet), for as long as anything holds the Timeout
    dropTimer = setTimeout(() => {
      dropTimer = null;
      if (last !== kept) return;
      last = null;
      // a big snapshot let go at rest: its memory back now, not whenever V8 next needs it (src/heap.ts)
      if (kept && kept.snap.sessions.length + kept.snap.tasks.length >= BIG_SWEEP) collectGarbage();
    }, KEEP_MS);
    dropTimer.unref();
  };

  const listeners = new Set<(snap: FleetSnapshot) => void>();
  const sweep = (lane: Lane, want: Strength): Promise<FleetSnapshot> => {
    const started = Date.now();
    const p = gatherFleet(config, { ...opts(), ...(want.cli ? { roster: 'cli' as const } : {}), tmux: want.tmux ? 'all' : 'if-needed' })
      .then((snap) => {
        if (!last || last.started < started) {
          last = { started, cli: snap.rosterFrom === 'cli', tmux: want.tmux, snap };
          forget();
        }
        for (const l of listeners) {
          try {
            l(snap);
          } catch {
            /* a listener's trouble is its own */
          }
        }
        return snap;
      })
      .finally(() => {
        if (lane.inflight?.p === p) lane.inflight = null;
      });
    lane.inflight = { started, ...want, p };
    return p;
  };

  const source: FleetSource = async (maxAgeMs, o = {}) => {
    const want: Strength = { cli: o.roster === 'cli', tmux: o.tmux !== 'if-needed' };
    const horizon = Date.now() - maxAgeMs;
    // a sweep on the CLI's word serves everyone; one on the files serves only those who do not ask for the CLI (and so for tmux)
    if (last && last.started >= horizon && covers(last, want)) return last.snap;
    for (const l of [lanes.cli, lanes.files])
      if (l.inflight && l.inflight.started >= horizon && covers(l.inflight, want)) return l.inflight.p;
    // a caller on the CLI's word waits in its lane; the others in the files' lane, never behind a slow CLI call
    const lane = want.cli ? lanes.cli : lanes.files;
    if (!lane.inflight) return sweep(lane, want);
    // a sweep is running but started too early (or is weaker) for this caller: the next one starts when it ends
    if (lane.next && covers(lane.next, want)) return lane.next.p;
    const stronger: Strength = { cli: want.cli || Boolean(lane.next?.cli), tmux: want.tmux || Boolean(lane.next?.tmux) };
    const after = (lane.next?.p ?? lane.inflight.p).catch(() => undefined);
    const p = after.then(() => {
      if (lane.next?.p === p) lane.next = null;
      return sweep(lane, stronger);
    });
    lane.next = { ...stronger, p };
    return p;
  };
  source.onSweep = (listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  return source;
}
