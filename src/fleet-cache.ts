// One sweep shared by every job that needs evidence at about the same moment: callers that accept
// evidence up to `maxAgeMs` old share the last snapshot or the sweep in flight. maxAgeMs 0 = fresh.
import type { Config } from './config.js';
import { gatherFleet, type FleetSnapshot, type GatherOptions } from './fleet.js';

export type FleetSource = (maxAgeMs: number) => Promise<FleetSnapshot>;

export function fleetCache(config: Config, opts: () => GatherOptions = () => ({})): FleetSource {
  let last: { at: number; snap: FleetSnapshot } | null = null;
  let inflight: { started: number; p: Promise<FleetSnapshot> } | null = null;
  return async (maxAgeMs) => {
    const now = Date.now();
    if (last && now - last.at <= maxAgeMs) return last.snap;
    // a sweep that started after the caller's horizon is fresh enough for it
    if (inflight && now - inflight.started <= maxAgeMs) return inflight.p;
    const started = Date.now();
    const p = gatherFleet(config, opts()).then((snap) => {
      if (!last || last.at < started) last = { at: started, snap };
      return snap;
    });
    inflight = { started, p };
    try {
      return await p;
    } finally {
      if (inflight?.p === p) inflight = null;
    }
  };
}
