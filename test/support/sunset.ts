// Start sunset in-process against a test fleet, with windows compressed to milliseconds, a unique host
// (so queue names never collide with another test on the shared Redis) and captured logs.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { parseConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startSunset, type Running, type UpOptions } from '../../src/pipeline/up.js';
import { dropHostKeys } from '../../src/redis.js';
import type { TestFleet } from '../../sim/fleet/fleet.js';

export const FAST_WINDOWS = {
  grace: 150,
  silence: 100,
  askWait: 250,
  retryWait: 250,
  exitConfirm: 3000,
  expireEvery: 500,
  expireIdle: 3_600_000,
  reconcileEvery: 1000,
  recheck: 150,
  reapAfter: 100,
  admitLease: 2000,
};

/** Every host a test of this file made: its keys are dropped after the file (test/support/per-file.ts). */
export const testHosts = new Set<string>();

export function uniqueHost(): string {
  const h = `t-${randomBytes(5).toString('hex')}`;
  testHosts.add(h);
  return h;
}

export interface TestSunset extends Running {
  config: Config;
  events: Array<Record<string, any>>;
  exitCalls: string[];
}

export function testConfig(fleet: TestFleet, overrides: Record<string, any> = {}): Config {
  return parseConfig(
    fleet.config({
      host: uniqueHost(),
      redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      probeTimeout: 5000,
      exitRate: { max: 20, per: 100 },
      windows: FAST_WINDOWS,
      log: { level: 'debug' },
      ...overrides,
      ...(overrides.windows ? { windows: { ...FAST_WINDOWS, ...overrides.windows } } : {}),
    }),
    { env: {} },
  );
}

const open = new Map<string, number>();

export async function startTestSunset(config: Config, o: Partial<UpOptions> = {}): Promise<TestSunset> {
  const events: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line.trim()) events.push(JSON.parse(line));
      cb();
    },
  });
  const exitCalls: string[] = [];
  const { sessionExit } = await import('../../src/pipeline/session-exit.js');
  const running = await startSunset(config, {
    roles: ['producers', 'workers'],
    log: createLogger('debug', sink),
    exitImpl: async (t, c, x) => {
      exitCalls.push(t.id ?? t.sessionId);
      return sessionExit(t, c, x);
    },
    ...o,
  });
  const close = running.close;
  let closing: Promise<string[]> | null = null;
  running.close = () => (closing ??= closeOnce());
  const closeOnce = async () => {
    const late = await close();
    // the last of this host's test processes to close takes its keys with it
    const left = (open.get(config.host) ?? 1) - 1;
    if (left > 0) open.set(config.host, left);
    else {
      open.delete(config.host);
      await dropHost(config.redisUrl, config.host);
    }
    return late;
  };
  open.set(config.host, (open.get(config.host) ?? 0) + 1);
  return Object.assign(running, { config, events, exitCalls });
}

/** Remove a test host's keys (its queues, its admit leases) from a shared Redis: a test leaves nothing behind. */
export async function dropHost(redisUrl: string, host: string): Promise<void> {
  await dropHostKeys(redisUrl, host);
}
