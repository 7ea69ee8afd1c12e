// One sweep shared by every job that needs evidence at about the same moment, and never two at once:
// callers that accept evidence up to `maxAgeMs` old share the last snapshot or the sweep in flight; a
// caller that needs fresher evidence waits for the next sweep, which every such caller shares.
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot, type GatherOptions } from './fleet.js';

/** A snapshot at most maxAgeMs old; `roster: 'cli'` asks for one that stands on the CLI's own word (not its files). */
export type FleetSource = (maxAgeMs: number, o?: { roster?: 'cli' }) => Promise<FleetSnapshot>;

export function fleetCache(config: Config, opts: () => GatherOptions = () => ({})): FleetSource {
  type Sweep = { started: number; cli: boolean; p: Promise<FleetSnapshot> };
  let last: { started: number; cli: boolean; snap: FleetSnapshot } | null = null;
  let inflight: Sweep | null = null;
  let next: { cli: boolean; p: Promise<FleetSnapshot> } | null = null;

  const sweep = (cli: boolean): Promise<FleetSnapshot> => {
    const started = Date.now();
    const p = gatherFleet(config, { ...opts(), ...(cli ? { roster: 'cli' as const } : {}) })
      .then((snap) => {
        const fromCli = snap.rosterFrom === 'cli';
        if (!last || last.started < started) last = { started, cli: fromCli, snap };
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
