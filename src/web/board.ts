// Bull Board at /queues, for every sunset queue of every host sharing this Redis, read-only: every
// action goes through sunset's own API. Queues are found by SCAN for `{sunset}:*:meta` (never KEYS),
// and all of them share one connection, made by src/redis.ts for the configured target: the one server
// of redisUrl, or the Cluster of redisCluster. In a Cluster, SCAN runs on every master (a keyless command
// would reach one node at random; the `{sunset}` keys all live on the one node that owns their slot).
import { Queue, type ConnectionOptions } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
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
      this.queues.set(name, new Queue(name, { connection: this.redis as unknown as ConnectionOptions, prefix: PREFIX }));
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

export const BOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'none'";

export async function mountBoard(app: FastifyInstance, dir: QueueDirectory): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath('/queues');
  const adapter = (q: Queue) => {
    const [base, host] = q.name.split('@');
    return new BullMQAdapter(q, { readOnlyMode: true, allowRetries: false, allowCompletedRetries: false, displayName: `${base} @ ${host}`, description: `host ${host}` } as any);
  };
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'sunset queues',
        hideDocsLink: true,
        miscLinks: [
          { text: 'Fleet', url: '/' },
          { text: 'Decisions', url: '/decisions' },
        ],
        pollingInterval: { showSetting: true },
      },
    },
  });
  dir.onChange = (queues) => board.replaceQueues(queues.map(adapter));
  await dir.refresh(0);
  board.replaceQueues(dir.list().map(adapter));

  await app.register(
    async (scope) => {
      // read-only, twice over: the adapters refuse actions, and no request but a read reaches them
      scope.addHook('onRequest', async (req, reply) => {
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          return reply.code(405).header('allow', 'GET, HEAD').send({ error: 'the queue board is read-only: act through sunset (POST /api/exit/:id, `sunset exit`)' });
        }
        if (req.url.startsWith('/queues/api/queues')) await dir.refresh(5000);
      });
      scope.addHook('onSend', async (_req, reply, payload) => {
        const type = String(reply.getHeader('content-type') ?? '');
        if (type.startsWith('text/html')) {
          reply.header('content-security-policy', BOARD_CSP);
          if (typeof payload === 'string') return stripExternalAssets(payload);
        }
        return payload;
      });
      await scope.register(serverAdapter.registerPlugin() as any, { prefix: '/queues' });
    },
  );
}
