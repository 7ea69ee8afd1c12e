// The census: what one sample of the fleet holds (src/report/sampler.ts takes them). Its counts and memory
// by lane are `sunset report`'s own (buildReport), so the two never disagree; the census adds what one
// look cannot keep — how long the sessions have been silent — and, from the audit log, the exits and
// asks since the previous sample.
import type { FleetSnapshot } from '../evidence/fleet.js';
import { auditFile, readAuditFrom } from '../store/audit.js';
import { buildReport, LANES, type Lane } from './report.js';

const MIN = 60_000;
const H = 60 * MIN;
/** Upper bounds of the silence buckets; the last bucket is ≥ 48 h (the expire window's default). */
export const SILENCE_BUCKETS: Array<{ label: string; below: number }> = [
  { label: '<15m', below: 15 * MIN },
  { label: '<1h', below: H },
  { label: '<6h', below: 6 * H },
  { label: '<24h', below: 24 * H },
  { label: '<48h', below: 48 * H },
  { label: '>=48h', below: Infinity },
];
export const IDLE_48H = 48 * H;

export interface Sample {
  v: 1;
  at: string;
  host: string;
  /** false: the roster probe failed, and the counts below say nothing about the fleet. */
  rosterOk: boolean;
  error?: string;
  rows: number;
  live: number;
  records: number;
  gone: number;
  rssBytes: number;
  byLane: Record<Lane, { sessions: number; bytes: number }>;
  silence: {
    /** The longest transcript silence among live sessions (null: none known). */
    longestMs: number | null;
    longestSessionId: string | null;
    buckets: Record<string, number>;
    /** Live sessions whose silence cannot be told (no transcript). */
    unknown: number;
  };
  /** The previous sample's time: exits and asks are counted since then (null on the first sample). */
  since: string | null;
  exits: number | null;
  asks: number | null;
  /** How far into audit.jsonl this sample has counted (bytes); the next one starts there. */
  auditOffset: number;
}

/** The census of one snapshot: the report's counts and memory by lane, and the live sessions' silences. Pure. */
export function censusOf(snap: FleetSnapshot): Omit<Sample, 'since' | 'exits' | 'asks' | 'auditOffset'> {
  const report = buildReport(snap);
  const byLane = Object.fromEntries(
    LANES.map((l) => [l, { sessions: report.memory.byLane[l].sessions, bytes: report.memory.byLane[l].bytes }]),
  ) as Sample['byLane'];
  const buckets = Object.fromEntries(SILENCE_BUCKETS.map((b) => [b.label, 0])) as Record<string, number>;
  let longest: number | null = null;
  let longestSessionId: string | null = null;
  let unknown = 0;
  for (const s of snap.sessions) {
    if (s.live !== true) continue;
    const silence = s.evidence.silenceMs;
    if (silence === null || silence === undefined) {
      unknown++;
      continue;
    }
    buckets[SILENCE_BUCKETS.find((b) => silence < b.below)!.label]++;
    if (longest === null || silence > longest) {
      longest = silence;
      longestSessionId = s.sessionId;
    }
  }
  const { roster } = report;
  return {
    v: 1,
    at: report.at,
    host: report.host,
    rosterOk: roster.ok,
    ...(roster.ok ? {} : { error: roster.error }),
    rows: roster.rows,
    live: roster.live,
    records: roster.records,
    gone: roster.gone,
    rssBytes: report.memory.totalBytes,
    byLane,
    silence: { longestMs: longest, longestSessionId, buckets, unknown },
  };
}

// ---------------------------------------------------------------- the audit log: exits and asks since the last sample

/** Beyond this many new bytes since the last sample, counting is skipped (null) rather than reading it all. */
const AUDIT_READ_LIMIT = 64 * 1024 * 1024;

/**
 * Count the `exit:exited` and `exit:asked` audit events after `sinceMs` (older audits' `ask` too: audit.ts
 * reads old names as the new ones), reading audit.jsonl from `offset` (where the previous sample stopped)
 * to its last whole line. A file shorter than `offset` was replaced: read it whole.
 */
export function countAuditSince(stateDir: string, offset: number, sinceMs: number): { exits: number; asks: number; offset: number } | null {
  let r: ReturnType<typeof readAuditFrom>;
  try {
    r = readAuditFrom(auditFile(stateDir), offset, AUDIT_READ_LIMIT);
  } catch {
    return null;
  }
  if (!r) return null;
  let exits = 0;
  let asks = 0;
  for (const e of r.entries) {
    if (!(Date.parse(String(e.at ?? '')) > sinceMs)) continue;
    if (e.event === 'exit:exited') exits++;
    else if (e.event === 'exit:asked') asks++;
  }
  return { exits, asks, offset: r.offset };
}
