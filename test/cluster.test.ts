// Redis Cluster: a real 3-node cluster (`redis-server --cluster-enabled yes` on free ports, then
// `redis-cli --cluster create … --cluster-yes`), started once for the file, and on it through ioredis Cluster
// (config.redisCluster): a short pipeline, the web's Bull Board and /metrics, `sunset exit --wait`,
// `sunset admit` and `sunset cap`. BullMQ needs a Cluster instance there; `sunset up` must still close every
// instance on SIGTERM and exit by itself. redisUrl points nowhere in these configs: only the cluster is used.
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TestFleet } from '../sim/fleet/fleet.js';
import { uniqueHost } from './support/sunset.js';
import { redisCluster, type RedisCluster } from '../chaos/redis.js';
import { SunsetProc, chaosConfig, until, H, CLI } from '../chaos/harness.js';
import { parseConfig, QUEUE_PREFIX, queueName } from '../src/config.js';
import { createDeps, closeProducers } from '../src/pipeline/deps.js';
import { admitKeys } from '../src/cap/admit.js';
import { closeClient } from '../src/redis.js';
import { silentLogger } from '../src/log.js';

let cluster: RedisCluster;
let fleet: TestFleet | null = null;
let procs: SunsetProc[] = [];

beforeAll(async () => {
  cluster = await redisCluster(3);
}, 120_000);
afterAll(async () => {
  await cluster?.destroy();
}, 60_000);

afterEach(async () => {
  for (const p of procs) await p.stop(20_000);
  procs = [];
  const signals = fleet?.signals() ?? [];
  await fleet?.destroy();
  fleet = null;
  expect(signals).toEqual([]); // D1
}, 60_000);

/** A client of our own on the test cluster (not sunset's), for looking at what sunset left there. */
function look(): Cluster {
  return new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })));
}

/** The real CLI, as a person runs it; the config file names the Redis (no REDIS_URL from the test's environment). */
function sunsetCli(args: string[], cwd: string, ms = 90_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.REDIS_URL;
  delete env.SUNSET_CONFIG;
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // our own CLI process, past its deadline
      reject(new Error(`sunset ${args[0]} did not finish within ${ms} ms; stderr:\n${stderr}`));
    }, ms);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('Redis Cluster', () => {
  it('a short pipeline, the board and /metrics, and `sunset exit --wait` on a 3-node cluster; sunset up exits cleanly after', async () => {
    fleet = await TestFleet.create();
    const f = fleet;
    const a = await f.spawnBackground({ transcriptAgeMs: H });
    f.writeTask({ id: 'on-cluster', state: 'done', sessionId: a.sessionId, keep: { me: [1, 2] } });
    const lane = await f.spawnBackground({ transcriptAgeMs: 300 * H });
    f.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
    const idle = await f.spawnBackground({ transcriptAgeMs: 2 * H }); // untasked, idle-short: left alone but for a person's exit
    const host = uniqueHost();

    // another host's queue on the same cluster: the board finds it only by SCAN, on the node owning {sunset}
    const other = uniqueHost();
    const od = createDeps(
      parseConfig(f.config({ host: other, redisUrl: 'redis://127.0.0.1:1', redisCluster: cluster.nodes }), { env: {} }),
      { log: silentLogger },
    );
    await od.producers.exit.add('exit/o/o/1', { reason: 'request', taskId: 'o', sessionId: 'o', n: 1 });
    await closeProducers(od.producers);

    // redisUrl points nowhere: with redisCluster set, only the cluster is used
    const cfgFile = f.writeConfig(
      chaosConfig(f, { host, redisUrl: 'redis://127.0.0.1:1', redisCluster: cluster.nodes, extra: { web: { port: 0 } } }),
    );
    const p = new SunsetProc(cfgFile, { cwd: f.root, roles: ['producers', 'workers', 'web'] });
    procs.push(p);
    await until('the session exited', () => Boolean(f.readTask('on-cluster').exitedAt), 180_000);
    expect(f.ended(a)).toMatchObject([{ how: 'stop' }]);
    expect(f.readTask('on-cluster')).toMatchObject({ keep: { me: [1, 2] }, exitRequests: 1 });
    expect(f.isAlive(lane)).toBe(true);
    expect(f.requests(lane)).toEqual([]);

    // the queues live in the cluster, all in the one slot of the {sunset} hash tag
    const c = look();
    try {
      const meta = `${QUEUE_PREFIX}:${queueName('session-exit', host)}:meta`;
      expect(await c.exists(meta)).toBe(1);
      expect(await c.cluster('KEYSLOT', meta)).toBe(await c.cluster('KEYSLOT', `${QUEUE_PREFIX}:anything`));
    } finally {
      await closeClient(c); // until its sockets are gone: the last test counts them
    }

    // the web role reads the same cluster: Bull Board lists both hosts' queues with their counts, /metrics their depths
    await until('the web listening', () => p.count('web:listening') > 0, 60_000);
    const url = p.events.find((e) => e.event === 'web:listening')!.url as string;
    let board: any = null;
    await until(
      'the board showing the exit done and the other host found',
      async () => {
        board = await (await fetch(new URL('/queues/api/queues', url))).json();
        const q = (name: string) => board.queues?.find((x: any) => x.name === name);
        return q(`session-exit@${host}`)?.counts?.completed >= 1 && q(`session-exit@${other}`)?.counts?.waiting === 1;
      },
      30_000,
      250,
    );
    expect(board.queues.every((q: any) => q.readOnlyMode)).toBe(true);
    const metrics = await (await fetch(new URL('/metrics', url))).text();
    expect(metrics).toContain(`sunset_queue_jobs{queue="session-exit@${other}",state="waiting"} 1`);

    // a person's exit, waited for: `sunset exit --wait` hears the outcome from the cluster (QueueEvents)
    const ex = await sunsetCli(
      ['exit', idle.id, '--override-protection', '--reason', 'on the cluster', '--wait', '--json', '--config', cfgFile],
      f.root,
    );
    expect(ex.code, ex.stderr).toBe(0);
    expect(JSON.parse(ex.stdout)).toMatchObject({ status: 'finished', id: idle.id, outcome: 'exited' });
    expect(f.ended(idle)).toMatchObject([{ how: 'stop' }]);

    const stopped = await p.stop(20_000);
    expect(stopped.signal, 'sunset up left something open: it had to be killed').toBeNull();
    expect(stopped.code).toBe(0);
  }, 300_000);

  it('sunset admit takes its lease in the cluster (one slot), counts it, gives back one it cannot use; sunset cap reads it', async () => {
    fleet = await TestFleet.create();
    const f = fleet;
    const host = uniqueHost();
    const keys = admitKeys(host);
    let n = 0;
    const cfg = (over: Record<string, unknown>) => {
      const file = join(f.root, `admit-${++n}.json`);
      writeFileSync(
        file,
        JSON.stringify(
          f.config({
            host,
            redisUrl: 'redis://127.0.0.1:1',
            redisCluster: cluster.nodes,
            probeTimeout: '30s',
            windows: { admitLease: '60s' },
            ...over,
          }),
        ),
      );
      return file;
    };
    const marker = (name: string) => join(f.root, `ran-${name}`);
    const marking = (name: string, code: number) => [
      process.execPath,
      '-e',
      'require("fs").writeFileSync(process.argv[1], "x"); process.exit(Number(process.argv[2]))',
      marker(name),
      String(code),
    ];

    const c = look();
    try {
      // every admission key hashes to the one slot of {sunset}: the Lua scripts and MULTIs run on one node
      const slots = await Promise.all(Object.values(keys).map((k) => c.cluster('KEYSLOT', k)));
      expect(new Set([...slots, await c.cluster('KEYSLOT', `${QUEUE_PREFIX}:x`)]).size).toBe(1);

      // under the cap (no session is live): runs the command, passes its code on, leaves a lease in the cluster
      const one = cfg({ cap: 1 });
      const r = await sunsetCli(['admit', '--config', one, '--', ...marking('first', 7)], f.root);
      expect(r.code, r.stderr).toBe(7);
      expect(existsSync(marker('first'))).toBe(true);
      expect(await c.zcard(keys.leases)).toBe(1);
      expect(JSON.parse((await c.hgetall(keys.info))[(await c.zrange(keys.leases, '0', '-1'))[0]])).toMatchObject({
        pid: expect.any(Number),
      });

      // the lease counts: at cap 1 the next start is refused
      const refused = await sunsetCli(['admit', '--config', one, '--', ...marking('second', 0)], f.root);
      expect(refused.code).toBe(75);
      expect(refused.stderr).toMatch(/cap reached: 1\/1 — not starting/);
      expect(existsSync(marker('second'))).toBe(false);

      const cap = await sunsetCli(['cap', '--json', '--config', one], f.root);
      expect(cap.code, cap.stderr).toBe(0);
      expect(JSON.parse(cap.stdout)).toMatchObject({ live: 0, admitting: 1, counted: 1, reached: true, queued: 0 });

      // under cap 2 a slot is taken, and given back when the command cannot be started at all
      const missing = await sunsetCli(['admit', '--config', cfg({ cap: 2 }), '--', join(f.root, 'no-such-command')], f.root);
      expect(missing.code).toBe(127);
      expect(missing.stderr).toMatch(/cannot start/);
      expect(await c.zcard(keys.leases)).toBe(1);
    } finally {
      await closeClient(c); // until its sockets are gone: the last test counts them
    }

    // a cluster that cannot be reached: no start, and the message names the cluster, not redisUrl (which does answer)
    const down = await sunsetCli(
      [
        'admit',
        '--config',
        cfg({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', redisCluster: ['127.0.0.1:1'] }),
        '--',
        ...marking('down', 0),
      ],
      f.root,
    );
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach Redis at cluster 127\.0\.0\.1:1 .*not starting/);
    expect(existsSync(marker('down'))).toBe(false);
  }, 180_000);

  it('a one-shot command on the cluster (createDeps, closeProducers) leaves no connection open', async () => {
    fleet = await TestFleet.create();
    const config = parseConfig(fleet.config({ host: uniqueHost(), redisCluster: cluster.nodes }), { env: {} });
    const deps = createDeps(config, { log: silentLogger });
    await deps.producers.exit.add('exit/x/y/1', { reason: 'request', taskId: 'x', sessionId: 'y', n: 1 });
    expect(await deps.producers.exit.queue.getJobCounts('waiting', 'prioritized')).toMatchObject({ waiting: 1 });
    await closeProducers(deps.producers);
    // the Cluster instance is quit: no socket of it stays behind
    const handles = (process as any)
      ._getActiveHandles()
      .filter((h: any) => h?.constructor?.name === 'Socket' && cluster.ports.includes(h.remotePort));
    expect(handles).toEqual([]);
  }, 120_000);
});
