// Crashes and lost schedules: kill -9 of sunset mid-chain, and Redis flushed mid-chain. Nothing is asked
// twice, no task gets over 3 requests, no alarm is raised twice, and the chain still finishes.
import { readAudit } from '../src/store/audit.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLI } from './support/cli.js';
import { FAST_WINDOWS, startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { ownRedis, type OwnRedis } from './support/redis.js';
import { until, useFleet } from './support/use-fleet.js';
import { Alarms } from '../src/store/alarms.js';
import { parseConfig } from '../src/config.js';

const H = 3_600_000;
let procs: ChildProcess[] = [];
let redis: OwnRedis | null = null;

const ctx = useFleet({
  first: () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); // our own sunset processes
    procs = [];
  },
  after: async () => {
    await redis?.destroy();
    redis = null;
  },
});

const task = (id: string) => ctx.fleet.readTask(id);
const audits = (stateDir: string, event: string) => readAudit(stateDir).filter((e) => e.event === event).length;

function startUp(cfgFile: string): ChildProcess {
  const p = spawn(process.execPath, [CLI, 'up', '--role', 'producers', '--role', 'workers', '--config', cfgFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  p.stderr!.resume();
  procs.push(p);
  return p;
}
async function kill9(p: ChildProcess) {
  const gone = new Promise((r) => p.once('exit', r));
  p.kill('SIGKILL'); // the harness crashing its own sunset process
  await gone;
}

describe('kill -9 of sunset mid-chain, then restart', () => {
  it('a stubborn session: one ask, exactly 3 requests, one alarm — across four crashes', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'k', state: 'done', sessionId: a.sessionId });
    const host = uniqueHost();
    const cfgFile = ctx.fleet.writeConfig({
      host,
      probeTimeout: 2000,
      exitRate: { max: 20, per: 100 },
      windows: { ...FAST_WINDOWS, exitConfirm: 300, reconcileEvery: 500 },
    });
    const stages: Array<[string, () => boolean]> = [
      ['released', () => Boolean(task('k').releasedAt)],
      ['asked', () => Boolean(task('k').exitAskedAt)],
      ['request 1', () => task('k').exitRequests >= 1],
      ['request 2', () => task('k').exitRequests >= 2],
    ];
    for (const [what, cond] of stages) {
      const p = startUp(cfgFile);
      await until(what, cond);
      await kill9(p);
    }
    startUp(cfgFile);
    await until('gave up', () => Boolean(task('k').exitGaveUpAt), 60_000);
    expect(task('k').exitRequests).toBe(3);
    const stops = ctx.fleet.requests(a).length;
    expect(stops).toBeLessThanOrEqual(3);
    expect(stops).toBeGreaterThanOrEqual(2); // a crash between "calling" and the call may cost one delivery, never add one
    const stateDir = ctx.fleet.config().stateDir;
    // one message, across four crashes: the session's model was sent it once (a crash may fall between the latch and its audit line)
    expect(audits(stateDir, 'exit:asked')).toBeLessThanOrEqual(1);
    expect(ctx.fleet.messages(a)).toHaveLength(1);
    expect(new Alarms({ stateDir, host, alarms: parseConfig({}, { env: {} }).alarms, probeTimeout: 1000 }).list()).toHaveLength(1);
    expect(ctx.fleet.isAlive(a)).toBe(true);
  }, 120_000);

  it('an ordinary session still leaves after crashes at every stage', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'o', state: 'done', sessionId: a.sessionId });
    const cfgFile = ctx.fleet.writeConfig({
      host: uniqueHost(),
      probeTimeout: 2000,
      exitRate: { max: 20, per: 100 },
      windows: { ...FAST_WINDOWS, reconcileEvery: 500 },
    });
    for (const [what, cond] of [
      ['released', () => Boolean(task('o').releasedAt)],
      ['asked', () => Boolean(task('o').exitAskedAt)],
    ] as Array<[string, () => boolean]>) {
      const p = startUp(cfgFile);
      await until(what, cond);
      await kill9(p);
    }
    startUp(cfgFile);
    await until('exited', () => Boolean(task('o').exitedAt));
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
    expect(task('o').exitRequests).toBe(1);
  }, 90_000);
});

describe('Redis loses everything mid-chain', () => {
  it('FLUSHALL after the first request: reconcile rebuilds; still 3 requests, one alarm', async () => {
    redis = await ownRedis();
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'f', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(
      testConfig(ctx.fleet, { redisUrl: redis.url, windows: { exitConfirm: 300, retryWait: 600, reconcileEvery: 300 } }),
    );
    await until('request 1', () => task('f').exitRequests >= 1);
    await redis.flushAll();
    await until('gave up', () => Boolean(task('f').exitGaveUpAt), 60_000);
    expect(task('f').exitRequests).toBe(3);
    expect(ctx.fleet.requests(a).length).toBe(3);
    expect(new Alarms(ctx.sunset.config).list()).toHaveLength(1);
    expect(audits(ctx.sunset.config.stateDir, 'exit:asked')).toBe(1);
  }, 90_000);

  it('Redis restarted mid-chain (nothing persisted): the chain finishes', async () => {
    redis = await ownRedis();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'r', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { redisUrl: redis.url, windows: { askWait: 1500, reconcileEvery: 300 } }));
    await until('asked', () => Boolean(task('r').exitAskedAt));
    await redis.stop();
    await redis.start();
    await until('exited', () => Boolean(task('r').exitedAt), 40_000);
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
    expect(task('r').exitRequests).toBe(1);
  }, 90_000);
});
void writeFileSync;
