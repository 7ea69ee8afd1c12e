// `sunset samples`: what the fleet sampler has recorded, summarised (docs/sampler.md).
import { parseDuration, formatDuration } from '../duration.js';
import { formatBytes, LANES } from '../report/report.js';
import { readSamples, samplesChartSvg, summariseSamples, takeSample, type Sample, type SamplesSummary } from '../report/sampler.js';
import { EXIT, UsageError, config, type Command } from './common.js';

export const samplesCommand: Command = {
  name: 'samples',
  summary: 'what the fleet sampler recorded: live sessions, memory by lane, silences, 48 h idleness',
  usage: `usage: sunset samples [--since 7d] [--json | --svg] [--take] [--config FILE]

Summarises the census samples \`sunset up\` (the producers) records every windows.sampleEvery in
<stateDir>/samples.jsonl: how many, over what span, live sessions (min / median / max), peak memory
and each lane's peak, the longest transcript silence seen, and how many samples had a session idle
for 48 hours or more (ADR-0010's open question). Samples whose roster probe failed are counted apart.

  --since D   only samples from the last D (e.g. 30m, 24h, 7d); default: every sample kept
  --json      the summary as JSON
  --svg       an SVG chart instead (memory by lane, longest silence over time)
  --take      take one sample now first (as the sampler would), then summarise

Exit codes: 0 = printed, 1 = --take found the roster probe failing, 2 = bad usage or config.`,
  options: { since: { type: 'string' }, json: { type: 'boolean' }, svg: { type: 'boolean' }, take: { type: 'boolean' } },
  async run({ values }, io) {
    if (values.json && values.svg) throw new UsageError(`samples takes --json or --svg, not both\n\n${this.usage}`);
    let sinceMs: number | null = null;
    if (values.since !== undefined) {
      sinceMs = parseDuration(values.since);
      if (sinceMs === null) throw new UsageError(`--since takes a duration like "30m", "24h", "7d", not ${JSON.stringify(values.since)}`);
    }
    const cfg = config(values, io);
    let code: number = EXIT.ok;
    if (values.take) {
      const s = await takeSample(cfg);
      if (!s.rosterOk) {
        io.err(`sunset samples: the roster probe failed (${s.error}); the sample records that`);
        code = EXIT.failure;
      }
    }
    const now = Date.now();
    const all = readSamples(cfg.stateDir);
    const chosen = sinceMs === null ? all : all.filter((s) => Date.parse(s.at) >= now - sinceMs!);
    if (values.svg) io.out(samplesChartSvg(chosen));
    else {
      const sum = summariseSamples(chosen);
      if (values.json)
        io.out(JSON.stringify({ host: cfg.host, since: sinceMs === null ? null : new Date(now - sinceMs).toISOString(), ...sum }, null, 2));
      else io.out(formatSummary(sum, cfg.host, values.since ?? null, chosen));
    }
    return code;
  },
};

const when = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : '-');

export function formatSummary(s: SamplesSummary, host: string, since: string | null, samples: Sample[] = []): string {
  const out: string[] = [];
  out.push(`sunset samples — ${host}${since ? `, last ${since}` : ''}`);
  if (!s.count) {
    out.push('no samples yet: `sunset up` (the producers) takes one every windows.sampleEvery; `sunset samples --take` takes one now');
    return out.join('\n');
  }
  out.push(
    `samples: ${s.count}${s.failed ? ` (${s.failed} with a failed roster, left out below)` : ''}, ${when(s.span.from)} → ${when(s.span.to)} UTC (${formatDuration(s.span.ms)})`,
  );
  out.push(`live sessions: min ${s.live.min ?? '-'}, median ${s.live.median ?? '-'}, max ${s.live.max ?? '-'}`);
  out.push(`memory peak: ${formatBytes(s.rss.peakBytes)} at ${when(s.rss.peakAt)} UTC`);
  out.push(`  each lane's peak: ${LANES.map((l) => `${l} ${formatBytes(s.rss.peakByLane[l])}`).join(', ')}`);
  out.push(
    `longest transcript silence seen: ${s.longestSilence.ms === null ? 'unknown' : formatDuration(s.longestSilence.ms)}${s.longestSilence.sessionId ? ` (session ${s.longestSilence.sessionId}, ${when(s.longestSilence.at)} UTC)` : ''}`,
  );
  const ok = s.count - s.failed;
  out.push(
    `idle ≥ 48 h: ${s.idle48h.samples} of ${ok} samples had a live session silent 48 h or more` +
      (s.idle48h.samples ? ` (first ${when(s.idle48h.first)}, last ${when(s.idle48h.last)} UTC)` : ' — none in this span'),
  );
  const counted = samples.filter((x) => x.exits !== null).length;
  out.push(`exits: ${s.exits}, asks: ${s.asks} (counted over ${counted} sample intervals)`);
  return out.join('\n');
}
