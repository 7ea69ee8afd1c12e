// The web role of `sunset up` (DESIGN §7): the fleet and decisions pages, the JSON API, Prometheus
// /metrics and a read-only Bull Board, behind the locks in auth.ts. A person's exit request goes through
// requestPersonExit, the same road as `sunset exit`; nothing here calls sessionExit() (D2). This file
// starts and stops the server and puts the locks in front; the routes are routes-*.ts, by area.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { Config } from '../config.js';
import { checkRequest, isLoopback, loadToken, urlHost, WebConfigError } from './auth.js';
import { mountBoardLazily, QueueDirectory } from './board.js';
import { createMetrics } from './metrics.js';
import { loginPage } from './page-shell.js';
import { READ_AGE_MS, sendPage, type WebContext } from './routes-common.js';
import { pageRoutes } from './routes-pages.js';
import { fleetRoutes } from './routes-fleet.js';
import { alarmRoutes } from './routes-alarms.js';
import { exitRoutes } from './routes-exit.js';
import { errorCode } from '../errors.js';

export { WebConfigError } from './auth.js';

export interface Web {
  close(): Promise<void>;
  url: string;
  token: string;
  /** A dry run's token, held for this run only (nothing is written into stateDir). */
  ephemeral?: boolean;
}

/** Throws WebConfigError when the web must not start as configured; `sunset up` may call it before any other role starts. */
export function assertWebConfig(config: Pick<Config, 'web'>): void {
  const { host, token } = config.web;
  if (!isLoopback(host) && !token) {
    throw new WebConfigError(
      `web.host is ${JSON.stringify(host)}, which is not loopback (127.0.0.1, localhost, ::1), and no web.token is set: ` +
        `anyone who can reach that address could read the fleet. Set web.token (at least 16 characters) in the config, or bind web.host to 127.0.0.1.`,
    );
  }
}

export async function startWeb(deps: PipelineDeps): Promise<Web> {
  assertWebConfig(deps.config);
  const { host, port } = deps.config.web;
  const loopback = isLoopback(host);
  const { token, source } = loadToken(deps.config.stateDir, deps.config.web.token, { ephemeral: deps.dryRun });
  const max = deps.config.maxExitRequests;
  const stateDir = deps.config.stateDir;

  // close ends keep-alive sockets too: a browser left open must not hold shutdown
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024, return503OnClosing: true, forceCloseConnections: true });
  // the configured target (redisUrl, or redisCluster when set): the same Redis the producers use
  const dir = new QueueDirectory(
    deps.config,
    Object.values(deps.producers).map((p) => p.name),
  );
  // made at the first scrape: its process collectors (prom-client's event-loop lag timer wakes the loop every
  // tick of its precision) cost nothing while no one scrapes
  let made: ReturnType<typeof createMetrics> | null = null;
  const metrics = () => (made ??= createMetrics(deps, () => dir.refresh(30_000)));
  const bound = { port: 0 };

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0];
    const refusal = checkRequest({ method: req.method, path, headers: req.headers }, { host, port: bound.port, token, loopback });
    if (!refusal) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      deps.log.warn(
        { event: 'web:refused', method: req.method, path, status: refusal.status, origin: req.headers.origin, ip: req.ip },
        `web: refused ${req.method} ${path}: ${refusal.error}`,
      );
    }
    reply.code(refusal.status);
    if (refusal.status === 401) reply.header('www-authenticate', 'Bearer realm="sunset"');
    if (refusal.status === 401 && (req.headers.accept ?? '').includes('text/html')) return sendPage(reply, loginPage(deps.config.host));
    return reply.send({ error: refusal.error });
  });

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  });

  const c: WebContext = { deps, token, stateDir, max, snapshot: () => deps.fleet(READ_AGE_MS) };
  pageRoutes(app, c);
  fleetRoutes(app, c);
  alarmRoutes(app, c);
  exitRoutes(app, c);

  // ------------------------------------------------------------------ metrics and the board

  app.get('/metrics', async (_req, reply) => reply.type(metrics().contentType).send(await metrics().collect()));

  const closeAlso: Array<() => Promise<void>> = [];
  mountBoardLazily(app, dir, (f) => closeAlso.push(f));
  try {
    await app.listen({ host, port });
  } catch (err) {
    await dir.close();
    await app.close().catch(() => undefined);
    if (errorCode(err) === 'EADDRINUSE' || errorCode(err) === 'EADDRNOTAVAIL' || errorCode(err) === 'EACCES') {
      throw new WebConfigError(
        `the web cannot listen on ${urlHost(host)}:${port} (${errorCode(err)}): choose another web.host or web.port`,
      );
    }
    throw err;
  }
  bound.port = (app.server.address() as AddressInfo).port;
  const url = `http://${urlHost(host)}:${bound.port}/`;
  deps.log.info(
    { event: 'web:listening', url, board: `${url}queues`, loopback, token: source },
    `web at ${url} (Bull Board at ${url}queues)${source === 'generated' ? ` (token generated into ${stateDir}/web-token)` : source === 'ephemeral' ? ' (a token for this dry run only: sunset up prints it)' : ''}`,
  );

  let closing: Promise<void> | null = null;
  return {
    url,
    token,
    ephemeral: source === 'ephemeral',
    close: () =>
      (closing ??= (async () => {
        await app.close();
        for (const f of closeAlso) await f().catch(() => undefined);
        await dir.close();
      })()),
  };
}
