// Tests that restart or flush Redis own their redis-server, on a free port, in a temp folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface OwnRedis {
  port: number;
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  flushAll(): Promise<void>;
  destroy(): Promise<void>;
}

export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sunset-redis-'));
  let proc: ChildProcess | null = null;
  const url = `redis://127.0.0.1:${port}`;
  const cmd = async (...args: string[]) => {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    c.on('error', () => undefined); // refused while the server starts: expected
    try {
      await c.connect();
      return await c.call(args[0], ...args.slice(1));
    } finally {
      c.disconnect();
    }
  };
  const self: OwnRedis = {
    port,
    url,
    async start() {
      if (proc && proc.exitCode === null && proc.signalCode === null) return; // running: a second server would lose the first
      proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
        stdio: 'ignore',
      });
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          if ((await cmd('PING')) === 'PONG') return;
        } catch {
          /* not up yet */
        }
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      const p = proc;
      proc = null;
      if (!p || p.exitCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM'); // a redis-server this test started
      await exited;
    },
    async flushAll() {
      await cmd('FLUSHALL');
    },
    async destroy() {
      await self.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await self.start();
  return self;
}
