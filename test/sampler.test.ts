// The fleet sampler without a fleet: the census of a snapshot, exits and asks counted from the audit log
// where the last sample stopped, the bounded rotating file, one sampler per host, the summary and the chart.
import { appendFileSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './support/temp-dir.js';
import type { FleetSnapshot, SessionView } from '../src/evidence/fleet.js';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { waitFor } from '../sim/fleet/fleet.js';
import {
  appendSample,
  censusOf,
  countAuditSince,
  holdSamplerLock,
  lastSample,
  readSamples,
  releaseSamplerLock,
  samplesChartSvg,
  startSampler,
  summariseSamples,
  takeSample,
  type Sample,
} from '../src/report/sampler.js';

const MIN = 60_000;
const H = 60 * MIN;
const MB = 1024 * 1024;
const T0 = Date.parse('2026-11-30T12:00:00Z');
const tmp = () => tempDir('sunset-sampler-');

function view(o: {
  id: string;
  live?: boolean | null;
  pid?: number | null;
  rss?: number;
  silence?: number | null;
  task?: { state: string; terminal: boolean } | null;
}): SessionView {
  const task = o.task === undefined ? null : o.task;
  const pid = o.pid === undefined ? 100 : o.pid;
  const live = pid === null ? false : o.live === undefined ? true : o.live;
  return {
    id: o.id,
    sessionId: `sess-${o.id}`,
    label: o.id,
    name: null,
    notes: [],
    kind: 'background',
    pid,
    live,
    evidence: {
      live,
      status: 'idle',
      silenceMs: o.silence === undefined ? 30 * MIN : o.silence,
      attached: false,
      inboxPending: 0,
      probeFailures: [],
      task: task ? { id: `t-${o.id}`, state: task.state, terminal: task.terminal, exitRequests: 0 } : null,
      openTasks: task && !task.terminal ? [`t-${o.id}`] : [],
      invalidTasks: [],
    },
    verdict: pid === null ? 'record' : live === false ? 'gone' : 'protected',
    reasons: [],
    next: null,
    row: {} as any,
    taskId: task ? `t-${o.id}` : null,
    taskState: task?.state ?? null,
    rssBytes: live ? (o.rss ?? 100 * MB) : null,
    procStartMs: null,
  };
}

function snapshot(sessions: SessionView[], at = T0, rosterOk = true): FleetSnapshot {
  return {
    at,
    host: 'mini',
    roster: rosterOk ? { ok: true } : { ok: false, error: 'roster failed' },
    sessions,
    tasks: [],
    invalidTasks: [],
    problems: [],
    probeErrors: {},
    // a sweep that read /proc (a census rides only on those: it reports the fleet's overhead)
    overhead: {
      bytes: 0,
      byKind: {
        daemon: { processes: 0, bytes: 0 },
        spare: { processes: 0, bytes: 0 },
        clients: { processes: 0, bytes: 0 },
        other: { processes: 0, bytes: 0 },
      },
    },
    agentViews: 0,
    agentViewsOpen: [],
    rosterFrom: 'cli',
  };
}

const FLEET = [
  view({ id: 'a', rss: 400 * MB, silence: 5 * MIN, task: { state: 'awaiting-human', terminal: false } }),
  view({ id: 'b', rss: 300 * MB, silence: 50 * H, task: null }),
  view({ id: 'c', rss: 200 * MB, silence: 2 * H, task: { state: 'done', terminal: true } }),
  view({ id: 'd', rss: 100 * MB, silence: null, task: { state: 'active', terminal: false } }),
  view({ id: 'rec', pid: null }),
  view({ id: 'gone', live: false }),
];

describe('censusOf', () => {
  it('counts live sessions, records, memory by lane, and buckets silences', () => {
    const c = censusOf(snapshot(FLEET));
    expect(c).toMatchObject({
      at: '2026-11-30T12:00:00.000Z',
      host: 'mini',
      rosterOk: true,
      rows: 6,
      live: 4,
      records: 1,
      gone: 1,
      rssBytes: 1000 * MB,
    });
    expect(c.byLane).toEqual({
      'awaiting-human': { sessions: 1, bytes: 400 * MB },
      active: { sessions: 1, bytes: 100 * MB },
      finished: { sessions: 1, bytes: 200 * MB },
      untasked: { sessions: 1, bytes: 300 * MB },
    });
    expect(c.silence).toEqual({
      longestMs: 50 * H,
      longestSessionId: 'sess-b',
      unknown: 1,
      buckets: { '<15m': 1, '<1h': 0, '<6h': 1, '<24h': 0, '<48h': 0, '>=48h': 1 },
    });
  });
  it('a failed roster is recorded as such, with nothing counted', () => {
    expect(censusOf(snapshot([], T0, false))).toMatchObject({
      rosterOk: false,
      error: 'roster failed',
      live: 0,
      silence: { longestMs: null },
    });
  });
});

describe('countAuditSince', () => {
  const line = (event: string, at: number) => `${JSON.stringify({ at: new Date(at).toISOString(), event, sessionId: 's' })}\n`;
  it('counts exits and asks after the previous sample, from where it stopped, up to the last whole line', () => {
    const dir = tmp();
    const file = join(dir, 'audit.jsonl');
    writeFileSync(file, line('ask', T0 - 2 * MIN) + line('exit:exited', T0 - MIN));
    const first = countAuditSince(dir, 0, T0 - 90_000)!;
    expect(first).toEqual({ exits: 1, asks: 0, offset: statSync(file).size });
    appendFileSync(
      file,
      line('ask', T0 + MIN) +
        line('exit:exited', T0 + 2 * MIN) +
        line('exit:still-running', T0 + 2 * MIN) +
        line('request', T0 + 3 * MIN) +
        '{"at":"torn',
    );
    const next = countAuditSince(dir, first.offset, T0)!;
    expect(next).toMatchObject({ exits: 1, asks: 1 });
    expect(next.offset).toBe(statSync(file).size - '{"at":"torn'.length); // the torn tail waits for the next sample
  });
  it('a file shorter than the offset was replaced: read whole; a missing one counts zero', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'audit.jsonl'), line('ask', T0 + MIN));
    expect(countAuditSince(dir, 10_000, T0)).toMatchObject({ asks: 1 });
    expect(countAuditSince(tmp(), 0, T0)).toEqual({ exits: 0, asks: 0, offset: 0 });
  });
});

describe('the samples file', () => {
  const sample = (at: number, extra: Partial<Sample> = {}): Sample => ({
    ...censusOf(snapshot(FLEET, at)),
    since: null,
    exits: null,
    asks: null,
    auditOffset: 0,
    ...extra,
  });
  it('appends; past maxBytes rotates to samples.1.jsonl keeping two files; reads oldest first', () => {
    const dir = tmp();
    const one = JSON.stringify(sample(T0)).length + 1;
    for (let i = 0; i < 7; i++) appendSample(dir, sample(T0 + i * 5 * MIN), 3 * one);
    expect(statSync(join(dir, 'samples.jsonl')).size).toBeLessThanOrEqual(3 * one);
    expect(existsSync(join(dir, 'samples.2.jsonl'))).toBe(false);
    const all = readSamples(dir);
    expect(all.map((s) => s.at)).toEqual([3, 4, 5, 6].map((i) => new Date(T0 + i * 5 * MIN).toISOString()));
    expect(lastSample(dir)?.at).toBe(new Date(T0 + 30 * MIN).toISOString());
  });
  it('lastSample falls back to samples.1.jsonl, and skips a torn line', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'samples.1.jsonl'), `${JSON.stringify(sample(T0))}\n`);
    writeFileSync(join(dir, 'samples.jsonl'), '');
    expect(lastSample(dir)?.at).toBe(new Date(T0).toISOString());
    writeFileSync(join(dir, 'samples.jsonl'), `${JSON.stringify(sample(T0 + MIN))}\n{"v":1,"at":"tor`);
    expect(lastSample(dir)?.at).toBe(new Date(T0 + MIN).toISOString());
    expect(readSamples(dir)).toHaveLength(2);
    expect(lastSample(tmp())).toBeNull();
  });
  it('takeSample: the first sample counts nothing; the next counts exits and asks since the first', async () => {
    const dir = tmp();
    const cfg = parseConfig({ stateDir: dir }, { env: {} });
    appendFileSync(join(dir, 'audit.jsonl'), `${JSON.stringify({ at: new Date(T0 - H).toISOString(), event: 'exit:exited' })}\n`);
    const s1 = await takeSample(cfg, { gather: async () => snapshot(FLEET, T0) });
    expect(s1).toMatchObject({ since: null, exits: null, asks: null, live: 4 });
    appendFileSync(
      join(dir, 'audit.jsonl'),
      JSON.stringify({ at: new Date(T0 + MIN).toISOString(), event: 'exit:exited' }) +
        '\n' +
        JSON.stringify({ at: new Date(T0 + MIN).toISOString(), event: 'ask' }) +
        '\n',
    );
    const s2 = await takeSample(cfg, { gather: async () => snapshot(FLEET, T0 + 5 * MIN) });
    expect(s2).toMatchObject({ since: s1.at, exits: 1, asks: 1 });
    const s3 = await takeSample(cfg, { gather: async () => snapshot(FLEET, T0 + 10 * MIN) });
    expect(s3).toMatchObject({ exits: 0, asks: 0 });
    expect(readSamples(dir)).toHaveLength(3);
  });
});

describe('one sampler per host', () => {
  it('a live holder keeps the lock; a gone one, or one that stopped refreshing, is taken over', () => {
    const dir = tmp();
    const other = process.ppid; // alive, and not us
    expect(holdSamplerLock(dir, { host: 'h', every: MIN, now: T0, pid: other })).toBe(true);
    expect(holdSamplerLock(dir, { host: 'h', every: MIN, now: T0 + MIN })).toBe(false);
    expect(holdSamplerLock(dir, { host: 'h', every: MIN, now: T0 + 3 * MIN + 1 })).toBe(true); // stale heartbeat
    expect(JSON.parse(readFileSync(join(dir, 'sampler.lock'), 'utf8')).pid).toBe(process.pid);
    releaseSamplerLock(dir, other); // not theirs any more: stays
    expect(existsSync(join(dir, 'sampler.lock'))).toBe(true);
    releaseSamplerLock(dir);
    expect(existsSync(join(dir, 'sampler.lock'))).toBe(false);
    writeFileSync(join(dir, 'sampler.lock'), JSON.stringify({ pid: 2 ** 22 + 7, host: 'h', heartbeat: new Date(T0).toISOString() }));
    expect(holdSamplerLock(dir, { host: 'h', every: MIN, now: T0 })).toBe(true); // its pid is gone
  });
  it('startSampler: tick samples when it holds the lock; stands down when another process does; close releases', async () => {
    const dir = tmp();
    const cfg = parseConfig({ stateDir: dir, windows: { sampleEvery: '1h' } }, { env: {} });
    const s = startSampler(cfg, { log: silentLogger, gather: async () => snapshot(FLEET, Date.now()), firstAfter: 3_600_000 });
    expect(await s.tick()).toMatchObject({ live: 4 });
    await s.close();
    expect(existsSync(join(dir, 'sampler.lock'))).toBe(false);
    expect(await s.tick()).toBeNull(); // closed
    holdSamplerLock(dir, { host: 'h', every: 3_600_000, now: Date.now(), pid: process.ppid });
    const s2 = startSampler(cfg, { log: silentLogger, gather: async () => snapshot(FLEET, Date.now()), firstAfter: 3_600_000 });
    expect(await s2.tick()).toBeNull();
    await s2.close();
    expect(readSamples(dir)).toHaveLength(1);
  });
  it("a census rides on someone else's sweep once sampleEvery has passed; its own sweep only when none came", async () => {
    const dir = tmp();
    const every = 400;
    const cfg = parseConfig({ stateDir: dir, windows: { sampleEvery: every } }, { env: {} });
    const listeners = new Set<(snap: ReturnType<typeof snapshot>) => void>();
    let own = 0;
    const s = startSampler(cfg, {
      log: silentLogger,
      gather: async () => {
        own++;
        return snapshot(FLEET, Date.now());
      },
      firstAfter: 60_000,
      sweeps: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
    });
    const sweep = (snap = snapshot(FLEET, Date.now())) => {
      for (const l of listeners) l(snap);
    };
    try {
      sweep(); // the start's reconcile: the first census rides on it
      expect(await waitFor(() => readSamples(dir).length === 1, 5000)).toBe(true);
      sweep(); // too soon after: no census
      sweep({ ...snapshot(FLEET, Date.now()), overhead: null }); // no memory measured: never taken
      expect(readSamples(dir)).toHaveLength(1);
      // nobody sweeps: the sampler's own sweep comes, every + rideWait after the last census
      expect(await waitFor(() => readSamples(dir).length === 2, 5000)).toBe(true);
      expect(own).toBe(1);
      await new Promise((r) => setTimeout(r, every));
      sweep(); // due: rides
      expect(await waitFor(() => readSamples(dir).length === 3, 5000)).toBe(true);
      expect(own).toBe(1);
    } finally {
      await s.close();
    }
    expect(listeners.size).toBe(0);
  });
  it('sampleEvery 0 starts no timer (a tick by hand still works)', async () => {
    const cfg = parseConfig({ stateDir: tmp(), windows: { sampleEvery: 0 } }, { env: {} });
    const s = startSampler(cfg, { log: silentLogger, gather: async () => snapshot(FLEET, Date.now()) });
    expect(await s.tick()).not.toBeNull();
    await s.close();
  });
});

describe('summariseSamples', () => {
  const at = (i: number) => new Date(T0 + i * 5 * MIN).toISOString();
  const s = (i: number, live: number, rss: number, longest: number | null, extra: Partial<Sample> = {}): Sample => {
    const base = censusOf(snapshot([], T0 + i * 5 * MIN));
    return {
      ...base,
      live,
      rssBytes: rss,
      byLane: {
        'awaiting-human': { sessions: 1, bytes: rss / 2 },
        active: { sessions: 0, bytes: 0 },
        finished: { sessions: 0, bytes: rss / 4 },
        untasked: { sessions: 0, bytes: rss / 4 },
      },
      silence: {
        longestMs: longest,
        longestSessionId: longest === null ? null : `s${i}`,
        unknown: 0,
        buckets: { ...base.silence.buckets, '>=48h': longest !== null && longest >= 48 * H ? 1 : 0 },
      },
      since: i ? at(i - 1) : null,
      exits: i ? 1 : null,
      asks: i ? 2 : null,
      auditOffset: 0,
      ...extra,
    };
  };
  it('count, span, live min/median/max, peak memory and each lane’s peak, longest silence, 48 h idleness', () => {
    const samples = [
      s(3, 30, 8 * 1024 * MB, 49 * H),
      s(0, 10, 2 * 1024 * MB, H),
      s(1, 20, 4 * 1024 * MB, 5 * H),
      s(2, 40, 6 * 1024 * MB, null),
      { ...s(4, 0, 0, null), rosterOk: false },
    ];
    const sum = summariseSamples(samples);
    expect(sum).toMatchObject({
      count: 5,
      failed: 1,
      span: { from: at(0), to: at(4), ms: 20 * MIN },
      live: { min: 10, median: 25, max: 40 },
      rss: {
        peakBytes: 8 * 1024 * MB,
        peakAt: at(3),
        peakByLane: { 'awaiting-human': 4 * 1024 * MB, active: 0, finished: 2 * 1024 * MB, untasked: 2 * 1024 * MB },
      },
      longestSilence: { ms: 49 * H, at: at(3), sessionId: 's3' },
      idle48h: { samples: 1, share: 0.25, first: at(3), last: at(3) },
      exits: 4,
      asks: 8,
    });
  });
  it('no samples: zeros and nulls, never a throw', () => {
    expect(summariseSamples([])).toMatchObject({
      count: 0,
      failed: 0,
      live: { min: null, median: null, max: null },
      longestSilence: { ms: null },
      idle48h: { samples: 0, share: 0 },
    });
  });
});

describe('samplesChartSvg', () => {
  const samples = [0, 1, 2, 3].map(
    (i) => ({ ...censusOf(snapshot(FLEET, T0 + i * 5 * MIN)), since: null, exits: null, asks: null, auditOffset: 0 }) as Sample,
  );
  it('an inline SVG: one line per lane and one for silence, the 48 h line, no scripts or external assets', () => {
    const svg = samplesChartSvg(samples);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.endsWith('</svg>')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(5);
    expect(svg).toContain('48 h');
    for (const l of ['awaiting-human', 'active', 'finished', 'untasked']) expect(svg).toContain(`>${l}</text>`);
    expect(svg).not.toMatch(/<script|href=|url\(|<image|<foreignObject/i);
    expect(svg).toContain('4 samples');
  });
  it('no samples: says so', () => {
    expect(samplesChartSvg([])).toMatch(/<svg[^>]*>.*no samples yet.*<\/svg>/s);
  });
  it('one sample draws points; a failed roster sample is left out', () => {
    const svg = samplesChartSvg([samples[0], { ...samples[1], rosterOk: false }]);
    expect(svg).not.toContain('<polyline');
    expect(svg.match(/<circle /g)!.length).toBeGreaterThanOrEqual(5);
  });
});

describe('the audit file', () => {
  it('appends every line through one open file; a rotation (the file moved away) is followed by a new file', async () => {
    const { fileAudit, auditFile, readAudit } = await import('../src/store/audit.js');
    const dir = tmp();
    const audit = fileAudit(dir);
    for (let i = 0; i < 50; i++) audit({ event: 'test:line', taskId: `t${i}` });
    expect(readAudit(dir).map((e) => e.taskId)).toEqual(Array.from({ length: 50 }, (_, i) => `t${i}`));
    const { renameSync } = await import('node:fs');
    renameSync(auditFile(dir), join(dir, 'audit.jsonl.1'));
    audit({ event: 'test:line', taskId: 'after' });
    expect(readAudit(dir).map((e) => e.taskId)).toEqual(['after']);
    expect(readFileSync(join(dir, 'audit.jsonl.1'), 'utf8').trim().split('\n')).toHaveLength(50);
  });

  it('each line is {"at": when, …the entry}, in the entry\'s order; an entry with an `at` of its own keeps it, once', async () => {
    const { fileAudit, auditFile } = await import('../src/store/audit.js');
    const dir = tmp();
    const audit = fileAudit(dir, () => Date.UTC(2026, 11, 2, 12));
    audit({ event: 'test:a', taskId: 't', n: 1, nested: { x: [1, 'é'] } });
    audit({ event: 'test:b', at: 'its own' });
    const lines = readFileSync(auditFile(dir), 'utf8').trim().split('\n');
    expect(lines[0]).toBe('{"at":"2026-12-02T12:00:00.000Z","event":"test:a","taskId":"t","n":1,"nested":{"x":[1,"é"]}}');
    expect(lines[1]).toBe('{"at":"its own","event":"test:b"}');
  });
});
