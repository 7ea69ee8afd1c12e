// One sweep shared by every job that needs evidence at about the same moment, and never two at once:
// callers that accept evidence up to `maxAgeMs` old share the last snapshot or the sweep in flight; a
// caller that needs fresher evidence waits for the next sweep, which every such caller shares.
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot, type GatherOptions } from './fleet.js';

export type FleetSource = (maxAgeMs: number) => Promise<FleetSnapshot>;

export function fleetCache(config: Config, opts: () => GatherOptions = () => ({})): FleetSource {
  let last: { started: number; snap: FleetSnapshot } | null = null;
  let inflight: { started: number; p: Promise<FleetSnapshot> } | null = null;
  let next: Promise<FleetSnapshot> | null = null;

  const sweep = (): Promise<FleetSnapshot> => {
    const started = Date.now();
    const p = gatherFleet(config, opts())
      .then((snap) => {
        if (!last || last.started < started) last = { started, snap };
        return snap;
      })
      .finally(() => {
        if (inflight?.p === p) inflight = null;
      });
    inflight = { started, p };
    return p;
  };

  return async (maxAgeMs) => {
    const horizon = Date.now() - maxAgeMs;
    if (last && last.started >= horizon) return last.snap;
    if (inflight && inflight.started >= horizon) return inflight.p;
    if (!inflight) return sweep();
    // a sweep is running but started too early for this caller: the next one starts when it ends
    next ??= inflight.p.catch(() => undefined).then(() => {
      next = null;
      return sweep();
    });
    return next;
  };
}
