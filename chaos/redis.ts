// redis-servers the chaos suite (and the multi-host and cluster tests) start for themselves: one server that
// can be absent at first, stopped, restarted and flushed; or a 3-node Redis Cluster. Each lives in its own
// temp folder on a free port and is stopped with SHUTDOWN NOSAVE — a redis-server of our own.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A free port below 55536 whose cluster-bus twin (port + 10000) is free too. */
export async function freeRedisPort(taken: Set<number> = new Set()): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const p = 20000 + Math.floor(Math.random() * 30000);
    if (taken.has(p) || taken.has(p + 10000)) continue;
    if ((await portFree(p)) && (await portFree(p + 10000))) {
      taken.add(p);
      taken.add(p + 10000);
      return p;
    }
  }
  throw new Error('no free port pair for redis-server');
}

/** One command on a fresh connection that gives up at once: null when nothing answers. */
export async function redisCall(port: number, ...args: string[]): Promise<unknown> {
  const c = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
    enableOfflineQueue: false,
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.call(args[0], ...args.slice(1));
  } catch {
    return null;
  } finally {
    c.disconnect();
  }
}

async function until(what: string, cond: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The process id of the redis-server answering on port (INFO server), or null when none answers. */
async function serverPid(port: number): Promise<number | null> {
  const info = await redisCall(port, 'INFO', 'server');
  const m = /process_id:(\d+)/.exec(String(info ?? ''));
  return m ? Number(m[1]) : null;
}

/** Stop a redis-server this harness started: SHUTDOWN NOSAVE, and SIGKILL (its own child) if it has not exited within 10 s. */
async function stopOwn(p: ChildProcess, port: number): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  const ours = (await serverPid(port)) === p.pid;
  if (ours) await redisCall(port, 'SHUTDOWN', 'NOSAVE');
  const timer = setTimeout(() => p.kill('SIGKILL'), ours ? 10_000 : 0);
  await exited;
  clearTimeout(timer);
}

export interface RedisServer {
  port: number;
  url: string;
  running(): boolean;
  start(): Promise<void>;
  /** SHUTDOWN NOSAVE: nothing persisted, so a restart comes back empty (Redis lost everything). */
  stop(): Promise<void>;
  flushAll(): Promise<void>;
  usedMemory(): Promise<number>;
  destroy(): Promise<void>;
}

/** A redis-server on a free port; started unless `start: false` (Redis absent at start). */
export async function redisServer(o: { start?: boolean; extraArgs?: string[] } = {}): Promise<RedisServer> {
  // a port found free may be taken before redis-server binds it (tests run side by side): try another
  for (let attempt = 1; ; attempt++) {
    const server = newRedisServer(await freeRedisPort(), o.extraArgs);
    if (o.start === false) return server;
    try {
      await server.start();
      return server;
    } catch (err) {
      await server.destroy();
      if (attempt >= 3) throw err;
    }
  }
}

function newRedisServer(port: number, extraArgs: string[] = []): RedisServer {
  const dir = mkdtempSync(join(tmpdir(), 'sunset-chaos-redis-'));
  let proc: ChildProcess | null = null;
  const self: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    running: () => proc !== null && proc.exitCode === null && proc.signalCode === null,
    async start() {
      if (self.running()) return;
      const p = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
        { stdio: 'ignore' },
      );
      proc = p;
      // ours only when the server answering on the port is this process: another test's redis-server may
      // have taken the port since it was found free (then this one exits, failing to bind)
      await until(
        `redis-server on ${port}`,
        async () => {
          if (p.exitCode !== null || p.signalCode !== null)
            throw new Error(`redis-server on ${port} exited (${p.exitCode ?? p.signalCode}): the port was taken`);
          return (await serverPid(port)) === p.pid;
        },
        15_000,
      );
    },
    async stop() {
      const p = proc;
      proc = null;
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      await stopOwn(p, port);
    },
    async flushAll() {
      // never a Redis this harness did not start
      if (!self.running() || (await serverPid(port)) !== proc!.pid) throw new Error(`FLUSHALL on ${port} refused: not our redis-server`);
      if ((await redisCall(port, 'FLUSHALL')) !== 'OK') throw new Error(`FLUSHALL on ${port} failed`);
    },
    async usedMemory() {
      const info = String(await redisCall(port, 'INFO', 'memory'));
      return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
    },
    async destroy() {
      await self.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}

export interface RedisCluster {
  ports: number[];
  /** Seed nodes for config.redisCluster. */
  nodes: string[];
  destroy(): Promise<void>;
}

/** A Redis Cluster of n masters (no replicas) on free ports: `--cluster-enabled yes`, then `redis-cli --cluster create`. */
export async function redisCluster(n = 3): Promise<RedisCluster> {
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freeRedisPort(taken));
  const dir = mkdtempSync(join(tmpdir(), 'sunset-chaos-cluster-'));
  const procs: ChildProcess[] = [];
  const destroy = async () => {
    await Promise.all(procs.map((p, i) => stopOwn(p, ports[i])));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      procs.push(
        spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--save',
            '',
            '--appendonly',
            'no',
            '--dir',
            dir,
            '--dbfilename',
            `dump-${port}.rdb`,
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '2000',
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const [i, port] of ports.entries()) {
      await until(
        `cluster node ${port}`,
        async () => {
          if (procs[i].exitCode !== null || procs[i].signalCode !== null)
            throw new Error(`cluster node on ${port} exited (${procs[i].exitCode ?? procs[i].signalCode}): the port was taken`);
          return (await serverPid(port)) === procs[i].pid;
        },
        15_000,
      );
    }
    const r = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (r.status !== 0) throw new Error(`redis-cli --cluster create failed (${r.status}): ${r.stdout}\n${r.stderr}`);
    for (const port of ports)
      await until(
        `cluster_state:ok on ${port}`,
        async () => /cluster_state:ok/.test(String(await redisCall(port, 'CLUSTER', 'INFO'))),
        30_000,
      );
  } catch (err) {
    await destroy();
    throw err;
  }
  return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`), destroy };
}
