// A redis-server of sunset's own (the demo's, when none is reachable): started daemonized in a temp folder,
// stopped with the SHUTDOWN command — no signal needed. A server is ours only when its working folder is the
// temp folder we gave it: another server that took the port first is never used, and never shut down.
// (`sunset up`'s own, on a unix socket in stateDir and kept between runs, is src/redis/.)
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { run } from './run.js';

export interface PrivateRedis {
  url: string;
  shutdown(): Promise<void>;
}

export async function freePortNear(start: number): Promise<number> {
  for (let p = start; p < start + 200; p++) {
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return p;
  }
  throw new Error(`no free port in ${start}..${start + 199}`);
}

export async function startPrivateRedis(port: number): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'sunset-redis-'));
  const r = await run(
    [
      'redis-server',
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
      '--daemonize',
      'yes',
      '--logfile',
      join(dir, 'redis.log'),
    ],
    { timeoutMs: 10_000 },
  );
  if (!r.ok) throw new Error(`could not start redis-server (${r.error}); install it (apt-get install redis-server) or set REDIS_URL`);
  const url = `redis://127.0.0.1:${port}`;
  const client = () => {
    const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    c.on('error', () => undefined);
    return c;
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const c = client();
    try {
      await c.connect();
      if ((await c.ping()) === 'PONG') {
        if (!(await isOurs(c, dir)))
          throw new NotOurs(`port ${port} is answered by another redis-server, not the one sunset started: choose another port`);
        break;
      }
    } catch (err) {
      if (err instanceof NotOurs) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      /* not yet */
    } finally {
      c.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer`);
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    url,
    async shutdown() {
      const c = client();
      try {
        await c.connect();
        if (await isOurs(c, dir)) await c.call('SHUTDOWN', 'NOSAVE').catch(() => undefined); // the connection closes as it obeys
      } catch {
        /* already gone */
      } finally {
        c.disconnect();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

class NotOurs extends Error {}

/** The server's working folder is the temp folder this process made for it. */
async function isOurs(c: Redis, dir: string): Promise<boolean> {
  try {
    const r = (await c.call('CONFIG', 'GET', 'dir')) as string[];
    return r[1] === dir || r[1] === realpathSync(dir);
  } catch {
    return false;
  }
}
