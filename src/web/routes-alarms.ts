// The alarms as JSON, and a person's acknowledgement of one (audited, with who and why).
// Apart from server.ts, as each area's routes are (routes-common.ts is what they share).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MAX_REASON, type WebContext } from './routes-common.js';

/** GET /api/alarms, POST /api/alarms/:id/ack. */
export function alarmRoutes(app: FastifyInstance, c: WebContext): void {
  const { deps } = c;
  // every alarm ever raised, each with its id and its acknowledgement (null while open), as `sunset alarms --all --json`
  app.get('/api/alarms', async () => {
    const alarms = deps.alarms.listed();
    return { alarms, open: alarms.filter((a) => !a.ack).length };
  });

  // a person closes an alarm: the ack is kept beside it (the alarm stays in the log) and audited, with who and why
  app.post('/api/alarms/:id/ack', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body))
      return reply.code(400).send({ error: 'the body is a JSON object: { "reason": "…" }' });
    const { reason } = body;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON))
      return reply.code(400).send({ error: `reason takes a string of at most ${MAX_REASON} characters` });
    // a dry run writes nothing the real run reads: an acknowledgement is the real run's (or `sunset alarms ack`)
    if (deps.dryRun)
      return reply.code(409).send({
        status: 'dry-run',
        error: 'a dry run changes nothing: acknowledge it from the real run’s page, or with sunset alarms ack ID',
      });
    const r = deps.alarms.ack(req.params.id, { by: `web ${req.ip}`, why: reason ?? '', audit: deps.audit });
    switch (r.status) {
      case 'acknowledged':
        return reply.code(200).send({ status: 'acknowledged', alarm: r.alarm });
      case 'already':
        return reply.code(409).send({
          status: 'already-acknowledged',
          alarm: r.alarm,
          error: `alarm ${r.alarm.id} was already acknowledged, ${r.ack.at} by ${r.ack.by}: ${r.ack.why}`,
        });
      case 'ambiguous':
        return reply.code(400).send({
          status: 'ambiguous',
          error: `${JSON.stringify(req.params.id)} names ${r.matches.length} alarms: give more of the id`,
          matches: r.matches.map((m) => m.id),
        });
      case 'unknown-id':
        return reply.code(404).send({ status: 'unknown-id', error: `no alarm has the id ${JSON.stringify(req.params.id)}` });
    }
  });
}
