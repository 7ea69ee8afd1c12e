// The pages a person reads: the fleet, the decisions, and the sign-in that sets the cookie for reads.
// Apart from server.ts, as each area's routes are (routes-common.ts is what they share).
import type { FastifyInstance } from 'fastify';
import { buildReport } from '../report/report.js';
import { loadResumeEntries } from '../report/resume.js';
import { COOKIE, tokenMatches } from './auth.js';
import { memoryNow, reportNow, rowsOf, taskTimelines } from './model.js';
import { overTime } from './over-time.js';
import { decisionsPage } from './decisions-page.js';
import { fleetPage } from './fleet-page.js';
import { loginPage } from './page-shell.js';
import { rosterStatus, sendPage, type WebContext } from './routes-common.js';
import { readUnreadableState } from '../pipeline/unreadable-watch.js';

/** GET / and /decisions (the two pages), /login (GET and POST: off loopback only), /favicon.ico. */
export function pageRoutes(app: FastifyInstance, c: WebContext): void {
  const { deps, token, stateDir, max, snapshot } = c;
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
        unreadable: { finding: snap.claudeFiles?.unreadable ?? null, state: readUnreadableState(stateDir) },
        token,
        dryRun: deps.dryRun,
        redis: deps.redis,
      }),
    );
  });

  app.get('/decisions', async (_req, reply) => {
    const snap = await snapshot();
    reply.code(rosterStatus(snap));
    return sendPage(
      reply,
      decisionsPage({ snap, report: buildReport(snap), alarms: deps.alarms.listed(), token, dryRun: deps.dryRun, redis: deps.redis }),
    );
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
}
