// One sweep shared by every job that needs evidence at about the same moment, and never two at once:
// callers that accept evidence up to `maxAgeMs` old share the last snapshot or the sweep in flight; a
// caller that needs fresher evidence waits for the next sweep, which every such caller shares.
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot, type GatherOptions } from './fleet.js';

/** A snapshot at most maxAgeMs old; `roster: 'cli'` asks for one that stands on the CLI's own word (not its files). */
export type FleetSource = (maxAgeMs: number, o?: { roster?: 'cli' }) => Promise<FleetSnapshot>;

/** How long the last snapshot is kept: longer than any caller's maxAgeMs (the web's 2 s is the longest). */
const KEEP_MS = 10_000;

export function fleetCache(config: Config, opts: () => GatherOptions = () => ({})): FleetSource {
  type Sweep = { started: number; cli: boolean; p: Promise<FleetSnapshot> };
  let last: { started: number; cli: boolean; snap: FleetSnapshot } | null = null;
  let inflight: Sweep | null = null;
  let next: { cli: boolean; p: Promise<FleetSnapshot> } | null = null;

  // no caller takes evidence older than a few seconds: a snapshot of a big fleet (every row, every task) is not
  // kept past that, so that sunset at rest holds none of it (docs/benchmarks.md, idle RSS)
  let dropTimer: NodeJS.Timeout | null = null;
  const forget = () => {
    if (dropTimer) clearTimeout(dropTimer);
    const kept = last;
    dropTimer = setTimeout(() => {
      if (last === kept) last = null;
    }, KEEP_MS);
    dropTimer.unref();
  };

  const sweep = (cli: boolean): Promise<FleetSnapshot> => {
    const started = Date.now();
    const p = gatherFleet(config, { ...opts(), ...(cli ? { roster: 'cli' as const } : {}) })
      .then((snap) => {
        const fromCli = snap.rosterFrom === 'cli';
        if (!last || last.started < started) {
          last = { started, cli: fromCli, snap };
          forget();
        }
        return snap;
      })
      .finally(() => {
        if (inflight?.p === p) inflight = null;
      });
    inflight = { started, cli, p };
    return p;
  };

  return async (maxAgeMs, o = {}) => {
    const wantCli = o.roster === 'cli';
    const horizon = Date.now() - maxAgeMs;
    // a sweep on the CLI's word serves everyone; one on the files serves only those who do not ask for the CLI
    if (last && last.started >= horizon && (last.cli || !wantCli)) return last.snap;
    if (inflight && inflight.started >= horizon && (inflight.cli || !wantCli)) return inflight.p;
    if (!inflight) return sweep(wantCli);
    // a sweep is running but started too early (or on the files) for this caller: the next one starts when it ends
    if (next && (next.cli || !wantCli)) return next.p;
    const after = (next?.p ?? inflight.p).catch(() => undefined);
    const p = after.then(() => {
      if (next?.p === p) next = null;
      return sweep(wantCli);
    });
    next = { cli: wantCli || Boolean(next?.cli), p };
    return p;
  };
}
