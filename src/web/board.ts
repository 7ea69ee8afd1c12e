// Bull Board at /queues, for every sunset queue of every host sharing this Redis, read-only: every
// action goes through sunset's own API. Queues are found by SCAN for `{sunset}:*:meta` (never KEYS),
// and all of them share one connection, made by src/redis.ts for the configured target: the one server
// of redisUrl, or the Cluster of redisCluster. In a Cluster, SCAN runs on every master (a keyless command
// would reach one node at random; the `{sunset}` keys all live on the one node that owns their slot).
// Bull Board itself (src/web/board-ui.ts, ~10 MB of code) is loaded at the first request for /queues.
import { Queue, type ConnectionOptions } from 'bullmq/dist/cjs/classes/index.js';
import type { Cluster, Redis } from 'ioredis';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PREFIX } from '../../queues/common.js';
import { closeClient, createRedisClient, isCluster, type RedisTarget } from '../redis.js';

/** `<base>@<host>`, as queueName() makes them; anything else under the prefix is not ours to show. */
const QUEUE_NAME = /^[a-z][a-z0-9-]*@[A-Za-z0-9._-]+$/;
const META = ':meta';

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

export class QueueDirectory {
  readonly redis: Redis | Cluster;
  private readonly queues = new Map<string, Queue>();
  private scannedAt = 0;
  private scanning: Promise<Queue[]> | null = null;
  onChange: (queues: Queue[]) => void = () => undefined;

  constructor(
    target: RedisTarget,
    /** This host's own queues: shown even before Redis holds anything for them. */
    private readonly own: string[],
    private readonly timeoutMs = 3000,
  ) {
    this.redis = createRedisClient(target, { lazyConnect: true });
    this.redis.on('error', () => undefined); // reported where a call fails, not once per reconnect
  }

  list(): Queue[] {
    return [...this.queues.values()];
  }

  /** Rescan when the last scan is older than maxAgeMs; a scan in flight is shared. */
  async refresh(maxAgeMs = 5000): Promise<Queue[]> {
    if (Date.now() - this.scannedAt <= maxAgeMs && this.queues.size) return this.list();
    this.scanning ??= this.scan().finally(() => (this.scanning = null));
    return this.scanning;
  }

  private async scan(): Promise<Queue[]> {
    const names = new Set(this.own);
    try {
      const match = `${PREFIX}:*${META}`;
      const deadline = Date.now() + this.timeoutMs;
      for (const node of await this.scanNodes()) {
        let cursor = '0';
        do {
          const [next, keys] = await withTimeout(node.scan(cursor, 'MATCH', match, 'COUNT', 1000), this.timeoutMs, 'SCAN');
          cursor = next;
          for (const k of keys) {
            const name = k.slice(PREFIX.length + 1, -META.length);
            if (QUEUE_NAME.test(name)) names.add(name);
          }
        } while (cursor !== '0' && Date.now() < deadline);
      }
      this.scannedAt = Date.now();
    } catch {
      // Redis unreachable: keep what we know; the next request tries again
    }
    let changed = false;
    for (const name of [...names].sort()) {
      if (this.queues.has(name)) continue;
      const q = new Queue(name, { connection: this.redis as unknown as ConnectionOptions, prefix: PREFIX });
      q.on('error', () => undefined); // an outage is said by `sunset up` (redis:error), not as a stack per reconnect
      this.queues.set(name, q);
      changed = true;
    }
    if (changed) this.onChange(this.list());
    return this.list();
  }

  /** Where SCAN must run: the one server, or every master of the Cluster (once it knows its slots). */
  private async scanNodes(): Promise<Redis[]> {
    const r = this.redis;
    if (!isCluster(r)) return [r];
    // any command waits in the offline queue until the Cluster is ready, its node list filled
    await withTimeout(r.ping(), this.timeoutMs, 'connecting to the cluster');
    return r.nodes('master');
  }

  async close(): Promise<void> {
    // the queues share this.redis and leave it open; it goes last
    await Promise.all(this.list().map((q) => q.close().catch(() => undefined)));
    this.queues.clear();
    await closeClient(this.redis);
  }
}

/** The board's own page asks Google for a font; served here, a page fetches nothing from the internet. */
export function stripExternalAssets(page: string): string {
  return page.replace(/<link[^>]+href="https?:\/\/[^"]*"[^>]*>\s*/g, '');
}

export const BOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'none'";

/**
 * Bull Board at /queues, loaded when first asked for: until then `sunset up` carries none of its code. Its
 * routes live on a Fastify instance of their own (never listening) that requests are handed to in-process.
 */
export function mountBoardLazily(app: FastifyInstance, dir: QueueDirectory, onClose: (f: () => Promise<void>) => void): void {
  let ui: Promise<FastifyInstance> | null = null;
  const load = () =>
    (ui ??= (async () => {
      const [{ default: Fastify }, { mountBoard }] = await Promise.all([import('fastify'), import('./board-ui.js')]);
      const inner = Fastify({ logger: false });
      await mountBoard(inner, dir);
      await inner.ready();
      onClose(() => inner.close());
      return inner;
    })().catch((err) => {
      ui = null; // the next request tries again
      throw err;
    }));
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    // read-only, before anything loads: no request but a read reaches the board
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return reply
        .code(405)
        .header('allow', 'GET, HEAD')
        .send({ error: 'the queue board is read-only: act through sunset (POST /api/exit/:id, `sunset exit`)' });
    }
    const inner = await load();
    const res = await inner.inject({ method: req.method, url: req.url, headers: req.headers as Record<string, string> });
    const headers = { ...res.headers };
    for (const h of ['content-length', 'transfer-encoding', 'connection', 'keep-alive']) delete headers[h];
    return reply.code(res.statusCode).headers(headers).send(res.rawPayload);
  };
  app.all('/queues', handler);
  app.all('/queues/*', handler);
}
