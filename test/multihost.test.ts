// Several hosts on one Redis (DESIGN §5): two `sunset up` processes for host A and one for host B, each host
// with its own fleet, on one Redis. The fleets are built to collide — the same task id and the same session
// id on both — so that a job consumed by the wrong host would show. Each host exits only its own session,
// by its own `claude stop`; queue discovery by `{sunset}:*:meta` (what Bull Board and the API list) finds
// both hosts' queues; the expire scheduler runs once per host per period however many processes run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { TestFleet } from '../sim/fleet/fleet.js';
import { dropHost, uniqueHost } from './support/sunset.js';
import { SunsetProc, chaosConfig, until, H } from '../chaos/harness.js';
import { QUEUE_PREFIX, queueName } from '../src/config.js';
import { redisOptions } from '../src/redis.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const EXPIRE_EVERY = 1000;
let fleets: TestFleet[] = [];
let procs: SunsetProc[] = [];
let queues: Queue[] = [];
let hosts: string[] = [];

afterEach(async () => {
  const stops = await Promise.all(procs.map((p) => p.stop(20_000)));
  procs = [];
  await Promise.all(queues.map((q) => q.close()));
  queues = [];
  for (const h of hosts) await dropHost(REDIS_URL, h); // the shared Redis keeps nothing of these hosts
  hosts = [];
  const signals = fleets.flatMap((f) => f.signals());
  await Promise.all(fleets.map((f) => f.destroy()));
  fleets = [];
  expect(signals).toEqual([]); // D1
  for (const s of stops) expect(s.code, 'every sunset up exits cleanly on SIGTERM').toBe(0);
});

const ledger = (f: TestFleet) => {
  try {
    return readFileSync(join(f.stateDir, 'audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
};

describe('several hosts on one Redis', () => {
  it('each host exits only its own sessions; discovery sees both; expire runs once per host per period', async () => {
    const sharedSession = randomUUID();
    hosts = [uniqueHost(), uniqueHost()];
    const setup = await Promise.all(
      hosts.map(async (host) => {
        const fleet = await TestFleet.create();
        fleets.push(fleet);
        const a = await fleet.spawnBackground({ transcriptAgeMs: H, sessionId: sharedSession });
        fleet.writeTask({ id: 'same-task', state: 'done', sessionId: a.sessionId, host });
        const lane = await fleet.spawnBackground({ transcriptAgeMs: 300 * H });
        fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
        const cfgFile = fleet.writeConfig(chaosConfig(fleet, { host, redisUrl: REDIS_URL, windows: { expireEvery: EXPIRE_EVERY } }));
        return { host, fleet, a, lane, cfgFile };
      }),
    );
    const [A, B] = setup;
    procs.push(
      new SunsetProc(A.cfgFile, { cwd: A.fleet.root }),
      new SunsetProc(A.cfgFile, { cwd: A.fleet.root }),
      new SunsetProc(B.cfgFile, { cwd: B.fleet.root }),
    );

    for (const h of setup) {
      await until(`host ${h.host}: its session exited`, () => Boolean(h.fleet.readTask('same-task').exitedAt), 150_000);
    }
    for (const h of setup) {
      expect(h.fleet.ended(h.a)).toMatchObject([{ how: 'stop' }]); // by this fleet's own claude stop
      expect(h.fleet.isAlive(h.lane)).toBe(true);
      expect(h.fleet.requests(h.lane)).toEqual([]);
      // this host's audit names only this host's session (the roster short ids differ between fleets)
      const ids = new Set(
        ledger(h.fleet)
          .filter((e) => e.id)
          .map((e) => e.id),
      );
      expect([...ids]).toEqual([h.a.id]);
      expect(h.fleet.readTask('same-task').exitRequests).toBe(1);
    }

    // discovery: every queue of both hosts under the {sunset} prefix, as the board finds them (SCAN, never KEYS)
    const redis = new Redis(REDIS_URL);
    try {
      const names = new Set<string>();
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${QUEUE_PREFIX}:*:meta`, 'COUNT', 1000);
        cursor = next;
        for (const k of keys) names.add(k.slice(QUEUE_PREFIX.length + 1, -':meta'.length));
      } while (cursor !== '0');
      for (const host of hosts)
        for (const base of ['task-terminal', 'exit-ask', 'exit-retry', 'session-exit', 'reconcile', 'expire-scan'])
          expect(names, `${base}@${host}`).toContain(queueName(base, host));
    } finally {
      redis.disconnect();
    }

    // the expire scheduler: one scan per period per host, though host A runs two processes
    for (const h of setup)
      queues.push(new Queue(queueName('expire-scan', h.host), { connection: redisOptions(REDIS_URL), prefix: QUEUE_PREFIX }));
    // a scheduler job's id is repeat:<scheduler>:<the slot it fills, in ms>
    const slots = async (q: Queue) => {
      const jobs = await q.getJobs(['completed', 'active', 'failed'], 0, 200);
      return jobs
        .map((j) => Number(/^repeat:.*:(\d+)$/.exec(String(j.id))?.[1]))
        .filter(Number.isFinite)
        .sort((x, y) => x - y);
    };
    await until(
      'four expire scans on both hosts',
      async () => (await Promise.all(queues.map(slots))).every((s) => s.length >= 4),
      180_000,
      200,
    );
    for (const [i, q] of queues.entries()) {
      const s = await slots(q);
      // at most one scan in any period: two processes running the scheduler each would fill a period twice
      // (under load a late scan moves its successor later, so periods may go without one — never with two)
      const periods = s.map((t) => Math.floor(t / EXPIRE_EVERY));
      expect(new Set(periods).size, `host ${setup[i].host}: expire slots ${JSON.stringify(s)}`).toBe(periods.length);
    }
  }, 300_000);
});
