// The fleet page's "Over time": what the sampler recorded (src/report/sampler.ts), summarised, and its chart
// (charts.ts) as an image. The files are read again only when they have grown or turned over, not at every refresh.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { readSamples, SAMPLES_FILE, SAMPLES_OLD, summariseSamples, type Sample, type SamplesSummary } from '../report/sampler.js';
import { samplesChartSvg } from './charts.js';

/** The chart shows the last week at most, thinned to about this many points; the summary covers every sample. */
export const CHART_SPAN_MS = 7 * 86_400_000;
export const CHART_POINTS = 600;
export const CHART_WIDTH = 820;

export interface OverTime {
  summary: SamplesSummary;
  /** The chart as a data: URL (an image runs no script, whatever it holds); null when no sample is usable. */
  chart: string | null;
  /** What the chart draws: `samples` of the last week (`windowed`: older ones left out), every k-th when thinned. */
  charted: { samples: number; windowed: boolean; thinnedTo: number | null };
}

/** Every k-th sample, always keeping the last, so the chart stays small however long the sampler runs. */
export function thin<T>(xs: T[], max: number): T[] {
  if (xs.length <= max) return xs;
  const k = Math.ceil(xs.length / max);
  const out = xs.filter((_, i) => i % k === 0);
  if (out[out.length - 1] !== xs[xs.length - 1]) out.push(xs[xs.length - 1]);
  return out;
}

export function overTimeOf(samples: Sample[]): OverTime {
  const summary = summariseSamples(samples);
  const ok = samples.filter((s) => s.rosterOk);
  if (!ok.length) return { summary, chart: null, charted: { samples: 0, windowed: false, thinnedTo: null } };
  const last = Date.parse(ok[ok.length - 1].at);
  const recent = ok.filter((s) => Date.parse(s.at) >= last - CHART_SPAN_MS);
  const shown = thin(recent, CHART_POINTS);
  const svg = samplesChartSvg(shown, { width: CHART_WIDTH });
  return {
    summary,
    chart: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`,
    charted: { samples: recent.length, windowed: recent.length < ok.length, thinnedTo: shown.length < recent.length ? shown.length : null },
  };
}

const stamp = (file: string) => {
  try {
    const st = statSync(file);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return '-';
  }
};

const cache = new Map<string, { key: string; value: OverTime }>();

/** The sampler's files in stateDir, summarised and charted; cached until either file changes. */
export function overTime(stateDir: string): OverTime {
  const key = `${stamp(join(stateDir, SAMPLES_OLD))}|${stamp(join(stateDir, SAMPLES_FILE))}`;
  const hit = cache.get(stateDir);
  if (hit && hit.key === key) return hit.value;
  const value = overTimeOf(readSamples(stateDir));
  if (cache.size >= 8) cache.clear(); // one web per process, in practice; tests start many
  cache.set(stateDir, { key, value });
  return value;
}
