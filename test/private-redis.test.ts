// The demo's own redis-server: it uses and shuts down only the server it started, never one that took its port.
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { freePort, ownRedis } from './support/redis.js';
import { startPrivateRedis } from '../src/private-redis.js';

async function ping(url: string): Promise<string | null> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.ping();
  } catch {
    return null;
  } finally {
    c.disconnect();
  }
}

describe('startPrivateRedis', () => {
  it('refuses a port another redis-server answers on, and leaves that server alone', async () => {
    const other = await ownRedis();
    try {
      await expect(startPrivateRedis(other.port)).rejects.toThrow(/another redis-server/);
      expect(await ping(other.url)).toBe('PONG');
    } finally {
      await other.destroy();
    }
  });
  it('starts its own, and shutdown stops it', async () => {
    const mine = await startPrivateRedis(await freePort());
    expect(await ping(mine.url)).toBe('PONG');
    await mine.shutdown();
    expect(await ping(mine.url)).toBeNull();
  });
});
