// The web's JSON API, its locks and /metrics, over real HTTP against a real test fleet and Redis.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { startWebSunset, type WebSunset } from './support/web.js';
import { startWeb, WebConfigError, type Web } from '../src/web/server.js';
import { createDeps, closeProducers, type PipelineDeps } from '../src/pipeline/deps.js';
import { gatherFleet, snapshotJson } from '../src/evidence/fleet.js';
import { expireFactsReader } from '../src/store/expire-state.js';
import { silentLogger } from '../src/log.js';
import { writeExit, type ExitRecord } from '../src/store/ledger.js';
import { ownRedis } from './support/redis.js';
import { testConfig } from './support/sunset.js';
import { Queue } from 'bullmq';
import { metric } from './support/metrics.js';

const H = 3_600_000;
// real processes and Redis on a busy 2-core machine: generous deadlines, every wait on a condition
const SLOW = 90_000;
const extra: Array<{ close(): Promise<unknown> }> = [];
const ctx = useFleet({
  first: async () => {
    for (const x of extra.splice(0).reverse()) await x.close();
  },
  hookTimeout: SLOW,
});
const until = untilWithin(30_000, 50);

/** sunset with the web role (and, unless told otherwise, nothing else that acts). */
async function up(
  o: { roles?: Array<'producers' | 'workers' | 'web'>; config?: Record<string, any> } = {},
): Promise<{ s: WebSunset; web: Web }> {
  const s = await startWebSunset(ctx.fleet, o.roles ?? ['web'], o.config);
  ctx.sunset = s;
  return { s, web: s.web };
}

function call(web: Web, path: string, init: RequestInit & { token?: string | null } = {}) {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  if (init.body && !headers.has('content-type')) headers.set('content-type', 'application/json');
  return fetch(new URL(path, web.url), { ...init, headers, redirect: 'manual' });
}
const exit = (web: Web, id: string, body: object, token: string | null = web.token, headers: Record<string, string> = {}) =>
  call(web, `/api/exit/${encodeURIComponent(id)}`, { method: 'POST', body: JSON.stringify(body), token, headers });

describe('the JSON API', () => {
  it('POST /api/exit while Redis is away: 503 at once, and nothing is carried out when it comes back', async () => {
    const redis = await ownRedis();
    extra.push({ close: () => redis.destroy() });
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    const { s, web } = await up({ config: { redisUrl: redis.url } });
    await redis.stop();
    const t0 = Date.now();
    const r = await exit(web, a.id, { reason: 'redis is away', override: true });
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ status: 'not-queued', error: expect.stringMatching(/cannot reach Redis/) });
    expect(Date.now() - t0).toBeLessThan(15_000);
    // and the web says so: /healthz 503, the pages' banner, /metrics
    await until('/healthz says Redis is down', async () => (await call(web, '/healthz', { token: web.token })).status === 503);
    expect(await (await call(web, '/healthz', { token: web.token })).json()).toMatchObject({ ok: false, redis: 'down' });
    expect(await (await call(web, '/', { token: web.token })).text()).toContain('Redis does not answer');
    expect(await (await call(web, '/metrics', { token: web.token })).text()).toMatch(/^sunset_redis_up 0$/m);
    await redis.start();
    await until('/healthz says Redis is back', async () => (await call(web, '/healthz', { token: web.token })).status === 200);
    // once the producers' client is back (its offline queue, had it held the add, would have run by now)
    const q = new Queue(s.deps.producers.exit.name, { connection: { url: redis.url } as never, prefix: '{sunset}' });
    extra.push({ close: () => q.close() });
    await until(
      'the producers answer again',
      async () =>
        (await s.deps.producers.exit.queue.isPaused().then(
          () => true,
          () => false,
        )) === true,
    );
    expect(await q.getJobCounts()).toMatchObject({ waiting: 0, prioritized: 0, delayed: 0, active: 0, completed: 0 });
    expect(ctx.fleet.requests(a)).toEqual([]);
  });

  it(
    'GET /api/sessions and /api/verdict/:id answer as `sunset verdict --json`; unknown id 404; /healthz, /api/alarms',
    async () => {
      const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
      ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: waiting.sessionId });
      const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
      const rec = ctx.fleet.addRecord();
      const { s, web } = await up();

      const all = await call(web, '/api/sessions');
      expect(all.status).toBe(200);
      const j = (await all.json()) as any;
      const by = (id: string) => j.sessions.find((x: any) => x.id === id);
      expect(by(waiting.id)).toMatchObject({
        verdict: 'protected',
        reasons: ['task-not-terminal'],
        taskId: 'lane',
        taskState: 'awaiting-human',
        lane: 'awaiting-human',
        reasonWords: ['its task is still open (active or awaiting a human)'],
      });
      expect(by(idle.id)).toMatchObject({ verdict: 'eligible', lane: 'untasked', next: { step: 'expire', n: 1 } });
      expect(by(rec.id)).toMatchObject({ verdict: 'record', live: false, lane: null });
      expect(j.memory.byLane['awaiting-human'].sessions).toBe(1);

      const v = await call(web, `/api/verdict/${waiting.sessionId}`);
      expect(v.status).toBe(200);
      const got = (await v.json()) as any;
      const cli = snapshotJson(await gatherFleet(s.config, { expireFacts: expireFactsReader(s.config.stateDir) }));
      const want = cli.sessions.filter((x) => x.sessionId === waiting.sessionId);
      expect(Object.keys(got).sort()).toEqual(Object.keys(cli).sort());
      expect(got.sessions.map((x: any) => Object.keys(x).sort())).toEqual(want.map((x) => Object.keys(x).sort()));
      expect(got.sessions).toMatchObject(
        want.map(({ id, sessionId, kind, pid, live, taskId, taskState, verdict, reasons, next }) => ({
          id,
          sessionId,
          kind,
          pid,
          live,
          taskId,
          taskState,
          verdict,
          reasons,
          next,
        })),
      );
      expect((await call(web, `/api/verdict/${idle.id}`)).status).toBe(200); // 200 whether or not eligible
      expect((await call(web, '/api/verdict/no-such-id')).status).toBe(404);

      expect(await (await call(web, '/healthz')).json()).toMatchObject({ ok: true, host: s.config.host });
      await s.deps.alarms.raise('cap-reached', 'admit-1', { message: 'cap reached: 36/35' });
      expect(await (await call(web, '/api/alarms')).json()).toMatchObject({
        alarms: [{ kind: 'cap-reached', message: 'cap reached: 36/35' }],
      });
    },
    SLOW,
  );

  it(
    'POST /api/exit/:id: 401 without or with a wrong token, 404, 409 protected / record, 400 bad body, 202 — and the session leaves by its own path',
    async () => {
      const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
      ctx.fleet.writeTask({ id: 'work', state: 'active', sessionId: busy.sessionId });
      const rec = ctx.fleet.addRecord();
      const { s, web } = await up({ roles: ['workers', 'web'] });

      expect((await exit(web, busy.id, { reason: 'x' }, null)).status).toBe(401);
      const wrong = await exit(web, busy.id, { reason: 'x' }, web.token.slice(0, -1) + (web.token.endsWith('A') ? 'B' : 'A'));
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await exit(web, 'no-such-id', { reason: 'x' })).status).toBe(404);
      expect((await exit(web, busy.id, { reason: 7 })).status).toBe(400);
      expect((await exit(web, busy.id, { override: 'yes' })).status).toBe(400);

      const refused = await exit(web, busy.id, { reason: 'tidy up' });
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({
        status: 'refused',
        id: busy.id,
        verdict: 'protected',
        overridable: true,
        reasons: expect.arrayContaining(['task-not-terminal', 'status-busy']),
      });
      const record = await exit(web, rec.id, { reason: 'x', override: true });
      expect(record.status).toBe(409);
      expect(await record.json()).toMatchObject({ verdict: 'record', overridable: false });

      const ok = await exit(web, busy.id, { reason: 'the box is out of memory', override: true });
      expect(ok.status).toBe(202);
      expect(await ok.json()).toMatchObject({ status: 'accepted', id: busy.id, jobId: expect.stringMatching(/^person\//) });
      await until('the session left', () => !ctx.fleet.isAlive(busy));
      expect(ctx.fleet.ended(busy)).toMatchObject([{ how: 'stop' }]);
      const audit = readFileSync(join(s.config.stateDir, 'audit.jsonl'), 'utf8');
      expect(audit).toMatch(/"event":"exit:person-request".*"by":"web [^"]+".*"why":"the box is out of memory".*"override":true/);

      // the resume ledger has it, with what brings it back
      let entries: any[] = [];
      await until('the exit is in the resume ledger', async () => {
        entries = ((await (await call(web, '/api/exited')).json()) as any).entries;
        return entries.some((e) => e.sessionId === busy.sessionId);
      });
      expect(entries.find((e) => e.sessionId === busy.sessionId)).toMatchObject({
        outcome: 'exited',
        id: busy.id,
        kind: 'background',
        cwd: busy.cwd,
        why: expect.stringMatching(/^a person's request \(web .*: the box is out of memory, overriding protection\)$/),
        rssFreedBytes: expect.any(Number),
        resume: [s.config.fleet.claudeCommand, '--resume', busy.sessionId],
        resumeFrom: 'transcript',
        sunsetResume: expect.stringMatching(/^sunset resume /),
      });
      // and a copy of its transcript, kept at the exit: it stays resumable after Claude Code's cleanup
      await until('its transcript copy is kept', async () => {
        const body = (await (await call(web, '/api/exited')).json()) as any;
        return body.entries.find((e: any) => e.sessionId === busy.sessionId)?.kept?.gzBytes > 0 && body.kept.copies === 1;
      });
      entries = ((await (await call(web, '/api/exited')).json()) as any).entries;
      expect(entries.find((e) => e.sessionId === busy.sessionId)).toMatchObject({
        resumeFrom: 'transcript',
        kept: { keptAt: expect.any(String), until: null },
      });
    },
    SLOW,
  );

  it(
    'GET /api/exited reads the exit ledger and the give-ups, newest first; /api/sessions and /metrics say what eligible sessions would give back, and whether memory is under the floor',
    async () => {
      const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H }); // untasked and idle: eligible (expire)
      const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
      // a floor of a petabyte: MemAvailable is always under it, so memory is under pressure
      const { s, web } = await up({ config: { memoryFloorMB: 1_000_000_000 } });
      const dir = s.config.stateDir;
      const at = (hAgo: number) => new Date(Date.now() - hAgo * H).toISOString();
      writeExit(dir, {
        jobId: 'request/ship-report/old/1',
        reason: 'request',
        taskId: 'ship-report',
        sessionId: 'sid-old',
        id: 'old1',
        kind: 'background',
        cwd: '/work/ship report',
        n: 1,
        calledAt: at(5),
        finishedAt: at(5),
        outcome: 'exited',
        rssBytes: 600 * 1024 ** 2,
      });
      writeExit(dir, {
        jobId: 'person/sid-new/1',
        reason: 'person',
        sessionId: 'sid-new',
        id: 'new1',
        kind: 'interactive',
        cwd: '/work/new',
        calledAt: at(1),
        finishedAt: at(1),
        outcome: 'exited',
        rssBytes: 300 * 1024 ** 2,
        by: 'web 127.0.0.1',
        why: 'done with it',
        override: false,
      } as ExitRecord);
      writeExit(dir, {
        jobId: 'request/t2/sid-stuck/1',
        reason: 'request',
        taskId: 't2',
        sessionId: 'sid-stuck',
        n: 1,
        calledAt: at(2),
        finishedAt: at(2),
        outcome: 'still-running',
      }); // did not leave: not in the ledger
      await s.deps.alarms.raise('session-will-not-exit', 'migrate-db', {
        taskId: 'migrate-db',
        sessionId: 'sid-stubborn',
        message: 'session stubborn did not exit after 3 requests (task migrate-db): a person decides',
      });

      const ex = await call(web, '/api/exited');
      expect(ex.status).toBe(200);
      const { entries } = (await ex.json()) as any;
      expect(entries.map((e: any) => [e.outcome, e.sessionId])).toEqual([
        ['gave-up', 'sid-stubborn'],
        ['exited', 'sid-new'],
        ['exited', 'sid-old'],
      ]);
      expect(entries[1]).toMatchObject({
        kind: 'interactive',
        cwd: '/work/new',
        why: "a person's request (web 127.0.0.1: done with it)",
        rssFreedBytes: 300 * 1024 ** 2,
      });
      expect(entries[2]).toMatchObject({
        taskId: 'ship-report',
        why: 'task ship-report finished (request 1 of 3)',
      });
      expect(entries[0]).toMatchObject({ taskId: 'migrate-db', resume: [], resumeFrom: null });
      // no transcript, no copy: gone, and no command is offered (none would work)
      expect(entries[1]).toMatchObject({ resumeFrom: 'gone', kept: null, resume: [], sunsetResume: null });
      expect(entries[2]).toMatchObject({ resumeFrom: 'gone', resume: [], sunsetResume: null });

      const j = (await (await call(web, '/api/sessions')).json()) as any;
      const rssOf = (id: string) => j.sessions.find((x: any) => x.id === id).rssBytes;
      expect(j.memory.eligible).toEqual({ sessions: 1, bytes: rssOf(idle.id) });
      expect(rssOf(idle.id)).toBeGreaterThan(0);
      expect(rssOf(busy.id)).toBeGreaterThan(0); // protected: not in the give-back
      expect(j.memory.availableBytes).toBeGreaterThan(0);
      expect(j.memory).toMatchObject({ pressure: true, floorBytes: 1_000_000_000 * 1024 * 1024 });

      const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      const text = await (await call(web, '/metrics')).text();
      expect(metric(text, 'sunset_eligible_rss_bytes')).toBeGreaterThan(0);
      expect(metric(text, 'sunset_memory_pressure')).toBe(1);

      // no floor: never under pressure
      const nofloor = await startWeb({ ...s.deps, config: { ...s.deps.config, memoryFloorMB: null } });
      extra.push(nofloor);
      expect(((await (await call(nofloor, '/api/sessions')).json()) as any).memory).toMatchObject({
        pressure: false,
        floorBytes: null,
        eligible: { sessions: 1 },
      });
      expect(metric(await (await call(nofloor, '/metrics')).text(), 'sunset_memory_pressure')).toBe(0);
    },
    SLOW,
  );

  it(
    '503 when the roster fails: pages, sessions, verdict and exit',
    async () => {
      const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
      const { web } = await up();
      ctx.fleet.setRosterFault('fail');
      await until('the roster failure is seen', async () => (await call(web, '/api/sessions')).status === 503);
      const body = (await (await call(web, '/api/sessions')).json()) as any;
      expect(body.error).toBeTruthy();
      expect((await call(web, `/api/verdict/${a.id}`)).status).toBe(503);
      expect((await call(web, '/')).status).toBe(503);
      expect((await exit(web, a.id, { reason: 'x' })).status).toBe(503);
      expect(ctx.fleet.isAlive(a)).toBe(true);
    },
    SLOW,
  );
});

describe('the pages', () => {
  it(
    'escape everything read from the fleet, and are sent with a CSP that runs only their own script',
    async () => {
      const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
      const nasty = '<img src=x onerror=alert(1)>';
      ctx.fleet.writeTask({ id: nasty, state: 'awaiting-human"><script>alert(2)</script>', sessionId: a.sessionId });
      const { s, web } = await up();
      await s.deps.alarms.raise('session-will-not-exit', 'x', {
        taskId: nasty,
        sessionId: a.sessionId,
        message: '<b onmouseover=alert(3)>hi</b>',
      });
      for (const path of ['/', '/decisions']) {
        const res = await call(web, path);
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toContain('&lt;img src=x onerror=alert(1)&gt;');
        expect(text).not.toContain('<img src=x');
        expect(text).not.toContain('<script>alert(2)');
        expect(text).not.toContain('<b onmouseover');
        expect(res.headers.get('content-security-policy')).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'; .*frame-ancestors 'none'/);
        expect(res.headers.get('x-frame-options')).toBe('DENY');
        expect(res.headers.get('cache-control')).toBe('no-store');
      }
    },
    SLOW,
  );
});

describe('the locks', () => {
  it(
    'a foreign Origin is refused (403) even with the token; so is a foreign Host (DNS rebinding); the own origin passes',
    async () => {
      const a = await ctx.fleet.spawnBackground({ mode: 'busy' });
      const { web } = await up();
      const own = web.url.replace(/\/$/, '');
      expect((await exit(web, a.id, { reason: 'x', override: true }, web.token, { origin: 'https://evil.example' })).status).toBe(403);
      expect((await exit(web, a.id, { reason: 'x', override: true }, web.token, { origin: 'null' })).status).toBe(403);
      expect((await call(web, '/api/sessions', { headers: { origin: 'http://localhost.evil.example:1' } })).status).toBe(403);
      // fetch sets Host itself; a raw request shows a rebinding page's view
      expect(await rawStatus(web, 'GET', '/api/sessions', { host: `evil.example:${new URL(web.url).port}` })).toBe(403);
      expect(await rawStatus(web, 'GET', '/api/sessions', { host: `localhost:${new URL(web.url).port}` })).toBe(200);
      expect((await call(web, '/api/sessions', { headers: { origin: own } })).status).toBe(200);
      // own origin and the token, but protected: refused on the verdict, not on the lock
      expect((await exit(web, a.id, { reason: 'x' }, web.token, { origin: own })).status).toBe(409);
      // only the Authorization header carries the token for a POST: a cookie is not enough
      expect(
        (await call(web, `/api/exit/${a.id}`, { method: 'POST', body: '{}', headers: { cookie: `sunset_token=${web.token}` } })).status,
      ).toBe(401);
      expect(ctx.fleet.isAlive(a)).toBe(true);
    },
    SLOW,
  );

  it(
    'the token is generated into stateDir/web-token, mode 0600, and reused at the next start',
    async () => {
      const { s, web } = await up();
      const file = join(s.config.stateDir, 'web-token');
      expect(readFileSync(file, 'utf8').trim()).toBe(web.token);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(web.token.length).toBeGreaterThanOrEqual(32);
      const again = await startWeb(s.deps);
      extra.push(again);
      expect(again.token).toBe(web.token);
      expect(again.url).not.toBe(web.url);
    },
    SLOW,
  );

  it(
    'off loopback: refused without web.token (WebConfigError, exit code 2); with it, every route needs the token',
    async () => {
      const deps = (web: Record<string, unknown>): PipelineDeps => {
        // the run's Redis and a host of the test's own (dropped after the file), as every test's
        const d = createDeps(testConfig(ctx.fleet, { web }), { log: silentLogger });
        extra.push({ close: () => closeProducers(d.producers) });
        return d;
      };
      // 127.0.0.2 is on this machine, yet not one of the three loopback names: it stands for any other address
      const err = await startWeb(deps({ host: '127.0.0.2', port: 0 })).catch((e) => e);
      expect(err).toBeInstanceOf(WebConfigError);
      expect(err.exitCode).toBe(2);
      expect(err.message).toMatch(/not loopback.*web\.token/);

      const token = 'a-configured-token-of-some-length';
      const local = await startWeb(deps({ host: '127.0.0.2', port: 0, token }));
      extra.push(local);
      expect(local.token).toBe(token);
      for (const p of [
        '/',
        '/decisions',
        '/api/sessions',
        '/api/alarms',
        '/api/verdict/x',
        '/healthz',
        '/metrics',
        '/queues',
        '/queues/api/queues',
      ]) {
        expect([p, (await call(local, p)).status]).toEqual([p, 401]);
      }
      expect((await call(local, '/healthz', { token })).status).toBe(200);
      expect((await call(local, '/api/sessions', { token })).status).toBe(200);
      // a browser signs in once; the cookie opens reads, never a POST
      const page = await call(local, '/', { headers: { accept: 'text/html' } });
      expect(page.status).toBe(401);
      expect(await page.text()).toContain('Sign in');
      const bad = await call(local, '/login', {
        method: 'POST',
        body: 'token=nope',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(bad.status).toBe(401);
      const login = await call(local, '/login', {
        method: 'POST',
        body: `token=${token}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      expect(login.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
      expect((await call(local, '/', { headers: { cookie } })).status).toBe(200);
      expect((await call(local, '/api/exit/x', { method: 'POST', body: '{}', headers: { cookie } })).status).toBe(401);
      expect((await call(local, '/api/exit/x', { method: 'POST', body: '{}', token })).status).toBe(404);
    },
    SLOW,
  );

  it(
    'the board at /queues is read-only and fetches nothing from the internet',
    async () => {
      const { s, web } = await up();
      const html = await (await call(web, '/queues')).text();
      expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
      const list = (await (await call(web, '/queues/api/queues')).json()) as any;
      const mine = list.queues.filter((q: any) => q.name.endsWith(`@${s.config.host}`)).map((q: any) => q.name);
      expect(mine).toEqual(expect.arrayContaining([`session-exit@${s.config.host}`, `exit-ask@${s.config.host}`]));
      expect(list.queues.every((q: any) => q.readOnlyMode)).toBe(true);
      const q = encodeURIComponent(`session-exit@${s.config.host}`);
      expect((await call(web, `/queues/api/queues/${q}/pause`, { method: 'PUT', token: web.token })).status).toBe(405);
      expect((await call(web, `/queues/api/queues/${q}/clean/completed`, { method: 'PUT', token: web.token })).status).toBe(405);
      expect((await call(web, `/queues/api/queues/${q}/pause`, { method: 'PUT' })).status).toBe(401);
    },
    SLOW,
  );
});

describe('/metrics', () => {
  it(
    'counts sessions, lanes, queue depths, probe failures, asks, requests, exits and cap refusals',
    async () => {
      const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
      ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: waiting.sessionId });
      const fin = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
      ctx.fleet.writeTask({ id: 'fin', state: 'done', sessionId: fin.sessionId });
      ctx.fleet.addRecord();
      const { s, web } = await up({ roles: ['producers', 'workers', 'web'] });
      await until('fin exited', () => Boolean(ctx.fleet.readTask('fin').exitedAt), 60_000);
      await s.deps.alarms.raise('cap-reached', 'admit-x', { message: 'cap reached: 36/35' });

      let text = '';
      await until('metrics show the exit', async () => {
        text = await (await call(web, '/metrics')).text();
        return metric(text, 'sunset_exits_total') === 1 && metric(text, 'sunset_live_sessions') === 1;
      });
      expect(metric(text, 'sunset_roster_ok')).toBe(1);
      expect(metric(text, 'sunset_records')).toBeGreaterThanOrEqual(1);
      expect(metric(text, 'sunset_sessions{verdict="protected"}')).toBe(1);
      expect(metric(text, 'sunset_rss_bytes{lane="awaiting-human"}')).toBeGreaterThan(0);
      expect(metric(text, 'sunset_lane_sessions{lane="awaiting-human"}')).toBe(1);
      expect(metric(text, 'sunset_asks_total')).toBe(1);
      expect(metric(text, 'sunset_exit_requests_total{source="task"}')).toBe(1);
      expect(metric(text, 'sunset_give_ups_total{source="task"}')).toBe(0);
      expect(metric(text, 'sunset_cap_refusals_total')).toBe(1);
      expect(metric(text, 'sunset_eligible_rss_bytes')).toBe(0); // the one live session left awaits a human
      expect(metric(text, 'sunset_probe_failures{probe="roster"}')).toBe(0);
      expect(metric(text, `sunset_queue_jobs{queue="session-exit@${s.config.host}",state="waiting"}`)).toBe(0);
      expect(text).toContain('process_resident_memory_bytes');

      ctx.fleet.setRosterFault('fail');
      await until('the roster failure shows', async () => {
        text = await (await call(web, '/metrics')).text();
        return metric(text, 'sunset_probe_failures{probe="roster"}') === 1;
      });
      expect(metric(text, 'sunset_roster_ok')).toBe(0);
      ctx.fleet.setRosterFault(null);
    },
    SLOW,
  );
});

/** A request with a Host header of our choosing (fetch would not send one). */
async function rawStatus(web: Web, method: string, path: string, headers: Record<string, string>): Promise<number> {
  const { request } = await import('node:http');
  const u = new URL(web.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
