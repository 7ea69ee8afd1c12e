// Memory-pressure ordering: only the order of what is already eligible changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitPriority, memAvailable, underPressure } from '../src/evidence/meminfo.js';
import { tempDir } from './support/temp-dir.js';
import { memoryRoom, memoryShort, refusal, typicalSession, type MemoryFacts } from '../src/cap/memory.js';

describe('memory pressure', () => {
  it('reads MemAvailable from a meminfo file', () => {
    const f = join(tempDir('sunset-mem-'), 'meminfo');
    writeFileSync(f, 'MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:    1500000 kB\n');
    expect(memAvailable(f)).toBe(1_500_000 * 1024);
    expect(memAvailable(join(f, 'missing'))).toBeNull();
    expect(memAvailable('/proc/meminfo')).toBeGreaterThan(0);
  });
  it('is under pressure only with a floor and a known, lower MemAvailable', () => {
    expect(underPressure(2e9, 1e9)).toBe(true);
    expect(underPressure(2e9, 3e9)).toBe(false);
    expect(underPressure(null, 1)).toBe(false);
    expect(underPressure(2e9, null)).toBe(false);
  });
  it('under pressure, a larger RSS gets a higher BullMQ priority (a smaller number); otherwise none', () => {
    const big = exitPriority(800 * 1024 * 1024, true)!;
    const small = exitPriority(400 * 1024 * 1024, true)!;
    expect(big).toBeLessThan(small);
    expect(big).toBeGreaterThanOrEqual(1);
    expect(exitPriority(null, true)).toBe(2_000_000);
    expect(exitPriority(800 * 1024 * 1024, false)).toBeUndefined();
  });
});

describe('under memory pressure the exit worker takes the largest session first', () => {
  it('three eligible sessions of 20, 120 and 60 MB leave in the order 120, 60, 20', async () => {
    const { TestFleet, waitFor } = await import('../sim/fleet/fleet.js');
    const { startTestSunset, testConfig } = await import('./support/sunset.js');
    const fleet = await TestFleet.create();
    let sunset: Awaited<ReturnType<typeof startTestSunset>> | null = null;
    try {
      const sizes = [20, 120, 60];
      const agents: Awaited<ReturnType<typeof fleet.spawnBackground>>[] = [];
      for (const mb of sizes) agents.push(await fleet.spawnBackground({ ballastMB: mb, transcriptAgeMs: 3_600_000 }));
      // the floor above any machine's memory: always under pressure. One exit per 4 s (longer than a sweep under load), so the queue holds all three.
      const config = testConfig(fleet, {
        memoryFloorMB: 10_000_000,
        probeTimeout: 20_000,
        exitRate: { max: 1, per: 4000 },
        windows: { expireIdle: 1_000 * 3_600_000 },
      });
      sunset = await startTestSunset(config);
      await sunset.deps.producers.exit.queue.pause();
      const { requestPersonExit } = await import('../src/pipeline/person-exit.js');
      for (const a of agents)
        expect((await requestPersonExit(sunset.deps, a.id, { why: 'pressure test', by: 't', override: true })).status).toBe('accepted');
      await sunset.deps.producers.exit.queue.resume();
      expect(await waitFor(() => agents.every((a) => !fleet.isAlive(a)), 60_000)).toBe(true);
      expect(await waitFor(async () => (await sunset!.deps.producers.exit.queue.getJobCounts('completed')).completed === 3, 30_000)).toBe(
        true,
      );
      // the order the rate-limited worker took them in (each then gathers fresh evidence, which takes its own time)
      const done = await sunset.deps.producers.exit.queue.getJobs(['completed']);
      const order = done
        .sort((a, b) => (a.processedOn ?? 0) - (b.processedOn ?? 0))
        .map((j) => sizes[agents.findIndex((a) => a.sessionId === j.data.sessionId)]);
      expect(order).toEqual([120, 60, 20]);
      expect(fleet.signals()).toEqual([]);
    } finally {
      await sunset?.close();
      await fleet.destroy();
    }
  });
});

describe('admission by memory (pure)', () => {
  const MB = 1024 * 1024;
  const facts = (availMB: number | null, floorMB: number | null, typicalMB: number): MemoryFacts => ({
    availableBytes: availMB === null ? null : availMB * MB,
    floorBytes: floorMB === null ? null : floorMB * MB,
    typical: { bytes: typicalMB * MB, from: 'median', sampled: 3 },
    meminfoPath: '/proc/meminfo',
  });
  it('a typical session is the median of the measured sizes, else the default', () => {
    expect(typicalSession([300, null, 100, 200], 500)).toEqual({ bytes: 200, from: 'median', sampled: 3 });
    expect(typicalSession([100, 400], 500)).toEqual({ bytes: 250, from: 'median', sampled: 2 });
    expect(typicalSession([null, 0, undefined], 500)).toEqual({ bytes: 500, from: 'default', sampled: 0 });
  });
  it('room: how many typical sessions fit above the floor; none when unknown; no limit without a floor', () => {
    expect(memoryRoom(facts(3000, 2000, 400))).toBe(2);
    expect(memoryRoom(facts(2399, 2000, 400))).toBe(0);
    expect(memoryRoom(facts(1000, 2000, 400))).toBe(0);
    expect(memoryRoom(facts(null, 2000, 400))).toBe(0);
    expect(memoryRoom(facts(1000, null, 400))).toBeNull();
    expect(memoryShort(facts(2300, 2000, 400), 0)).toEqual({ starts: 1, leftBytes: 1900 * MB, shortBytes: 100 * MB });
  });
  it('says which limit refused: count, memory, both; starts in flight and queued count against memory', () => {
    const m = facts(3000, 2000, 400); // room for 2
    expect(refusal({ counted: 5, held: 0, queued: 0 }, 10, 0, m).by).toEqual([]);
    expect(refusal({ counted: 5, held: 1, queued: 1 }, 10, 0, m).by).toEqual(['memory']);
    expect(refusal({ counted: 10, held: 0, queued: 0 }, 10, 0, m)).toMatchObject({ by: ['count'], count: { slotsShort: 1 } });
    expect(refusal({ counted: 11, held: 2, queued: 0 }, 10, 0, m)).toMatchObject({
      by: ['count', 'memory'],
      count: { slotsShort: 2 },
      memory: { starts: 3, shortBytes: 200 * MB },
    });
    expect(refusal({ counted: 5, held: 9, queued: 0 }, 10, 0, facts(3000, null, 400))).toMatchObject({ by: [], memory: null });
  });
});
