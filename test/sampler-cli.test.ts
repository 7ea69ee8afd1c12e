// The sampler on a real test fleet: `sunset samples --take` and its summary, spawned; and `sunset up`'s
// producers taking samples on their timer (real Redis), one sampling process per host, lock released on close.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestFleet, waitFor } from './fleet/fleet.js';
import { startTestSunset, testConfig, type TestSunset } from './support/sunset.js';
import { readSamples } from '../src/sampler.js';

const CLI = join(__dirname, '..', 'dist', 'src', 'cli.js');
const H = 3_600_000;

function sunset(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', rej);
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

let fleet: TestFleet;
let up: TestSunset | null = null;
beforeEach(async () => {
  fleet = await TestFleet.create();
});
afterEach(async () => {
  await up?.close();
  up = null;
  const signals = fleet.signals();
  await fleet.destroy();
  expect(signals).toEqual([]); // D1
});

describe('sunset samples', () => {
  it('--take records a census of the fleet; the summary, --json and --svg read it back', async () => {
    const cfg = fleet.writeConfig();
    const a = await fleet.spawnBackground({ transcriptAgeMs: 50 * H });
    const b = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-b', state: 'awaiting-human', sessionId: b.sessionId });
    fleet.addRecord();

    const take = await sunset(['samples', '--take', '--config', cfg]);
    expect(take.code).toBe(0);
    expect(take.stdout).toMatch(/samples: 1,/);
    expect(take.stdout).toMatch(/live sessions: min 2, median 2, max 2/);
    expect(take.stdout).toMatch(/idle ≥ 48 h: 1 of 1 samples/);
    const [s] = readSamples(fleet.stateDir);
    expect(s).toMatchObject({ rosterOk: true, live: 2, records: 1, since: null, exits: null });
    expect(s.silence.longestSessionId).toBe(a.sessionId);
    expect(s.silence.buckets['>=48h']).toBe(1);
    expect(s.byLane['awaiting-human'].sessions).toBe(1);
    expect(s.byLane['awaiting-human'].bytes).toBeGreaterThan(1024 * 1024);

    expect((await sunset(['samples', '--take', '--config', cfg])).code).toBe(0);
    const j = await sunset(['samples', '--json', '--since', '1h', '--config', cfg]);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({ count: 2, failed: 0, live: { max: 2 }, idle48h: { samples: 2 }, exits: 0, asks: 0 });
    const svg = await sunset(['samples', '--svg', '--config', cfg]);
    expect(svg.stdout).toMatch(/^<svg[\s\S]*<\/svg>\n$/);

    fleet.setRosterFault('fail');
    const failed = await sunset(['samples', '--take', '--config', cfg]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/1 with a failed roster/);

    expect((await sunset(['samples', '--since', 'soon', '--config', cfg])).code).toBe(2);
    expect((await sunset(['samples', '--json', '--svg', '--config', cfg])).code).toBe(2);
  });
});

describe('the producers take samples on their timer', () => {
  it('samples every windows.sampleEvery; close releases the lock', async () => {
    await fleet.spawnBackground({ transcriptAgeMs: H });
    up = await startTestSunset(testConfig(fleet, { windows: { sampleEvery: 400 } }), { roles: ['producers'] });
    const ok = await waitFor(() => readSamples(fleet.stateDir).length >= 2, 60_000, 50);
    expect(ok).toBe(true);
    const samples = readSamples(fleet.stateDir);
    expect(samples[0]).toMatchObject({ rosterOk: true, live: 1, host: up.config.host });
    expect(samples[1].since).toBe(samples[0].at);
    expect(up.events.some((e) => e.event === 'sample:taken')).toBe(true);
    expect(existsSync(join(fleet.stateDir, 'sampler.lock'))).toBe(true);
    await up.close();
    up = null;
    expect(existsSync(join(fleet.stateDir, 'sampler.lock'))).toBe(false);
  });
});
