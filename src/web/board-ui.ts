// Bull Board's own code, mounted on the instance src/web/board.ts hands /queues requests to (loaded only
// when someone opens the board). Read-only: the adapters refuse actions.
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import { BOARD_CSP, stripExternalAssets, type QueueDirectory } from './board.js';

export async function mountBoard(app: FastifyInstance, dir: QueueDirectory): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath('/queues');
  const adapter = (q: Queue) => {
    const [base, host] = q.name.split('@');
    return new BullMQAdapter(q, {
      readOnlyMode: true,
      allowRetries: false, // and so no retry of completed jobs either (the adapter derives it)
      displayName: `${base} @ ${host}`,
      description: `host ${host}`,
    });
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

  await app.register(async (scope) => {
    // read-only, twice over: the adapters refuse actions, and no request but a read reaches them
    scope.addHook('onRequest', async (req, reply) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return reply
          .code(405)
          .header('allow', 'GET, HEAD')
          .send({ error: 'the queue board is read-only: act through sunset (POST /api/exit/:id, `sunset exit`)' });
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
    await scope.register(serverAdapter.registerPlugin(), { prefix: '/queues' });
  });
}
