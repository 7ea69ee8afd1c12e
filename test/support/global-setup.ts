// Once per `npm test`: a redis-server of the run's own (on a free port, in a temp folder), so no test writes
// into a Redis that someone else uses. REDIS_URL, when you set it, is used instead. At the end the run's Redis
// must hold no key of a test host: every test cleans up what it put there (checked, then the server stops).
import { ownRedis, type OwnRedis } from './redis.js';
import { Redis } from 'ioredis';

let server: OwnRedis | null = null;

export async function setup() {
  if (process.env.REDIS_URL) return;
  server = await ownRedis();
  process.env.REDIS_URL = server.url;
  process.env.SUNSET_TEST_OWN_REDIS = '1';
}

export async function teardown() {
  if (!server) return;
  try {
    const c = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await c.connect();
    const left: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await c.scan(cursor, 'MATCH', '{sunset}:*', 'COUNT', 1000);
      cursor = next;
      left.push(...keys);
    } while (cursor !== '0' && left.length < 5000);
    c.disconnect();
    if (left.length) {
      const hosts = [...new Set(left.map((k) => /@([^:]+):/.exec(k)?.[1] ?? '?'))];
      throw new Error(
        `tests left ${left.length} {sunset} keys in the run's Redis (every test must clean up what it puts there), of hosts ${hosts.join(', ')}: ${left.slice(0, 5).join(', ')}`,
      );
    }
  } finally {
    await server.destroy();
  }
}
