// What a new operator's trial found (issue 14), each as they met it: the built CLI spawned, its output read,
// its exit code; the web's alarm acknowledgement and exit outcome over HTTP; the demo's port, keep and cleanup.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { CLI, runCli } from './support/cli.js';
import { FAST_WINDOWS, startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { startWebSunset } from './support/web.js';
import { useFleet } from './support/use-fleet.js';
import { COMMANDS } from '../src/cli.js';
import { Alarms, alarmId } from '../src/store/alarms.js';
import { readAudit } from '../src/store/audit.js';
import { writeExit } from '../src/store/ledger.js';
import { parseConfig } from '../src/config.js';
import { runDemo } from '../src/demo.js';
import { startWeb } from '../src/web/server.js';

const H = 3_600_000;
const SLOW = 120_000;
const sunsetCli = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(args, { timeoutMs: 60_000, env });
const REDIS = () => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The built CLI with its stdout a pipe whose reader has gone before the first line (`sunset … | head -0`). */
function closedPipe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    child.stdout!.destroy(); // the reader closes its end: every write the CLI makes meets EPIPE
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** Keys of a host left in Redis (its queues, schedulers, leases). */
async function keysOf(url: string, pattern: string): Promise<string[]> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  c.on('error', () => undefined);
  await c.connect();
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  c.disconnect();
  return out;
}

const ctx = useFleet({ hookTimeout: SLOW });

describe('output to a closed pipe ends quietly, for every verb', () => {
  it(
    '`sunset <verb> --help | head -0`, `sunset verdict | head`, `sunset exited | head`: exit 0 (or the verb’s own code), no EPIPE, no stack trace',
    async () => {
      const cfg = ctx.fleet.writeConfig({ host: uniqueHost() });
      for (let i = 0; i < 3; i++) await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
      ctx.fleet.addRecords(3);
      for (let i = 0; i < 40; i++)
        writeExit(ctx.fleet.stateDir, {
          jobId: `exit/t${i}/s${i}/1`,
          reason: 'request',
          taskId: `t${i}`,
          sessionId: `s${i}`,
          id: `a${i}`,
          kind: 'background',
          cwd: '/w',
          n: 1,
          outcome: 'exited',
          finishedAt: new Date(Date.now() - i * 60_000).toISOString(),
        });
      const runs: Array<[string, string[], number]> = [
        ['help', ['--help'], 0],
        ['verdict', ['verdict', '--config', cfg], 0],
        ['verdict --json', ['verdict', '--json', '--config', cfg], 0],
        ['exited', ['exited', '--config', cfg], 0],
        ['exited --json', ['exited', '--json', '--config', cfg], 0],
        ['report', ['report', '--config', cfg], 0],
        ['alarms', ['alarms', '--config', cfg], 0],
        ...COMMANDS.map((c): [string, string[], number] => [`${c.name} --help`, [c.name, '--help'], 0]),
      ];
      for (const [what, args, code] of runs) {
        const r = await closedPipe(args);
        expect({ what, code: r.code, signal: r.signal, stderr: r.stderr.replace(/^sunset: .*tested with.*\n/m, '') }).toEqual({
          what,
          code,
          signal: null,
          stderr: '',
        });
      }
    },
    SLOW,
  );
});

describe('the rest the trial found', () => {
  it('an unknown verb gets "did you mean" the nearest verb; one near none gets none', async () => {
    const r = await sunsetCli(['verdcit']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^sunset: unknown command "verdcit" — did you mean "verdict"\?/);
    expect((await sunsetCli(['alarm'])).stderr).toMatch(/did you mean "alarms"\?/);
    expect((await sunsetCli(['serivce'])).stderr).toMatch(/did you mean "service"\?/);
    const far = await sunsetCli(['xyzzy']);
    expect(far.code).toBe(2);
    expect(far.stderr).toMatch(/^sunset: unknown command "xyzzy"\n/);
  });

  it('a failed roster: cap says it once; report says it and what is known, never a report of zeros; expire --dry-run a plain sentence', async () => {
    const cfg = ctx.fleet.writeConfig({ host: uniqueHost() });
    ctx.fleet.writeTask({
      id: 'lane',
      state: 'awaiting-human',
      sessionId: 'sid-x',
      stateChangedAt: new Date(Date.now() - 30 * H).toISOString(),
    });
    ctx.fleet.writeTask({ id: 'd', state: 'done', sessionId: 'sid-y' });
    ctx.fleet.setRosterFault('fail');
    const once = (text: string, what: RegExp) => (text.match(new RegExp(what.source, 'g')) ?? []).length;

    const cap = await sunsetCli(['cap', '--config', cfg]);
    expect(cap.code).toBe(1);
    expect(cap.stderr).toMatch(/^sunset cap: the roster probe failed, so the count is unknown: /);
    expect(once(cap.stderr, /roster command/)).toBe(1);

    const report = await sunsetCli(['report', '--config', cfg]);
    expect(report.code).toBe(1);
    expect(report.stdout).toMatch(/the roster probe FAILED: roster command/);
    expect(report.stdout).toMatch(/are unknown \(not zero\)/);
    expect(report.stdout).toMatch(/tasks: 2 — (1 awaiting-human, 1 done|1 done, 1 awaiting-human)/);
    expect(report.stdout).toMatch(/lanes awaiting a human \(from their task files\): 1[\s\S]*lane\s+waiting 1d6h/);
    expect(report.stdout).not.toMatch(/\b0 B\b/);
    expect(report.stdout).not.toMatch(/memory held by live sessions|eligible to leave now/);
    expect(once(report.stdout + report.stderr, /roster command/)).toBe(1);

    const expire = await sunsetCli(['expire', '--dry-run', '--config', cfg]);
    expect(expire.code).toBe(1);
    expect(expire.stderr).toMatch(/^sunset expire: roster failed, nothing expires: roster command/);
    expect(expire.stderr).not.toMatch(/^\{/m); // no raw JSON log line
    expect(once(expire.stderr, /roster command/)).toBe(1);
  });

  it(
    'sunset exit --wait says what became of it: exited (0), or still running after exitConfirm (1), in words',
    async () => {
      const host = uniqueHost();
      const cfg = ctx.fleet.writeConfig({ host, windows: FAST_WINDOWS, exitRate: { max: 20, per: 100 } });
      const stubborn = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: 49 * H });
      const stubborn2 = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: 49 * H });
      const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H });
      ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { host }), { roles: ['workers'] });

      const ok = await sunsetCli(['exit', idle.id, '--reason', 'done with it', '--wait', '--config', cfg]);
      expect(ok.code).toBe(0);
      expect(ok.stdout.trim()).toBe(
        `session ${idle.id} exited: it left by its own exit path (claude stop); its conversation can be resumed (sunset exited)`,
      );

      const still = await sunsetCli(['exit', stubborn.id, '--reason', 'needs the memory', '--wait', '--config', cfg]);
      expect(still.code).toBe(1);
      expect(still.stdout).toMatch(
        new RegExp(
          `^session ${stubborn.id} is still running: it was asked to leave \\(claude stop\\) and had not left when sunset stopped waiting \\(3s, windows\\.exitConfirm\\)`,
        ),
      );
      expect(still.stdout).toMatch(/sunset does not force it: a person decides/);
      const json = await sunsetCli(['exit', stubborn2.id, '--reason', 'needs the memory', '--wait', '--json', '--config', cfg]);
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({
        status: 'finished',
        id: stubborn2.id,
        outcome: 'still-running',
        words: expect.stringMatching(/is still running/),
      });
      expect(ctx.fleet.isAlive(stubborn) && ctx.fleet.isAlive(stubborn2)).toBe(true);
    },
    SLOW,
  );
});

describe('the web: alarms a person closes, and the outcome of an exit it requested', () => {
  it(
    'POST /api/alarms/:id/ack: 401 without the token, 403 from a foreign origin, 404 unknown, 200, then 409; GET /api/exit/<jobId> reads the ledger',
    async () => {
      const s = await startWebSunset(ctx.fleet, ['web']);
      ctx.sunset = s;
      const web = s.web;
      await s.deps.alarms.raise('session-will-not-exit', 'task/t1', {
        taskId: 't1',
        sessionId: 'sid-1',
        message: 'session sid-1 will not exit',
      });
      const id = alarmId('session-will-not-exit', 'task/t1');
      const ack = (alarm: string, body: object, headers: Record<string, string> = { authorization: `Bearer ${web.token}` }) =>
        fetch(new URL(`/api/alarms/${alarm}/ack`, web.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        });

      const listed = (await (await fetch(new URL('/api/alarms', web.url))).json()) as any;
      expect(listed).toMatchObject({ open: 1, alarms: [{ id, kind: 'session-will-not-exit', ack: null }] });
      expect((await ack(id, { reason: 'x' }, {})).status).toBe(401);
      expect((await ack(id, { reason: 'x' }, { authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
      expect((await ack(id, { reason: 'x' }, { authorization: `Bearer ${web.token}`, origin: 'http://evil.example' })).status).toBe(403);
      expect((await ack('deadbeef', { reason: 'x' })).status).toBe(404);
      expect((await ack(id, { reason: 42 })).status).toBe(400);
      const ok = await ack(id, { reason: 'stopped by hand' });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({
        status: 'acknowledged',
        alarm: { id, ack: { by: expect.stringMatching(/^web /), why: 'stopped by hand' } },
      });
      const again = await ack(id, { reason: 'again' });
      expect(again.status).toBe(409);
      expect(await again.json()).toMatchObject({ status: 'already-acknowledged', alarm: { ack: { why: 'stopped by hand' } } });
      expect(((await (await fetch(new URL('/api/alarms', web.url))).json()) as any).open).toBe(0);
      expect(readAudit(s.config.stateDir).filter((e) => e.event === 'alarm:acknowledged')).toMatchObject([
        { alarmId: id, why: 'stopped by hand', by: expect.stringMatching(/^web /) },
      ]);
      expect(new Alarms(s.config).list()).toHaveLength(1); // still in the log

      // an exit job's outcome, from the ledger the exit worker writes
      writeExit(s.config.stateDir, {
        jobId: 'person/sid-9/1',
        reason: 'person',
        sessionId: 'sid-9',
        id: 'a9',
        label: 'a9',
        kind: 'background',
        calledAt: new Date().toISOString(),
        finishedAt: new Date().toISOString(),
        method: 'claude-stop',
        outcome: 'still-running',
      });
      const out = await fetch(new URL('/api/exit/person/sid-9/1', web.url));
      expect(out.status).toBe(200);
      expect(await out.json()).toMatchObject({
        status: 'finished',
        jobId: 'person/sid-9/1',
        outcome: 'still-running',
        words: expect.stringMatching(/^session a9 is still running: it was asked to leave \(claude stop\)/),
        record: { sessionId: 'sid-9' },
      });
      expect((await fetch(new URL('/api/exit/person/nope/1', web.url))).status).toBe(404);
    },
    SLOW,
  );
});

describe('sunset demo', () => {
  const holdPort = () =>
    new Promise<{ server: Server; port: number }>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
    });

  it('--port on a busy port fails at once, before it has built, started or exited anything (exit 2, one sentence)', async () => {
    const { server, port } = await holdPort();
    try {
      const before = await keysOf(REDIS(), '{sunset}:*@demo-*');
      const t0 = Date.now();
      const r = await sunsetCli(['demo', '--port', String(port)]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(
        `sunset demo: port ${port} on 127.0.0.1 is not free (EADDRINUSE): choose another --port, or leave it out for a free one. Nothing was started.`,
      );
      expect(r.stdout).not.toMatch(/simulated fleet in/);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(await keysOf(REDIS(), '{sunset}:*@demo-*')).toEqual(before);
      expect((await sunsetCli(['demo', '--port', 'http'])).code).toBe(2);
    } finally {
      server.close();
    }
  });

  it(
    'an error part-way (the web fails after the pipeline started): said plainly, its sessions and every key it put in Redis are gone',
    async () => {
      const lines: string[] = [];
      const code = await runDemo({
        env: { REDIS_URL: REDIS() },
        out: (s) => lines.push(s),
        keep: false,
        maxMs: 5000,
        startWeb: async () => {
          await new Promise((r) => setTimeout(r, 300)); // the schedulers are in Redis by now
          throw new Error('injected: the web could not start');
        },
      });
      const text = lines.join('\n');
      expect(code).toBe(1);
      expect(text).toMatch(/sunset demo: stopped part-way: injected: the web could not start\. Cleaning up/);
      const host = /queues session-exit@(demo-[a-z0-9]+)/.exec(text)![1];
      const root = /a simulated fleet in (\S+)/.exec(text)![1];
      expect(await keysOf(REDIS(), `{sunset}:*@${host}*`)).toEqual([]);
      expect(existsSync(root)).toBe(false);
      // nothing it scheduled fires into the fleet it removed (the tasks it would close 1.5 s in)
      await new Promise((r) => setTimeout(r, 2500));
    },
    SLOW,
  );

  it('--keep writes the config of the fleet it keeps and prints the one command that points the CLI at it; the plain demo says its pages close with it', async () => {
    let release!: () => void;
    const keepUntil = new Promise<void>((r) => (release = r));
    const lines: string[] = [];
    const kept = runDemo({ env: { REDIS_URL: REDIS() }, out: (s) => lines.push(s), keep: true, keepUntil, maxMs: 3000, startWeb });
    const deadline = Date.now() + 90_000;
    while (!lines.some((l) => / verdict --config /.test(l)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const text = lines.join('\n');
    expect(text).toMatch(/\(they stay open while the demo is kept: until Ctrl-C\)/);
    const cmd = lines.find((l) => / verdict --config /.test(l))!.trim();
    expect(cmd).toMatch(/^(node \S+\/cli\.js|npx tsx \S+\/cli\.ts) verdict --config \S+sunset\.config\.json$/);
    const file = cmd.split(' --config ')[1];
    expect(text).toContain(`Its config is ${file}`);
    const config = parseConfig(JSON.parse(readFileSync(file, 'utf8')), { env: {} });
    expect(text).toContain(`host ${config.host}`);
    // the printed command, run as a person would from another terminal, judges the kept fleet
    const v = await sunsetCli(['verdict', '--json', '--config', file]);
    expect(v.code).toBe(0);
    const j = JSON.parse(v.stdout);
    expect(j.host).toBe(config.host);
    expect(j.sessions.length).toBeGreaterThan(5);
    release();
    expect(await kept).toBe(0);
    expect(existsSync(file)).toBe(false);
    expect(await keysOf(REDIS(), `{sunset}:*@${config.host}*`)).toEqual([]);

    const plain: string[] = [];
    expect(await runDemo({ env: { REDIS_URL: REDIS() }, out: (s) => plain.push(s), keep: false, maxMs: 2000, startWeb })).toBe(0);
    const p = plain.join('\n');
    expect(p).toMatch(
      /fleet page: http:\/\/127\.0\.0\.1:\d+\/[\s\S]*\(these pages close with the demo, in about a minute; `sunset demo --keep` keeps them open\)/,
    );
    expect(p).toMatch(/The demo has ended: its pages, its queues and its fleet are gone/);
    // who is who, before anything happens: the task names say the terminal state each closes in
    expect(p).toMatch(/finished #1–#3 +background, idle 1h; tasks demo-done, demo-abandoned, demo-parked close as done, abandoned and/);
    expect(p.indexOf('The fleet: 12 sessions')).toBeLessThan(p.indexOf('The demo has ended'));
    expect(p).toMatch(/ codex {16}a Codex CLI session in a tmux pane \(task demo-codex;/);
  }, 200_000);
});
