// The web role of `sunset up` (DESIGN §7): the fleet and decisions pages, the JSON API, Prometheus
// /metrics and a read-only Bull Board, behind the locks in auth.ts. A person's exit request goes through
// requestPersonExit, the same road as `sunset exit`; nothing here calls sessionExit() (D2).
import { ambiguousMessage, holdsProcess, resolveSession } from '../doctrine/identity.js';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { Config } from '../config.js';
import { snapshotJson, type FleetSnapshot } from '../evidence/fleet.js';
import { buildReport } from '../report/report.js';
import { loadResumeEntries } from '../report/resume.js';
import { requestPersonExit } from '../pipeline/person-exit.js';
import { checkRequest, COOKIE, isLoopback, loadToken, tokenMatches, urlHost, WebConfigError } from './auth.js';
import { mountBoardLazily, QueueDirectory } from './board.js';
import { createMetrics } from './metrics.js';
import { memoryNow, reasonWords, reportNow, rowsOf, sessionsJson, taskTimelines } from './model.js';
import { overTime } from './over-time.js';
import { decisionsPage, fleetPage, loginPage } from './pages.js';
import { CLIENT_JS_HASH } from './client.js';
import { readExit } from '../store/ledger.js';
import { outcomeWords } from '../cli/exit.js';

export { WebConfigError } from './auth.js';

export interface Web {
  close(): Promise<void>;
  url: string;
  token: string;
  /** A dry run's token, held for this run only (nothing is written into stateDir). */
  ephemeral?: boolean;
}

const PAGE_CSP = `default-src 'none'; script-src ${CLIENT_JS_HASH}; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;
/** Pages and API answers may use evidence this old: a refresh every few seconds costs one sweep, shared. */
const READ_AGE_MS = 2000;
const MAX_REASON = 500;

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
  const { token, source } = loadToken(deps.config.stateDir, deps.config.web.token, { ephemeral: Boolean(deps.dry) });
  const max = deps.config.maxExitRequests;
  const stateDir = deps.config.stateDir;

  // close ends keep-alive sockets too: a browser left open must not hold shutdown
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024, return503OnClosing: true, forceCloseConnections: true });
  // the configured target (redisUrl, or redisCluster when set): the same Redis the producers use
  const dir = new QueueDirectory(deps.config, Object.values(deps.producers).map((p) => p.name));
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
      deps.log.warn({ event: 'web:refused', method: req.method, path, status: refusal.status, origin: req.headers.origin, ip: req.ip }, `web: refused ${req.method} ${path}: ${refusal.error}`);
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

  function sendPage(reply: FastifyReply, body: string) {
    return reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8').send(body);
  }
  const snapshot = () => deps.fleet(READ_AGE_MS);
  const rosterStatus = (snap: FleetSnapshot) => (snap.roster.ok ? 200 : 503);

  // ------------------------------------------------------------------ pages

  app.get('/', async (_req, reply) => {
    const snap = await snapshot();
    const mem = memoryNow(deps.config);
    reply.code(rosterStatus(snap));
    return sendPage(
      reply,
      fleetPage({
        snap,
        report: reportNow(snap, mem),
        mem,
        rows: rowsOf(snap, stateDir, max),
        tasks: taskTimelines(snap, stateDir, max),
        exited: loadResumeEntries(deps.config, deps.alarms.list()),
        openAlarms: deps.alarms.open().length,
        overTime: overTime(stateDir),
        sampleEvery: deps.config.windows.sampleEvery,
        token,
        dryRun: Boolean(deps.dry),
        redis: deps.redis,
      }),
    );
  });

  app.get('/decisions', async (_req, reply) => {
    const snap = await snapshot();
    reply.code(rosterStatus(snap));
    return sendPage(reply, decisionsPage({ snap, report: buildReport(snap), alarms: deps.alarms.listed(), token, dryRun: Boolean(deps.dry), redis: deps.redis }));
  });

  app.get('/login', async (_req, reply) => sendPage(reply, loginPage(deps.config.host)));
  app.post('/login', async (req, reply) => {
    const given = (req.body as { token?: unknown } | undefined)?.token;
    if (!tokenMatches(typeof given === 'string' ? given.trim() : null, token)) {
      deps.log.warn({ event: 'web:login-refused', ip: req.ip }, 'web: a sign-in with a wrong token was refused');
      return sendPage(reply.code(401), loginPage(deps.config.host, 'That is not the token.'));
    }
    // a cookie for reads only (auth.ts): SameSite=Strict, never sent by another site's page
    reply.header('set-cookie', `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${30 * 86400}`);
    return reply.code(303).header('location', '/').send();
  });

  app.get('/favicon.ico', async (_req, reply) => reply.code(204).header('cache-control', 'max-age=86400').send());

  // ------------------------------------------------------------------ JSON API

  // ok: the web answers and Redis does (a pipeline without its schedule is not healthy)
  app.get('/healthz', async (_req, reply) => {
    const r = deps.redis;
    if (!r.up) reply.code(503);
    return { ok: r.up, host: deps.config.host, redis: r.up ? 'up' : 'down', ...(r.up ? {} : { since: r.since, error: r.error }) };
  });

  app.get('/api/sessions', async (_req, reply) => {
    const snap = await snapshot();
    return reply.code(rosterStatus(snap)).send(sessionsJson(snap, stateDir, max, memoryNow(deps.config)));
  });

  // the resume ledger, as `sunset exited --json`: every session sunset exited (and gave up on), newest first
  app.get('/api/exited', async () => ({ entries: loadResumeEntries(deps.config, deps.alarms.list()) }));

  app.get('/api/verdict/:id', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const id = req.params.id;
    const snap = await deps.fleet(1000);
    if (!snap.roster.ok) return reply.code(503).send(snapshotJson({ ...snap, sessions: [] }));
    const found = resolveSession(snap.sessions, id, holdsProcess);
    if (found.kind === 'none') return reply.code(404).send({ ...snapshotJson({ ...snap, sessions: [] }), error: `no session is named ${JSON.stringify(id)}` });
    if (found.kind === 'ambiguous') return reply.code(400).send({ ...snapshotJson({ ...snap, sessions: found.matches }), error: ambiguousMessage(id, found.matches) });
    return snapshotJson({ ...snap, sessions: snap.sessions.filter((s) => s.sessionId === found.row.sessionId) });
  });

  // every alarm ever raised, each with its id and its acknowledgement (null while open), as `sunset alarms --all --json`
  app.get('/api/alarms', async () => {
    const alarms = deps.alarms.listed();
    return { alarms, open: alarms.filter((a) => !a.ack).length };
  });

  // a person closes an alarm: the ack is kept beside it (the alarm stays in the log) and audited, with who and why
  app.post('/api/alarms/:id/ack', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) return reply.code(400).send({ error: 'the body is a JSON object: { "reason": "…" }' });
    const { reason } = body;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON)) return reply.code(400).send({ error: `reason takes a string of at most ${MAX_REASON} characters` });
    // a dry run writes nothing the real run reads: an acknowledgement is the real run's (or `sunset alarms ack`)
    if (deps.dry) return reply.code(409).send({ status: 'dry-run', error: 'a dry run changes nothing: acknowledge it from the real run’s page, or with sunset alarms ack ID' });
    const r = deps.alarms.ack(req.params.id, { by: `web ${req.ip}`, why: reason ?? '', audit: deps.audit });
    switch (r.status) {
      case 'acknowledged':
        return reply.code(200).send({ status: 'acknowledged', alarm: r.alarm });
      case 'already':
        return reply.code(409).send({ status: 'already-acknowledged', alarm: r.alarm, error: `alarm ${r.alarm.id} was already acknowledged, ${r.ack.at} by ${r.ack.by}: ${r.ack.why}` });
      case 'ambiguous':
        return reply.code(400).send({ status: 'ambiguous', error: `${JSON.stringify(req.params.id)} names ${r.matches.length} alarms: give more of the id`, matches: r.matches.map((m) => m.id) });
      case 'unknown-id':
        return reply.code(404).send({ status: 'unknown-id', error: `no alarm has the id ${JSON.stringify(req.params.id)}` });
    }
  });

  // what became of an exit job (the exit ledger's record, as the exit worker wrote it): the page polls the one it requested
  app.get('/api/exit/*', async (req: FastifyRequest<{ Params: { '*': string } }>, reply) => {
    const jobId = req.params['*'];
    if (!jobId) return reply.code(404).send({ status: 'unknown-job', error: 'which job? GET /api/exit/<jobId>' });
    const rec = readExit(stateDir, jobId);
    if (rec?.finishedAt) return { status: 'finished', jobId, outcome: rec.outcome ?? null, words: outcomeWords(rec, deps.config.windows.exitConfirm), record: rec };
    if (rec) return { status: 'calling', jobId, words: `asking session ${rec.label ?? rec.sessionId} to leave by its own exit path…`, record: rec };
    // not in the ledger yet: queued, delayed (a roster that did not answer), or a dry run's (which writes no ledger)
    try {
      const job = await deps.producers.exit.queue.getJob(jobId);
      if (!job) return reply.code(404).send({ status: 'unknown-job', error: `no exit job ${JSON.stringify(jobId)} in the ledger or on the queue` });
      const state = await job.getState();
      const rv = job.returnvalue as { wouldExit?: boolean; outcome?: string } | null;
      if (state === 'completed' && rv?.wouldExit) return { status: 'finished', jobId, outcome: 'would-exit', words: 'dry run: it would have been asked to leave by its own exit path; nothing was done' };
      if (state === 'failed') return { status: 'finished', jobId, outcome: 'failed', words: `the exit job failed: ${job.failedReason ?? 'unknown error'}; nothing was done to the session` };
      return { status: 'queued', jobId, state, words: state === 'delayed' ? 'queued, waiting: the roster did not answer, or the exit rate' : 'queued on the exit queue' };
    } catch (err: any) {
      return reply.code(503).send({ status: 'redis-down', jobId, error: `not in the ledger yet, and the queue cannot be read: ${err?.message ?? err}` });
    }
  });

  app.post('/api/exit/:id', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const id = req.params.id;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) return reply.code(400).send({ error: 'the body is a JSON object: { "reason": "…", "override": false }' });
    const { reason, override } = body;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON)) return reply.code(400).send({ error: `reason takes a string of at most ${MAX_REASON} characters` });
    if (override !== undefined && typeof override !== 'boolean') return reply.code(400).send({ error: 'override takes true or false' });
    const r = await requestPersonExit(deps, id, { why: reason ?? '', by: `web ${req.ip}`, override: override === true });
    if (r.status === 'needs-reason') return reply.code(400).send({ error: 'an override is a person\'s decision and is audited: give a reason' });
    switch (r.status) {
      case 'accepted':
        return reply.code(202).send({ status: 'accepted', jobId: r.jobId, id: r.view.id, sessionId: r.view.sessionId, ...(r.joined ? { joined: true } : {}) });
      case 'unknown-id':
        return reply.code(404).send({ status: 'unknown-id', error: `no session is named ${JSON.stringify(id)}` });
      case 'ambiguous':
        return reply.code(400).send({ status: 'ambiguous', error: ambiguousMessage(id, r.matches), matches: r.matches.map((m) => ({ id: m.id, sessionId: m.sessionId, name: m.name })) });
      case 'roster-failed':
      case 'not-queued':
        return reply.code(503).send({ status: r.status, error: r.error });
      case 'refused':
        return reply.code(409).send({
          status: 'refused',
          id: r.view.id,
          verdict: r.view.verdict,
          reasons: r.reasons,
          reasonWords: r.reasons.map((x) => (x === 'record' ? 'it is a roster record with no process' : x === 'gone' ? 'its process has ended' : reasonWords(x))),
          overridable: r.overridable,
        });
    }
  });

  // ------------------------------------------------------------------ metrics and the board

  app.get('/metrics', async (_req, reply) => reply.type(metrics().contentType).send(await metrics().collect()));

  const closeAlso: Array<() => Promise<void>> = [];
  mountBoardLazily(app, dir, (f) => closeAlso.push(f));
  try {
    await app.listen({ host, port });
  } catch (err: any) {
    await dir.close();
    await app.close().catch(() => undefined);
    if (err.code === 'EADDRINUSE' || err.code === 'EADDRNOTAVAIL' || err.code === 'EACCES') {
      throw new WebConfigError(`the web cannot listen on ${urlHost(host)}:${port} (${err.code}): choose another web.host or web.port`);
    }
    throw err;
  }
  bound.port = (app.server.address() as AddressInfo).port;
  const url = `http://${urlHost(host)}:${bound.port}/`;
  deps.log.info({ event: 'web:listening', url, board: `${url}queues`, loopback, token: source }, `web at ${url} (Bull Board at ${url}queues)${source === 'generated' ? ` (token generated into ${stateDir}/web-token)` : source === 'ephemeral' ? ' (a token for this dry run only: sunset up prints it)' : ''}`);

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
