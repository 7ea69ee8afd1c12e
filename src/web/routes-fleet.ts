// The read-only JSON API: health, the fleet's sessions, one session's verdict, the sessions sunset exited.
// Apart from server.ts, as each area's routes are (routes-common.ts is what they share).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ambiguousMessage, holdsProcess, resolveSession } from '../doctrine/identity.js';
import { snapshotJson } from '../evidence/fleet.js';
import { entryJson, keptSummary, loadResumeEntries } from '../report/resume.js';
import { memoryNow, sessionsJson } from './model.js';
import { rosterStatus, type WebContext } from './routes-common.js';

/** GET /healthz, /api/sessions, /api/exited, /api/verdict/:id. */
export function fleetRoutes(app: FastifyInstance, c: WebContext): void {
  const { deps, stateDir, max, snapshot } = c;
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
  app.get('/api/exited', async () => ({
    entries: loadResumeEntries(deps.config, deps.alarms.list()).map(entryJson),
    kept: keptSummary(deps.config),
  }));

  app.get('/api/verdict/:id', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const id = req.params.id;
    const snap = await deps.fleet(1000);
    if (!snap.roster.ok) return reply.code(503).send(snapshotJson({ ...snap, sessions: [] }));
    const found = resolveSession(snap.sessions, id, holdsProcess);
    if (found.kind === 'none')
      return reply.code(404).send({ ...snapshotJson({ ...snap, sessions: [] }), error: `no session is named ${JSON.stringify(id)}` });
    if (found.kind === 'ambiguous')
      return reply.code(400).send({ ...snapshotJson({ ...snap, sessions: found.matches }), error: ambiguousMessage(id, found.matches) });
    return snapshotJson({ ...snap, sessions: snap.sessions.filter((s) => s.sessionId === found.row.sessionId) });
  });
}
