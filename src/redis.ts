// Redis connection options for BullMQ, from config.redisUrl. Plain options, not shared instances:
// Workers and QueueEvents given IORedis instances kept the process alive after close() (STACK.md).
// The one exception is Redis Cluster (config.redisCluster): BullMQ needs a Cluster *instance* there, so a
// RedisLink makes one per process, hands it to every Queue and Worker (Workers duplicate it and close their
// copies), and quits it last, after they have all closed — so the process still exits.
import type { ConnectionOptions } from 'bullmq';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

export function redisOptions(url: string, forWorker = false): ConnectionOptions {
  const u = new URL(url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`redisUrl ${url} must start with redis:// or rediss://`);
  const db = u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isFinite(db) && db ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    // workers block on Redis and must wait out an outage rather than fail their commands
    ...(forWorker ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: null, enableOfflineQueue: true }),
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
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
    if (i === 0) shared = { ...(o.username ? { username: o.username } : {}), ...(o.password ? { password: o.password } : {}), ...(o.tls ? { tls: o.tls } : {}) };
    return { host: o.host!, port: o.port! };
  });
  return { nodes, redisOptions: shared };
}

/** A new Cluster client on these seed nodes. It keeps the process alive until quit(). */
export function newCluster(list: readonly string[], o: { maxRetriesPerRequest?: number | null } = {}): Cluster {
  const { nodes, redisOptions: shared } = clusterNodes(list);
  const retries = o.maxRetriesPerRequest === undefined ? null : o.maxRetriesPerRequest;
  return new Cluster(nodes, {
    // BullMQ's blocking connections (duplicated from this one) refuse any other value than null
    redisOptions: { ...shared, maxRetriesPerRequest: retries },
    enableOfflineQueue: true,
    clusterRetryStrategy: (times: number) => Math.min(times * 200, 2000),
    slotsRefreshTimeout: 2000,
  });
}

/**
 * A plain client for this target — a Redis or a Cluster — for code that talks to Redis itself rather than
 * through BullMQ. The caller quits it.
 */
export function createRedisClient(t: RedisTarget, o: { maxRetriesPerRequest?: number | null; lazyConnect?: boolean } = {}): Redis | Cluster {
  if (t.redisCluster?.length) return newCluster(t.redisCluster, o);
  return new Redis({ ...(redisOptions(t.redisUrl) as RedisOptions), ...(o.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: o.maxRetriesPerRequest } : {}), ...(o.lazyConnect ? { lazyConnect: true } : {}) });
}

/** What one process's Queues and Workers connect with; close() after they have all closed. */
export interface RedisLink {
  readonly cluster: boolean;
  /** For humans and logs: the URL, or the cluster's seed nodes. */
  readonly where: string;
  connection(forWorker?: boolean): ConnectionOptions;
  close(): Promise<void>;
}

export function redisLink(t: RedisTarget): RedisLink {
  if (!t.redisCluster?.length) {
    return { cluster: false, where: t.redisUrl, connection: (forWorker = false) => redisOptions(t.redisUrl, forWorker), close: async () => undefined };
  }
  const list = t.redisCluster;
  clusterNodes(list); // fail now, with the node named, rather than at first use
  let client: Cluster | null = null;
  let closed = false;
  return {
    cluster: true,
    where: `cluster ${list.join(',')}`,
    connection() {
      if (closed) throw new Error('this Redis link is closed');
      if (!client) {
        client = newCluster(list);
        client.on('error', () => undefined); // each Queue and Worker reports errors on its own connection
      }
      return client as unknown as ConnectionOptions;
    },
    async close() {
      closed = true;
      const c = client;
      client = null;
      if (!c || c.status === 'end') return;
      // quit() answers before the sockets are gone; 'end' is when the last one has closed
      const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
      try {
        await Promise.race([c.quit().then(() => ended), new Promise((_, reject) => setTimeout(() => reject(new Error('quit timed out')), 3000).unref())]);
      } catch {
        c.disconnect();
      }
    },
  };
}
