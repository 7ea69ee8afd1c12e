// Admission by memory (DESIGN §6, issue 30): a start is refused when MemAvailable, less the memory a typical
// session of this fleet reaches, would fall below memoryFloorMB. A typical session is the median RSS of the
// fleet's live sessions, or admit.sessionMB while none can be measured. Pure over plain figures: the look
// (admit-look.ts) reads them, the lease script (admit-store.ts) compares its count of starts in flight with
// memoryRoom, and these words say which limit refused a start and by how much.
import { formatBytes } from '../report/report.js';
import { capLine, leavingPhrase } from './cap.js';

const MB = 1024 * 1024;

export interface Typical {
  bytes: number;
  /** `median`: of the live sessions measured; `default`: admit.sessionMB, none could be measured. */
  from: 'median' | 'default';
  /** How many live sessions were measured. */
  sampled: number;
}

export interface MemoryFacts {
  /** MemAvailable in bytes; null when the meminfo file cannot be read or holds none. */
  availableBytes: number | null;
  /** memoryFloorMB in bytes; null = no floor: memory never refuses a start. */
  floorBytes: number | null;
  typical: Typical;
  meminfoPath: string;
}

/** The median of the sizes that are known (a session whose RSS cannot be read is not measured), else the default. */
export function typicalSession(rss: readonly (number | null | undefined)[], defaultBytes: number): Typical {
  const xs = rss.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0).sort((a, b) => a - b);
  if (!xs.length) return { bytes: defaultBytes, from: 'default', sampled: 0 };
  const mid = Math.floor(xs.length / 2);
  const bytes = xs.length % 2 ? xs[mid] : Math.round((xs[mid - 1] + xs[mid]) / 2);
  return { bytes, from: 'median', sampled: xs.length };
}

export function memoryFacts(
  config: { memoryFloorMB: number | null; admit: { sessionMB: number }; meminfoPath: string },
  availableBytes: number | null,
  liveRss: readonly (number | null | undefined)[],
): MemoryFacts {
  return {
    availableBytes,
    floorBytes: config.memoryFloorMB === null ? null : config.memoryFloorMB * MB,
    typical: typicalSession(liveRss, config.admit.sessionMB * MB),
    meminfoPath: config.meminfoPath,
  };
}

/** Why memory cannot be judged (a floor is set, MemAvailable unknown: a failing probe means "don't start"), else null. */
export function memoryUnknown(m: MemoryFacts): string | null {
  if (m.floorBytes === null || m.availableBytes !== null) return null;
  return `MemAvailable cannot be read from ${m.meminfoPath}, so the memory left is unknown`;
}

/**
 * How many more starts memory admits now: each takes a typical session's memory, and MemAvailable must stay at or
 * above the floor. null = no limit (no floor). A start is refused by memory when the starts already in flight
 * (leased, not yet on the roster; queued ahead) number at least this many.
 */
export function memoryRoom(m: MemoryFacts): number | null {
  if (m.floorBytes === null) return null;
  if (m.availableBytes === null) return 0;
  const spare = m.availableBytes - m.floorBytes;
  if (spare < 0) return 0;
  if (m.typical.bytes <= 0) return Number.MAX_SAFE_INTEGER;
  return Math.floor(spare / m.typical.bytes);
}

export interface MemoryShort {
  /** The starts counted: this one and those in flight before it. */
  starts: number;
  /** MemAvailable less a typical session for each of them. */
  leftBytes: number;
  /** How far that is under the floor (0 when not). */
  shortBytes: number;
}

/** What memory would be left after this start and `pending` others (in flight or queued ahead). Needs a floor and MemAvailable. */
export function memoryShort(m: MemoryFacts, pending: number): MemoryShort {
  const starts = pending + 1;
  const leftBytes = (m.availableBytes ?? 0) - m.typical.bytes * starts;
  return { starts, leftBytes, shortBytes: Math.max(0, (m.floorBytes ?? 0) - leftBytes) };
}

// ------------------------------------------------------------------ which limit refused, and by how much

export type Limit = 'count' | 'memory';

export interface Refusal {
  by: Limit[];
  count: { counted: number; ceiling: number; queued: number; leaving: number; reached: boolean; slotsShort: number };
  memory: (MemoryFacts & MemoryShort & { reached: boolean; room: number | null }) | null;
}

/**
 * Which limits a take refused by. `counted` is live + admissions in flight, `held` the admissions in flight
 * alone, `queued` the queued starts this one waits behind (0 for the head of the line). Pure.
 */
export function refusal(
  t: { counted: number; held: number; queued: number },
  ceiling: number,
  leaving: number,
  m: MemoryFacts | null,
): Refusal {
  const countReached = t.counted + t.queued >= ceiling;
  const room = m ? memoryRoom(m) : null;
  const pending = t.held + t.queued;
  const memReached = room !== null && pending >= room;
  const by: Limit[] = [...(countReached ? (['count'] as const) : []), ...(memReached ? (['memory'] as const) : [])];
  return {
    by,
    count: {
      counted: t.counted,
      ceiling,
      queued: t.queued,
      leaving,
      reached: countReached,
      slotsShort: Math.max(0, t.counted + t.queued - ceiling + 1),
    },
    memory: m && m.floorBytes !== null ? { ...m, ...memoryShort(m, pending), reached: memReached, room } : null,
  };
}

/** "memory floor reached: MemAvailable 2.1 GB less 500 MB (a typical session: …) leaves 1.6 GB, 448 MB under memoryFloorMB (2.0 GB)" */
export function memoryPhrase(m: MemoryFacts & MemoryShort): string {
  const typical =
    m.typical.from === 'median'
      ? `the median of ${m.typical.sampled} live session${m.typical.sampled === 1 ? '' : 's'}`
      : 'admit.sessionMB: no live session measured';
  const less =
    m.starts === 1
      ? `${formatBytes(m.typical.bytes)} (a typical session: ${typical})`
      : `${formatBytes(m.typical.bytes * m.starts)} (${m.starts} typical sessions of ${formatBytes(m.typical.bytes)}: this start and ${m.starts - 1} admitted or queued before it; ${typical})`;
  const under = m.shortBytes > 0 ? `${formatBytes(m.shortBytes)} under` : 'at or above';
  return `memory floor reached: MemAvailable ${formatBytes(m.availableBytes)} less ${less} leaves ${formatBytes(m.leftBytes)}, ${under} memoryFloorMB (${formatBytes(m.floorBytes)})`;
}

/**
 * The one line of a refused start: by count alone it is capLine's (`cap reached: 36/35 — not starting; …`); by
 * memory it names MemAvailable, the typical session and how far under the floor; by both, both.
 */
export function refusalLine(r: Refusal, doing = 'not starting'): string {
  const c = r.count;
  if (!r.by.includes('memory') || !r.memory) return capLine(c.counted, c.ceiling, c.leaving, { queued: c.queued, doing });
  const mem = memoryPhrase(r.memory);
  if (!r.by.includes('count')) return `${mem} — ${doing}; ${leavingPhrase(c.leaving)}`;
  return `cap reached: ${c.counted}/${c.ceiling}${c.queued ? ` + ${c.queued} queued` : ''}, and ${mem} — ${doing}; ${leavingPhrase(c.leaving)}`;
}

/** A refusal as `--json` prints it. */
export function refusalJson(r: Refusal): Record<string, unknown> {
  const m = r.memory;
  return {
    refusedBy: r.by,
    count: r.count,
    memory: m && {
      reached: m.reached,
      availableBytes: m.availableBytes,
      floorBytes: m.floorBytes,
      typicalBytes: m.typical.bytes,
      typicalFrom: m.typical.from,
      sampled: m.typical.sampled,
      starts: m.starts,
      leftBytes: m.leftBytes,
      shortBytes: m.shortBytes,
      room: m.room,
      meminfoPath: m.meminfoPath,
    },
  };
}
