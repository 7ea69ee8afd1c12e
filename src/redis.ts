// The one way sunset connects to Redis: one server (config.redisUrl: TCP, TLS, or a unix socket — sunset's own
// redis-server is one, src/redis/) or a Redis Cluster (config.redisCluster, which then overrides redisUrl). Every Queue, Worker, QueueEvents and plain client is made from here.
// For BullMQ on one server: plain options, not shared instances — Workers and QueueEvents given IORedis
// instances kept the process alive after close() (STACK.md). The one exception is Redis Cluster: BullMQ
// needs a Cluster *instance* there, so a RedisLink makes one per process, hands it to every Queue, Worker
// and QueueEvents (the blocking ones duplicate it and close their copies), and quits it last, after they
// have all closed — so the process still exits. Code that talks to Redis itself (admit's leases, the
// web's queue directory) takes createRedisClient(), and names the target with redisWhere().
import type { ConnectionOptions } from 'bullmq';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

/**
 * Connection options, by what the connection is for (BullMQ's production guide): a worker waits out an
 * outage (maxRetriesPerRequest null, reconnect forever); `sunset up`'s producers queue their commands while
 * Redis is away and go on when it is back; a one-shot command (`sunset exit`) gives up after a few tries, so
 * its add() fails at once with the cause — no separate reachability probe.
 */
export function redisOptions(url: string, forWorker = false, oneShot = false): ConnectionOptions {
  return {
    ...redisAddress(url),
    // workers block on Redis and must wait out an outage rather than fail their commands
    ...(forWorker
      ? { maxRetriesPerRequest: null }
      : oneShot
        ? { maxRetriesPerRequest: 1, enableOfflineQueue: true, connectTimeout: 3000 }
        : { maxRetriesPerRequest: null, enableOfflineQueue: true }),
    retryStrategy: oneShot && !forWorker ? (times: number) => (times > 3 ? null : 250) : (times: number) => Math.min(times * 200, 2000),
  };
}

/**
 * Where one server is, from its URL: `redis://` / `rediss://` (host, port, user, password, db, TLS), or a unix
 * socket, `unix:///path/to/redis.sock[?db=N]` (sunset's private Redis is one: src/redis/private-server.ts).
 */
export function redisAddress(url: string): RedisOptions {
  const u = new URL(url);
  if (u.protocol === 'unix:') {
    const db = Number(u.searchParams.get('db') ?? 0);
    return { path: decodeURIComponent(u.pathname), ...(Number.isFinite(db) && db ? { db } : {}) };
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error(`redisUrl ${url} must start with redis://, rediss:// or unix://`);
  const db = u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isFinite(db) && db ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/** Where Redis is: one server (`redisUrl`), or the seed nodes of a Redis Cluster (`redisCluster`). */
export interface RedisTarget {
  redisUrl: string;
  redisCluster?: readonly string[] | null;
}

/** A Cluster's seed nodes (`host:port` or `redis://[user:pass@]host:port`) and the options every node connection takes. */
export function clusterNodes(list: readonly string[]): { nodes: ClusterNode[]; redisOptions: RedisOptions } {
  if (!list.length) throw new Error('redisCluster takes at least one node');
  let shared: RedisOptions = {};
  const nodes = list.map((entry, i) => {
    const o = redisOptions(/^rediss?:\/\//.test(entry) ? entry : `redis://${entry}`) as RedisOptions;
    if ((o as { db?: number }).db) throw new Error(`redisCluster node ${entry}: a Cluster has only database 0`);
    if (i === 0)
      shared = {
        ...(o.username ? { username: o.username } : {}),
        ...(o.password ? { password: o.password } : {}),
        ...(o.tls ? { tls: o.tls } : {}),
      };
    return { host: o.host!, port: o.port! };
  });
  return { nodes, redisOptions: shared };
}

/** For humans and logs: the URL, or `cluster` and the seed nodes — the target actually used. */
export function redisWhere(t: RedisTarget): string {
  return t.redisCluster?.length ? `cluster ${t.redisCluster.join(',')}` : t.redisUrl;
}

export interface ClientOptions {
  maxRetriesPerRequest?: number | null;
  lazyConnect?: boolean;
  connectTimeout?: number;
  /** Give up reconnecting after this many tries (commands then fail): for a command that must not hang. Default: retry forever. */
  reconnectTries?: number;
}

const backoff = (tries: number | undefined) => (times: number) =>
  tries !== undefined && times > tries ? null : Math.min(times * (tries !== undefined ? 250 : 200), 2000);

/** A new Cluster client on these seed nodes. It keeps the process alive until quit(). */
export function newCluster(list: readonly string[], o: ClientOptions = {}): Cluster {
  const { nodes, redisOptions: shared } = clusterNodes(list);
  const retries = o.maxRetriesPerRequest === undefined ? null : o.maxRetriesPerRequest;
  return new Cluster(nodes, {
    // BullMQ's blocking connections (duplicated from this one) refuse any other value than null
    redisOptions: { ...shared, maxRetriesPerRequest: retries, ...(o.connectTimeout ? { connectTimeout: o.connectTimeout } : {}) },
    enableOfflineQueue: true,
    clusterRetryStrategy: backoff(o.reconnectTries),
    slotsRefreshTimeout: 2000,
    ...(o.lazyConnect ? { lazyConnect: true } : {}),
  });
}

/**
 * A plain client for this target — a Redis or a Cluster — for code that talks to Redis itself rather than
 * through BullMQ. In a Cluster every command's keys must share one slot: sunset's keys all sit under the
 * `{sunset}` hash tag (QUEUE_PREFIX). The caller closes it with closeClient().
 */
export function createRedisClient(t: RedisTarget, o: ClientOptions = {}): Redis | Cluster {
  if (t.redisCluster?.length) return newCluster(t.redisCluster, o);
  return new Redis({
    ...(redisOptions(t.redisUrl) as RedisOptions),
    ...(o.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: o.maxRetriesPerRequest } : {}),
    ...(o.lazyConnect ? { lazyConnect: true } : {}),
    ...(o.connectTimeout ? { connectTimeout: o.connectTimeout } : {}),
    ...(o.reconnectTries !== undefined ? { retryStrategy: backoff(o.reconnectTries) } : {}),
  });
}

export function isCluster(c: Redis | Cluster): c is Cluster {
  return (c as Cluster).isCluster === true;
}

/** Quit a client and wait until its last socket has closed (a Cluster has one per node); disconnect if that takes long. */
export async function closeClient(c: Redis | Cluster, ms = 3000): Promise<void> {
  if (c.status === 'end') return;
  if (c.status === 'wait') {
    c.disconnect(); // lazy and never connected: nothing to say goodbye to
    return;
  }
  // quit() answers before the sockets are gone; 'end' is when the last one has closed
  const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      c.quit().then(() => ended),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('quit timed out')), ms))),
    ]);
  } catch {
    c.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/** What one process's Queues and Workers connect with; close() after they have all closed. */
export interface RedisLink {
  readonly cluster: boolean;
  /** For humans and logs: the URL, or the cluster's seed nodes. */
  readonly where: string;
  connection(forWorker?: boolean): ConnectionOptions;
  close(): Promise<void>;
}

export function redisLink(t: RedisTarget, o: { oneShot?: boolean } = {}): RedisLink {
  if (!t.redisCluster?.length) {
    return {
      cluster: false,
      where: redisWhere(t),
      connection: (forWorker = false) => redisOptions(t.redisUrl, forWorker, o.oneShot),
      close: async () => undefined,
    };
  }
  const list = t.redisCluster;
  clusterNodes(list); // fail now, with the node named, rather than at first use
  let client: Cluster | null = null;
  let closed = false;
  return {
    cluster: true,
    where: redisWhere(t),
    connection() {
      if (closed) throw new Error('this Redis link is closed');
      if (!client) {
        client = newCluster(list, o.oneShot ? { reconnectTries: 3 } : {});
        client.on('error', () => undefined); // each Queue and Worker reports errors on its own connection
      }
      return client as unknown as ConnectionOptions;
    },
    async close() {
      closed = true;
      const c = client;
      client = null;
      if (c) await closeClient(c);
    },
  };
}

/**
 * Remove every key of one host (its queues, schedulers, admit leases; its dry run's, `<host>.dry-run`) from the
 * Redis at `url` (any URL redisAddress reads) — not another host's whose name merely starts the same. Returns how many went; a Redis that is
 * not there has nothing left to drop (0). For the demo and the tests, which leave nothing behind.
 */
export async function dropHostKeys(url: string, host: string): Promise<number> {
  const c = new Redis({
    ...redisAddress(url),
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  c.on('error', () => undefined);
  let n = 0;
  try {
    await c.connect();
    let cursor = '0';
    do {
      const [next, keys] = await c.scan(cursor, 'MATCH', `{sunset}:*@${host}*`, 'COUNT', 1000);
      cursor = next;
      const mine = keys.filter((k) => k.includes(`@${host}:`) || k.includes(`@${host}.dry-run:`));
      if (mine.length) n += await c.del(...mine);
    } while (cursor !== '0');
  } catch {
    /* Redis gone: nothing left to drop there */
  } finally {
    c.disconnect();
  }
  return n;
}
