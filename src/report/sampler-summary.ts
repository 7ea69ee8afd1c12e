// What the sampler's file says over its whole span (`sunset samples`, the web's "Over time"): live sessions,
// the memory peak, the longest silence, and how often a session sat idle 48 h (ADR-0010's open question).
import { LANES, type Lane } from './report.js';
import { IDLE_48H, type Sample } from './sampler-census.js';

export interface SamplesSummary {
  count: number;
  /** Samples whose roster probe failed (left out of every figure below). */
  failed: number;
  span: { from: string | null; to: string | null; ms: number };
  live: { min: number | null; median: number | null; max: number | null };
  rss: { peakBytes: number; peakAt: string | null; peakByLane: Record<Lane, number> };
  longestSilence: { ms: number | null; at: string | null; sessionId: string | null };
  /** Samples in which some live session had been silent ≥ 48 h (ADR-0010's open question). */
  idle48h: { samples: number; share: number; first: string | null; last: string | null };
  exits: number;
  asks: number;
}

/** Summarise samples (any order). Pure. */
export function summariseSamples(samples: Sample[]): SamplesSummary {
  const all = [...samples].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const ok = all.filter((s) => s.rosterOk);
  const lives = ok.map((s) => s.live).sort((a, b) => a - b);
  const median = lives.length
    ? lives.length % 2
      ? lives[(lives.length - 1) / 2]
      : (lives[lives.length / 2 - 1] + lives[lives.length / 2]) / 2
    : null;
  const peakByLane = Object.fromEntries(LANES.map((l) => [l, 0])) as Record<Lane, number>;
  let peak: Sample | null = null;
  let silence: Sample | null = null;
  const idle: Sample[] = [];
  let exits = 0;
  let asks = 0;
  for (const s of ok) {
    if (!peak || s.rssBytes > peak.rssBytes) peak = s;
    for (const l of LANES) peakByLane[l] = Math.max(peakByLane[l], s.byLane?.[l]?.bytes ?? 0);
    const ms = s.silence?.longestMs ?? null;
    if (ms !== null && (!silence || ms > (silence.silence.longestMs ?? -1))) silence = s;
    if ((s.silence?.buckets?.['>=48h'] ?? 0) > 0 || (ms !== null && ms >= IDLE_48H)) idle.push(s);
  }
  for (const s of all) {
    exits += s.exits ?? 0;
    asks += s.asks ?? 0;
  }
  const from = all[0]?.at ?? null;
  const to = all[all.length - 1]?.at ?? null;
  return {
    count: all.length,
    failed: all.length - ok.length,
    span: { from, to, ms: from && to ? Date.parse(to) - Date.parse(from) : 0 },
    live: { min: lives[0] ?? null, median, max: lives.length ? lives[lives.length - 1] : null },
    rss: { peakBytes: peak?.rssBytes ?? 0, peakAt: peak?.at ?? null, peakByLane },
    longestSilence: {
      ms: silence?.silence.longestMs ?? null,
      at: silence?.at ?? null,
      sessionId: silence?.silence.longestSessionId ?? null,
    },
    idle48h: {
      samples: idle.length,
      share: ok.length ? idle.length / ok.length : 0,
      first: idle[0]?.at ?? null,
      last: idle[idle.length - 1]?.at ?? null,
    },
    exits,
    asks,
  };
}
