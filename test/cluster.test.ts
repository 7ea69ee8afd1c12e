// Redis Cluster: a real 3-node cluster (`redis-server --cluster-enabled yes` on free ports, then
// `redis-cli --cluster create … --cluster-yes`), and a short pipeline on it through ioredis Cluster
// (config.redisCluster). BullMQ needs a Cluster instance there; `sunset up` must still close every
// instance on SIGTERM and exit by itself.
import { Cluster } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { TestFleet } from './fleet/fleet.js';
import { uniqueHost } from './support/sunset.js';
import { redisCluster, type RedisCluster } from '../chaos/redis.js';
import { SunsetProc, chaosConfig, until, H } from '../chaos/harness.js';
import { parseConfig, QUEUE_PREFIX, queueName } from '../src/config.js';
import { createDeps, closeProducers } from '../src/pipeline.js';
import { silentLogger } from '../src/log.js';

let cluster: RedisCluster | null = null;
let fleet: TestFleet | null = null;
let procs: SunsetProc[] = [];

afterEach(async () => {
  for (const p of procs) await p.stop(20_000);
  procs = [];
  const signals = fleet?.signals() ?? [];
  await fleet?.destroy();
  fleet = null;
  await cluster?.destroy();
  cluster = null;
  expect(signals).toEqual([]); // D1
});

describe('Redis Cluster', () => {
  it('runs a short pipeline on a 3-node cluster; sunset up exits cleanly after', async () => {
    cluster = await redisCluster(3);
    fleet = await TestFleet.create();
    const f = fleet;
    const a = await f.spawnBackground({ transcriptAgeMs: H });
    f.writeTask({ id: 'on-cluster', state: 'done', sessionId: a.sessionId, keep: { me: [1, 2] } });
    const lane = await f.spawnBackground({ transcriptAgeMs: 300 * H });
    f.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
    const host = uniqueHost();
    // redisUrl points nowhere: with redisCluster set, only the cluster is used
    const cfgFile = f.writeConfig(chaosConfig(f, { host, redisUrl: 'redis://127.0.0.1:1', redisCluster: cluster.nodes }));

    const p = new SunsetProc(cfgFile, { cwd: f.root });
    procs.push(p);
    await until('the session exited', () => Boolean(f.readTask('on-cluster').exitedAt), 180_000);
    expect(f.ended(a)).toMatchObject([{ how: 'stop' }]);
    expect(f.readTask('on-cluster')).toMatchObject({ keep: { me: [1, 2] }, exitRequests: 1 });
    expect(f.isAlive(lane)).toBe(true);
    expect(f.requests(lane)).toEqual([]);

    // the queues live in the cluster, all in the one slot of the {sunset} hash tag
    const c = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })));
    try {
      const meta = `${QUEUE_PREFIX}:${queueName('session-exit', host)}:meta`;
      expect(await c.exists(meta)).toBe(1);
      expect(await c.cluster('KEYSLOT', meta)).toBe(await c.cluster('KEYSLOT', `${QUEUE_PREFIX}:anything`));
    } finally {
      await c.quit();
    }

    const stopped = await p.stop(20_000);
    expect(stopped.signal, 'sunset up left something open: it had to be killed').toBeNull();
    expect(stopped.code).toBe(0);
  }, 300_000);

  it('a one-shot command on the cluster (createDeps, closeProducers) leaves no connection open', async () => {
    cluster = await redisCluster(3);
    fleet = await TestFleet.create();
    const config = parseConfig(fleet.config({ host: uniqueHost(), redisCluster: cluster.nodes }), { env: {} });
    const deps = createDeps(config, { log: silentLogger });
    await deps.producers.exit.add('exit/x/y/1', { reason: 'request', taskId: 'x', sessionId: 'y', n: 1 });
    expect(await deps.producers.exit.queue.getJobCounts('waiting', 'prioritized')).toMatchObject({ waiting: 1 });
    await closeProducers(deps.producers);
    // the Cluster instance is quit: no socket of it stays behind
    const handles = (process as any)._getActiveHandles().filter((h: any) => h?.constructor?.name === 'Socket' && cluster!.ports.includes(h.remotePort));
    expect(handles).toEqual([]);
  }, 120_000);
});
