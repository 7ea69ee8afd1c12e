// The fleet sampler: every `windows.sampleEvery` the producers take a census of the fleet (live sessions,
// records, memory by lane, transcript silences, exits and asks since the last census) into a bounded,
// rotating JSON-lines file in stateDir. It answers what one look cannot — ADR-0010's open question:
// does a session ever sit idle for 48 hours in steady state? `sunset samples` summarises the file;
// samplesChartSvg() draws it for the web's fleet page. Everything here reports; nothing acts (D10).
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, statSync, unlinkSync, writeFileSync, readFileSync, mkdirSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { gatherFleet, type FleetSnapshot } from '../evidence/fleet.js';
import { LANES, laneOf, type Lane } from './report.js';
import { hooksDir } from '../evidence/hooks.js';
import { pruneHookStates } from '../evidence/hook-events.js';

export const SAMPLES_FILE = 'samples.jsonl';
export const SAMPLES_OLD = 'samples.1.jsonl';
/** Past this, samples.jsonl becomes samples.1.jsonl (the older one goes): two files, at most ~10 MB. */
export const MAX_SAMPLES_BYTES = 5 * 1024 * 1024;

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

/** The census of one snapshot. Pure. */
export function censusOf(snap: FleetSnapshot): Omit<Sample, 'since' | 'exits' | 'asks' | 'auditOffset'> {
  const byLane = Object.fromEntries(LANES.map((l) => [l, { sessions: 0, bytes: 0 }])) as Sample['byLane'];
  const buckets = Object.fromEntries(SILENCE_BUCKETS.map((b) => [b.label, 0])) as Record<string, number>;
  let rss = 0;
  let longest: number | null = null;
  let longestSessionId: string | null = null;
  let unknown = 0;
  const live = snap.sessions.filter((s) => s.live === true);
  for (const s of live) {
    const lane = byLane[laneOf(s)];
    lane.sessions++;
    lane.bytes += s.rssBytes ?? 0;
    rss += s.rssBytes ?? 0;
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
  return {
    v: 1,
    at: new Date(snap.at).toISOString(),
    host: snap.host,
    rosterOk: snap.roster.ok,
    ...(snap.roster.ok ? {} : { error: snap.roster.error }),
    rows: snap.sessions.length,
    live: live.length,
    records: snap.sessions.filter((s) => s.verdict === 'record').length,
    gone: snap.sessions.filter((s) => s.verdict === 'gone').length,
    rssBytes: rss,
    byLane,
    silence: { longestMs: longest, longestSessionId, buckets, unknown },
  };
}

// ---------------------------------------------------------------- the audit log: exits and asks since the last sample

/** Beyond this many new bytes since the last sample, counting is skipped (null) rather than reading it all. */
const AUDIT_READ_LIMIT = 64 * 1024 * 1024;

/**
 * Count `exit:exited` and `ask` audit events after `sinceMs`, reading audit.jsonl from `offset` (where the
 * previous sample stopped) to its last whole line. A file shorter than `offset` was replaced: read it whole.
 */
export function countAuditSince(stateDir: string, offset: number, sinceMs: number): { exits: number; asks: number; offset: number } | null {
  const file = join(stateDir, 'audit.jsonl');
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err: any) {
    return err.code === 'ENOENT' ? { exits: 0, asks: 0, offset: 0 } : null;
  }
  try {
    const size = fstatSync(fd).size;
    const start = offset <= size ? offset : 0;
    if (size - start > AUDIT_READ_LIMIT) return null;
    const buf = Buffer.alloc(size - start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n <= 0) break;
      got += n;
    }
    const text = buf.subarray(0, got).toString('utf8');
    const end = text.lastIndexOf('\n');
    let exits = 0;
    let asks = 0;
    if (end >= 0) {
      for (const line of text.slice(0, end).split('\n')) {
        if (!line.includes('"exit:exited"') && !line.includes('"ask"')) continue;
        try {
          const e = JSON.parse(line) as { event?: string; at?: string };
          if (!(Date.parse(e.at ?? '') > sinceMs)) continue;
          if (e.event === 'exit:exited') exits++;
          else if (e.event === 'ask') asks++;
        } catch {
          /* a torn line: skipped */
        }
      }
    }
    return { exits, asks, offset: start + (end >= 0 ? Buffer.byteLength(text.slice(0, end + 1)) : 0) };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------- the samples file

/** The last sample written (the tail of samples.jsonl, else of samples.1.jsonl), or null. */
export function lastSample(stateDir: string): Sample | null {
  for (const name of [SAMPLES_FILE, SAMPLES_OLD]) {
    const file = join(stateDir, name);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      continue;
    }
    try {
      const size = fstatSync(fd).size;
      const len = Math.min(size, 256 * 1024);
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, size - len);
      const lines = buf.toString('utf8').split('\n').filter((l) => l.trim());
      for (let i = lines.length - 1; i >= 0; i--) {
        try {
          const s = JSON.parse(lines[i]) as Sample;
          if (s && s.v === 1 && typeof s.at === 'string') return s;
        } catch {
          /* a torn or partial first line */
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return null;
}

/** Append one sample; past maxBytes the file rotates to samples.1.jsonl first (replacing the older one). */
export function appendSample(stateDir: string, sample: Sample, maxBytes: number = MAX_SAMPLES_BYTES): void {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, SAMPLES_FILE);
  const line = JSON.stringify(sample) + '\n';
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    size = 0;
  }
  if (size > 0 && size + Buffer.byteLength(line) > maxBytes) renameSync(file, join(stateDir, SAMPLES_OLD));
  appendFileSync(file, line);
}

/** Every sample kept, oldest first (samples.1.jsonl, then samples.jsonl); torn lines are skipped. */
export function readSamples(stateDir: string): Sample[] {
  const out: Sample[] = [];
  for (const name of [SAMPLES_OLD, SAMPLES_FILE]) {
    let text: string;
    try {
      text = readFileSync(join(stateDir, name), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        const s = JSON.parse(line) as Sample;
        if (s && s.v === 1 && typeof s.at === 'string' && Number.isFinite(Date.parse(s.at))) out.push(s);
      } catch {
        /* torn */
      }
    }
  }
  return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

// ---------------------------------------------------------------- taking a sample

export interface SampleDeps {
  now?: () => number;
  /** Tests: a snapshot instead of a real sweep. */
  gather?: () => Promise<FleetSnapshot>;
}

/** Take one census and append it. Exits and asks are counted from where the previous sample stopped. */
export async function takeSample(config: Config, deps: SampleDeps = {}): Promise<Sample> {
  const now = deps.now ?? Date.now;
  const snap = await (deps.gather ? deps.gather() : gatherFleet(config, { now }));
  const prev = lastSample(config.stateDir);
  const census = censusOf(snap);
  let counted: ReturnType<typeof countAuditSince>;
  if (prev) counted = countAuditSince(config.stateDir, prev.auditOffset ?? 0, Date.parse(prev.at));
  else {
    // The first sample counts nothing (there is no "since"); it only marks where the next one starts.
    let size = 0;
    try {
      size = statSync(join(config.stateDir, 'audit.jsonl')).size;
    } catch {
      size = 0;
    }
    counted = { exits: 0, asks: 0, offset: size };
  }
  const sample: Sample = {
    ...census,
    since: prev?.at ?? null,
    exits: prev && counted ? counted.exits : null,
    asks: prev && counted ? counted.asks : null,
    auditOffset: counted?.offset ?? prev?.auditOffset ?? 0,
  };
  appendSample(config.stateDir, sample);
  return sample;
}

// ---------------------------------------------------------------- one sampler per host

interface LockRecord {
  pid: number;
  host: string;
  /** Refreshed at every tick: a lock not refreshed for 3 periods is abandoned, whatever holds its pid now. */
  heartbeat: string;
}

const pidAlive = (pid: number) => Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`);

/**
 * Hold stateDir/sampler.lock for this process: true when it is ours (taken, refreshed, or taken over from
 * a process that is gone or stopped refreshing). Several producers on one host: only one samples.
 */
export function holdSamplerLock(stateDir: string, o: { host: string; every: number; now: number; pid?: number }): boolean {
  const file = join(stateDir, 'sampler.lock');
  const me = o.pid ?? process.pid;
  let cur: LockRecord | null = null;
  try {
    cur = JSON.parse(readFileSync(file, 'utf8')) as LockRecord;
  } catch {
    cur = null;
  }
  const abandoned = !cur || !pidAlive(cur.pid) || !(o.now - Date.parse(cur.heartbeat) < 3 * o.every);
  if (cur && cur.pid !== me && !abandoned) return false;
  mkdirSync(stateDir, { recursive: true });
  const tmp = join(stateDir, `.sampler.lock-${me}-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tmp, JSON.stringify({ pid: me, host: o.host, heartbeat: new Date(o.now).toISOString() } satisfies LockRecord) + '\n');
  renameSync(tmp, file);
  // Two takers racing: the last rename wins; the other reads it back and stands down.
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as LockRecord).pid === me;
  } catch {
    return false;
  }
}

export function releaseSamplerLock(stateDir: string, pid: number = process.pid): void {
  const file = join(stateDir, 'sampler.lock');
  try {
    if ((JSON.parse(readFileSync(file, 'utf8')) as LockRecord).pid === pid) unlinkSync(file);
  } catch {
    /* not ours, or gone */
  }
}

/** Hook state files not written for this long belong to sessions long gone: the sampler clears them. */
const HOOK_STATE_KEEP = 7 * 24 * H;

export interface Sampler {
  /** Take a sample now if this process holds the lock (tests call it instead of waiting). */
  tick(): Promise<Sample | null>;
  close(): Promise<void>;
}

/**
 * The producers' sampler timer: the first census after min(sampleEvery, 60 s), then every sampleEvery.
 * Only the process holding stateDir/sampler.lock samples. sampleEvery 0 turns it off.
 */
export function startSampler(config: Config, o: { log: Logger; now?: () => number; gather?: () => Promise<FleetSnapshot>; firstAfter?: number }): Sampler {
  const now = o.now ?? Date.now;
  const every = config.windows.sampleEvery;
  let closed = false;
  let running: Promise<Sample | null> | null = null;
  const tick = (): Promise<Sample | null> => {
    if (closed) return Promise.resolve(null);
    if (running) return running;
    running = (async () => {
      try {
        if (!holdSamplerLock(config.stateDir, { host: config.host, every: Math.max(every, 1000), now: now() })) {
          o.log.debug({ event: 'sample:skipped', why: 'another process on this host samples' }, 'sampler: another process holds the lock');
          return null;
        }
        if (closed) return null;
        const sample = await takeSample(config, { now, gather: o.gather ? o.gather : () => gatherFleet(config, { now }) });
        o.log.info({ event: 'sample:taken', live: sample.live, rssBytes: sample.rssBytes, longestSilenceMs: sample.silence.longestMs, exits: sample.exits, asks: sample.asks }, `sample: ${sample.live} live sessions`);
        pruneHookStates(hooksDir(config), HOOK_STATE_KEEP, now());
        return sample;
      } catch (err: any) {
        o.log.warn({ event: 'sample:failed', error: err?.message ?? String(err) }, `sampler: ${err?.message ?? err}`);
        return null;
      } finally {
        running = null;
      }
    })();
    return running;
  };
  let first: NodeJS.Timeout | null = null;
  let timer: NodeJS.Timeout | null = null;
  if (every > 0) {
    first = setTimeout(() => void tick(), o.firstAfter ?? Math.min(every, 60_000));
    first.unref();
    timer = setInterval(() => void tick(), every);
    timer.unref();
  }
  return {
    tick,
    close: async () => {
      closed = true;
      if (first) clearTimeout(first);
      if (timer) clearInterval(timer);
      releaseSamplerLock(config.stateDir);
    },
  };
}

// ---------------------------------------------------------------- the summary

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
  const median = lives.length ? (lives.length % 2 ? lives[(lives.length - 1) / 2] : (lives[lives.length / 2 - 1] + lives[lives.length / 2]) / 2) : null;
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
    longestSilence: { ms: silence?.silence.longestMs ?? null, at: silence?.at ?? null, sessionId: silence?.silence.longestSessionId ?? null },
    idle48h: { samples: idle.length, share: ok.length ? idle.length / ok.length : 0, first: idle[0]?.at ?? null, last: idle[idle.length - 1]?.at ?? null },
    exits,
    asks,
  };
}

// ---------------------------------------------------------------- the chart

const LANE_COLOURS: Record<Lane, string> = { 'awaiting-human': '#d9480f', active: '#1971c2', finished: '#2f9e44', untasked: '#7048e8' };
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const gb = (b: number) => `${(b / 1024 ** 3).toFixed(b >= 10 * 1024 ** 3 ? 0 : 1)} GB`;
const hours = (ms: number) => (ms >= 48 * H ? `${(ms / (24 * H)).toFixed(1)} d` : `${(ms / H).toFixed(ms >= 10 * H ? 0 : 1)} h`);
const hhmm = (iso: string) => iso.slice(0, 16).replace('T', ' ');

/**
 * An inline SVG (no scripts, no external assets): memory by lane over time, and the longest transcript
 * silence over time with the 48 h line. For the web's fleet page and `sunset samples --svg`. Pure.
 */
export function samplesChartSvg(samples: Sample[], o: { width?: number } = {}): string {
  const W = o.width ?? 720;
  const PH = 170; // one panel's height
  const L = 64;
  const R = 16;
  const T = 28;
  const GAP = 54;
  const Hh = T + PH + GAP + PH + 40;
  const ok = [...samples].filter((s) => s.rosterOk).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const head = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${Hh}" viewBox="0 0 ${W} ${Hh}" role="img" aria-label="fleet samples: memory by lane and longest silence over time" font-family="system-ui, sans-serif" font-size="11">`;
  const title = `<title>fleet samples: memory by lane, longest transcript silence</title>`;
  if (!ok.length) {
    return `${head}${title}<text x="${W / 2}" y="${Hh / 2}" text-anchor="middle" fill="#666">no samples yet</text></svg>`;
  }
  const t0 = Date.parse(ok[0].at);
  const t1 = Date.parse(ok[ok.length - 1].at);
  const span = Math.max(1, t1 - t0);
  const x = (at: string) => (ok.length === 1 ? L + (W - L - R) / 2 : L + ((Date.parse(at) - t0) / span) * (W - L - R));
  const parts: string[] = [head, title];

  const panel = (top: number, label: string, maxV: number, fmt: (v: number) => string, series: Array<{ name: string; colour: string; values: Array<number | null> }>, refLine?: { v: number; label: string }) => {
    const y = (v: number) => top + PH - (v / maxV) * PH;
    parts.push(`<text x="${L}" y="${top - 8}" font-weight="600" fill="#222">${esc(label)}</text>`);
    parts.push(`<rect x="${L}" y="${top}" width="${W - L - R}" height="${PH}" fill="none" stroke="#ccc"/>`);
    for (const f of [0, 0.5, 1]) {
      const v = maxV * f;
      parts.push(`<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#666">${esc(fmt(v))}</text>`);
      if (f > 0 && f < 1) parts.push(`<line x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`);
    }
    if (refLine && refLine.v <= maxV) {
      parts.push(`<line x1="${L}" x2="${W - R}" y1="${y(refLine.v).toFixed(1)}" y2="${y(refLine.v).toFixed(1)}" stroke="#c92a2a" stroke-dasharray="4 3"/>`);
      parts.push(`<text x="${W - R - 4}" y="${(y(refLine.v) - 4).toFixed(1)}" text-anchor="end" fill="#c92a2a">${esc(refLine.label)}</text>`);
    }
    let lx = L;
    for (const s of series) {
      // a gap where a value is missing: the line is broken, not drawn through
      const segs: string[][] = [[]];
      s.values.forEach((v, i) => {
        if (v === null) segs.push([]);
        else segs[segs.length - 1].push(`${x(ok[i].at).toFixed(1)},${y(v).toFixed(1)}`);
      });
      for (const seg of segs) {
        if (seg.length === 1) parts.push(`<circle cx="${seg[0].split(',')[0]}" cy="${seg[0].split(',')[1]}" r="2.5" fill="${s.colour}"/>`);
        else if (seg.length > 1) parts.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="1.8" points="${seg.join(' ')}"/>`);
      }
      if (series.length > 1) {
        parts.push(`<rect x="${lx}" y="${top + PH + 8}" width="10" height="10" fill="${s.colour}"/><text x="${lx + 14}" y="${top + PH + 17}" fill="#333">${esc(s.name)}</text>`);
        lx += 24 + s.name.length * 6.5;
      }
    }
  };

  const laneSeries = LANES.map((l) => ({ name: l, colour: LANE_COLOURS[l], values: ok.map((s) => s.byLane?.[l]?.bytes ?? 0) }));
  const maxBytes = Math.max(1024 ** 3 / 4, ...laneSeries.flatMap((s) => s.values as number[]));
  panel(T, 'memory held by live sessions, by lane', maxBytes * 1.05, gb, laneSeries);

  const silences = ok.map((s) => s.silence?.longestMs ?? null);
  const maxSilence = Math.max(H, ...silences.filter((v): v is number => v !== null));
  const top2 = T + PH + GAP;
  panel(top2, 'longest transcript silence', maxSilence * 1.05, hours, [{ name: 'longest silence', colour: '#495057', values: silences }], { v: IDLE_48H, label: '48 h' });

  parts.push(`<text x="${L}" y="${Hh - 8}" fill="#666">${esc(hhmm(ok[0].at))} UTC</text>`);
  parts.push(`<text x="${W - R}" y="${Hh - 8}" text-anchor="end" fill="#666">${esc(hhmm(ok[ok.length - 1].at))} UTC · ${ok.length} samples</text>`);
  parts.push('</svg>');
  return parts.join('');
}
