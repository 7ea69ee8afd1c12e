// Redis connection options for BullMQ, from config.redisUrl. Plain options, not shared instances:
// Workers and QueueEvents given IORedis instances kept the process alive after close() (STACK.md).
import type { ConnectionOptions } from 'bullmq';

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
