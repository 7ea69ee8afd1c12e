// The sampler on a real test fleet: `sunset samples --take` and its summary, spawned; and `sunset up`'s
// producers taking samples on their timer (real Redis), one sampling process per host, lock released on close.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../sim/fleet/fleet.js';
import { runCli } from './support/cli.js';
import { startTestSunset, testConfig } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { readSamples } from '../src/report/sampler.js';

const H = 3_600_000;
const ctx = useFleet();

describe('sunset samples', () => {
  it('--take records a census of the fleet; the summary, --json and --svg read it back', async () => {
    const cfg = ctx.fleet.writeConfig();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 50 * H });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-b', state: 'awaiting-human', sessionId: b.sessionId });
    ctx.fleet.addRecord();

    const take = await runCli(['samples', '--take', '--config', cfg]);
    expect(take.code).toBe(0);
    expect(take.stdout).toMatch(/samples: 1,/);
    expect(take.stdout).toMatch(/live sessions: min 2, median 2, max 2/);
    expect(take.stdout).toMatch(/idle ≥ 48 h: 1 of 1 samples/);
    const [s] = readSamples(ctx.fleet.stateDir);
    expect(s).toMatchObject({ rosterOk: true, live: 2, records: 1, since: null, exits: null });
    expect(s.silence.longestSessionId).toBe(a.sessionId);
    expect(s.silence.buckets['>=48h']).toBe(1);
    expect(s.byLane['awaiting-human'].sessions).toBe(1);
    expect(s.byLane['awaiting-human'].bytes).toBeGreaterThan(1024 * 1024);

    expect((await runCli(['samples', '--take', '--config', cfg])).code).toBe(0);
    const j = await runCli(['samples', '--json', '--since', '1h', '--config', cfg]);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({ count: 2, failed: 0, live: { max: 2 }, idle48h: { samples: 2 }, exits: 0, asks: 0 });
    const svg = await runCli(['samples', '--svg', '--config', cfg]);
    expect(svg.stdout).toMatch(/^<svg[\s\S]*<\/svg>\n$/);

    ctx.fleet.setRosterFault('fail');
    const failed = await runCli(['samples', '--take', '--config', cfg]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/1 with a failed roster/);

    expect((await runCli(['samples', '--since', 'soon', '--config', cfg])).code).toBe(2);
    expect((await runCli(['samples', '--json', '--svg', '--config', cfg])).code).toBe(2);
  });
});

describe('the producers take samples on their timer', () => {
  it('samples every windows.sampleEvery; close releases the lock', async () => {
    await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { sampleEvery: 400 } }), { roles: ['producers'] });
    const ok = await waitFor(() => readSamples(ctx.fleet.stateDir).length >= 2, 60_000, 50);
    expect(ok).toBe(true);
    const samples = readSamples(ctx.fleet.stateDir);
    expect(samples[0]).toMatchObject({ rosterOk: true, live: 1, host: ctx.sunset.config.host });
    expect(samples[1].since).toBe(samples[0].at);
    expect(ctx.sunset.events.some((e) => e.event === 'sample:taken')).toBe(true);
    expect(existsSync(join(ctx.fleet.stateDir, 'sampler.lock'))).toBe(true);
    await ctx.sunset.close();
    ctx.sunset = null;
    expect(existsSync(join(ctx.fleet.stateDir, 'sampler.lock'))).toBe(false);
  });
});
