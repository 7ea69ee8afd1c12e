// One look before an admission: the fleet (one sweep), the cap's count, and the leases that sweep shows —
// a lease whose started command became a live roster row is counted once, as that row (admit-store.ts).
import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot } from '../evidence/fleet.js';
import { parseStat } from '../evidence/proc.js';
import { expireFactsReader } from '../store/expire-state.js';
import { memAvailable } from '../evidence/meminfo.js';
import { countCap, holdsSlot, type CapCount } from './cap.js';
import type { AdmitStore, Lease } from './admit-store.js';
import { memoryFacts, type MemoryFacts } from './memory.js';

// ------------------------------------------------------------------ which leases a snapshot shows

export interface ProcId {
  pid: number;
  startMs: number;
}

/**
 * The leases whose session this snapshot shows: a live row whose process, or one of its ancestors, is
 * the lease's command (same pid and same process start, so a reused pid never matches). Pure.
 */
export function leasesShown(leases: Lease[], livePids: number[], ancestry: (pid: number) => ProcId[]): Set<string> {
  const shown = new Set<string>();
  const bound = leases.filter((l) => l.pid !== null && l.startMs !== null);
  if (!bound.length) return shown;
  for (const pid of livePids) {
    for (const a of ancestry(pid)) {
      const l = bound.find((x) => x.pid === a.pid && x.startMs === a.startMs);
      if (l) shown.add(l.id);
    }
  }
  return shown;
}

/** A process and its ancestors (nearest first), from /proc; stops at init or what cannot be read. */
export function procAncestry(pid: number, maxDepth = 64): ProcId[] {
  const out: ProcId[] = [];
  let cur = pid;
  for (let i = 0; i < maxDepth && cur > 1; i++) {
    const s = procStat(cur);
    if (!s) break;
    out.push({ pid: cur, startMs: s.startMs });
    cur = s.ppid;
  }
  return out;
}

/** A process's /proc stat (ppid, start), or null when it cannot be read. */
export function procStat(pid: number) {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------ one look: the fleet, the leases, the count

export interface Look {
  snap: FleetSnapshot;
  count: CapCount;
  leases: Lease[];
  shown: Set<string>;
  /** MemAvailable, the floor and a typical session: what admission by memory weighs (memory.ts). */
  memory: MemoryFacts;
}

/** The leases a snapshot shows (their sessions are on the roster, so counted already as rows). */
export function shownBy(snap: FleetSnapshot, leases: Lease[]): Set<string> {
  const pids = snap.sessions.filter((s) => holdsSlot(s) && s.pid !== null).map((s) => s.pid!);
  return leasesShown(leases, pids, procAncestry);
}

/** The memory figures of a snapshot: MemAvailable from config.meminfoPath, the live sessions' RSS. */
export function memoryOf(config: Config, snap: FleetSnapshot): MemoryFacts {
  const rss = snap.sessions.filter((s) => holdsSlot(s) && s.live !== false).map((s) => s.rssBytes);
  return memoryFacts(config, config.memoryFloorMB === null ? null : memAvailable(config.meminfoPath), rss);
}

/** One sweep (RSS read only when a memory floor is set: it measures a typical session) and the leases it does not show. */
export async function look(config: Config, store: AdmitStore, o: { now?: () => number } = {}): Promise<Look> {
  const rss = config.memoryFloorMB !== null;
  const snap = await gatherFleet(config, { roster: 'cli', rss, expireFacts: expireFactsReader(config.stateDir) });
  const count = countCap(snap, config.cap);
  const leases = await store.leases((o.now ?? Date.now)());
  return { snap, count, leases, shown: shownBy(snap, leases), memory: memoryOf(config, snap) };
}
