// A person's exit request from the page, by requestPersonExit — the road `sunset exit` takes; nothing here
// calls sessionExit() (D2) — and what became of it. Apart from server.ts: the one area of the web that acts.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ambiguousMessage } from '../doctrine/identity.js';
import { requestPersonExit } from '../pipeline/person-exit.js';
import { readExit } from '../store/ledger.js';
import { outcomeWords } from '../cli/exit-words.js';
import { errorMessage } from '../errors.js';
import { reasonWords } from './model.js';
import { MAX_REASON, type WebContext } from './routes-common.js';

/** POST /api/exit/:id (a person's request), GET /api/exit/<jobId> (what became of it). */
export function exitRoutes(app: FastifyInstance, c: WebContext): void {
  const { deps, stateDir } = c;
  // what became of an exit job (the exit ledger's record, as the exit worker wrote it): the page polls the one it requested
  app.get('/api/exit/*', async (req: FastifyRequest<{ Params: { '*': string } }>, reply) => {
    const jobId = req.params['*'];
    if (!jobId) return reply.code(404).send({ status: 'unknown-job', error: 'which job? GET /api/exit/<jobId>' });
    const rec = readExit(stateDir, jobId);
    if (rec?.finishedAt)
      return {
        status: 'finished',
        jobId,
        outcome: rec.outcome ?? null,
        words: outcomeWords(rec, deps.config.windows.exitConfirm),
        record: rec,
      };
    if (rec)
      return {
        status: 'calling',
        jobId,
        words: `asking session ${rec.label ?? rec.sessionId} to leave by its own exit path…`,
        record: rec,
      };
    // not in the ledger yet: queued, delayed (a roster that did not answer), or a dry run's (which writes no ledger)
    try {
      const job = await deps.producers.exit.queue.getJob(jobId);
      if (!job)
        return reply.code(404).send({ status: 'unknown-job', error: `no exit job ${JSON.stringify(jobId)} in the ledger or on the queue` });
      const state = await job.getState();
      const rv = job.returnvalue as { wouldExit?: boolean; outcome?: string } | null;
      if (state === 'completed' && rv?.wouldExit)
        return {
          status: 'finished',
          jobId,
          outcome: 'would-exit',
          words: 'dry run: it would have been asked to leave by its own exit path; nothing was done',
        };
      if (state === 'failed')
        return {
          status: 'finished',
          jobId,
          outcome: 'failed',
          words: `the exit job failed: ${job.failedReason ?? 'unknown error'}; nothing was done to the session`,
        };
      return {
        status: 'queued',
        jobId,
        state,
        words: state === 'delayed' ? 'queued, waiting: the roster did not answer, or the exit rate' : 'queued on the exit queue',
      };
    } catch (err) {
      return reply
        .code(503)
        .send({ status: 'redis-down', jobId, error: `not in the ledger yet, and the queue cannot be read: ${errorMessage(err)}` });
    }
  });

  app.post('/api/exit/:id', async (req: FastifyRequest<{ Params: { id: string } }>, reply) => {
    const id = req.params.id;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body))
      return reply.code(400).send({ error: 'the body is a JSON object: { "reason": "…", "override": false }' });
    const { reason, override } = body;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON))
      return reply.code(400).send({ error: `reason takes a string of at most ${MAX_REASON} characters` });
    if (override !== undefined && typeof override !== 'boolean') return reply.code(400).send({ error: 'override takes true or false' });
    const r = await requestPersonExit(deps, id, { why: reason ?? '', by: `web ${req.ip}`, override: override === true });
    if (r.status === 'needs-reason')
      return reply.code(400).send({ error: "an override is a person's decision and is audited: give a reason" });
    switch (r.status) {
      case 'accepted':
        return reply
          .code(202)
          .send({ status: 'accepted', jobId: r.jobId, id: r.view.id, sessionId: r.view.sessionId, ...(r.joined ? { joined: true } : {}) });
      case 'unknown-id':
        return reply.code(404).send({ status: 'unknown-id', error: `no session is named ${JSON.stringify(id)}` });
      case 'ambiguous':
        return reply.code(400).send({
          status: 'ambiguous',
          error: ambiguousMessage(id, r.matches),
          matches: r.matches.map((m) => ({ id: m.id, sessionId: m.sessionId, name: m.name })),
        });
      case 'roster-failed':
      case 'not-queued':
        return reply.code(503).send({ status: r.status, error: r.error });
      case 'refused':
        return reply.code(409).send({
          status: 'refused',
          id: r.view.id,
          verdict: r.view.verdict,
          reasons: r.reasons,
          reasonWords: r.reasons.map((x) =>
            x === 'record' ? 'it is a roster record with no process' : x === 'gone' ? 'its process has ended' : reasonWords(x),
          ),
          overridable: r.overridable,
        });
    }
  });
}
