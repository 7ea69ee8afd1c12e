// `sunset up` on a box where no Redis is named and nothing answers at the default address (issue 27): it runs a
// redis-server of its own — a unix socket and its AOF in stateDir —, restarts it when it dies, stops it when it
// stops; the other verbs find it there, and say plainly when no `up` runs it. The machine's own Redis listens
// at 6379, so SUNSET_DEFAULT_REDIS_URL moves the default address to a free port where nothing listens: the
// config names no Redis. Every `sunset up` and verb is the built CLI, spawned (npm run build first).
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SunsetProc, until, H } from '../chaos/harness.js';
import { QUEUE_PREFIX, queueName } from '../src/config.js';
import { chooseRedis } from '../src/redis/target.js';
import { privateConf, privatePaths, socketUrl } from '../src/redis/private-server.js';
import { TestFleet } from '../sim/fleet/fleet.js';
import { runCli } from './support/cli.js';
import { freePort } from './support/redis.js';
import { FAST_WINDOWS, uniqueHost } from './support/sunset.js';
import { tempDir } from './support/temp-dir.js';

let fleet: TestFleet;
let procs: SunsetProc[] = [];
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  fleet = await TestFleet.create();
  // the config names no Redis ($REDIS_URL empty is none), and nothing listens at the default address
  env = { REDIS_URL: '', SUNSET_CONFIG: '', SUNSET_DEFAULT_REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
});

afterEach(async () => {
  for (const p of procs) await p.stop(20_000);
  procs = [];
  // a server a test left running (a crashed `up`'s) goes with its socket; SHUTDOWN, as sunset stops its own
  await redisCall(privatePaths(fleet.stateDir).socket, 'SHUTDOWN').catch(() => undefined);
  const signals = fleet.signals();
  await fleet.destroy();
  expect(signals).toEqual([]); // D1: nothing signalled an agent
});

const sunset = (args: string[], more: NodeJS.ProcessEnv = {}) => runCli(args, { env: { ...env, ...more }, timeoutMs: 60_000 });

function up(cfg: string): SunsetProc {
  const p = new SunsetProc(cfg, { cwd: fleet.root, env });
  procs.push(p);
  return p;
}

async function running(p: SunsetProc): Promise<void> {
  await until('sunset up running', () => p.count('up:running') > 0 || !p.alive, 60_000);
  expect(p.alive, p.stderr.join('\n') + JSON.stringify(p.events.slice(-5))).toBe(true);
}

async function redisCall(socket: string, ...args: string[]): Promise<unknown> {
  const c = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: 2000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.call(args[0], ...args.slice(1));
  } finally {
    c.disconnect();
  }
}

const serverPid = async (socket: string) => Number(/process_id:(\d+)/.exec(String(await redisCall(socket, 'INFO', 'server')))?.[1]);
const alivePid = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
const aofText = (dir: string) => {
  const d = join(dir, 'appendonlydir');
  return existsSync(d)
    ? readdirSync(d)
        .map((f) => readFileSync(join(d, f), 'latin1'))
        .join('')
    : '';
};

function config(o: Record<string, unknown> = {}): string {
  // the ask waits an hour after release: the schedule holds a delayed job for as long as the test runs
  return fleet.writeConfig({
    host: uniqueHost(),
    probeTimeout: 10_000,
    exitRate: { max: 20, per: 100 },
    windows: { ...FAST_WINDOWS, grace: '1h' },
    ...o,
  });
}

describe('which Redis (pure)', () => {
  it('a named Redis as named; else the private one when it answers, the default address when it does, else up starts one', () => {
    const f = (privateAnswers: boolean, defaultAnswers: boolean) => ({ privateAnswers, defaultAnswers });
    expect(chooseRedis('never', f(true, true), true)).toBe('named');
    expect(chooseRedis('auto', f(true, true), false)).toBe('private');
    expect(chooseRedis('auto', f(false, true), true)).toBe('default');
    expect(chooseRedis('auto', f(false, false), true)).toBe('private');
    expect(chooseRedis('auto', f(false, false), false)).toBe('none');
    expect(chooseRedis('always', f(false, true), true)).toBe('private');
    expect(chooseRedis('always', f(false, true), false)).toBe('none');
  });
  it("the server's config file: a socket only, AOF on, paths quoted", () => {
    const p = privatePaths('/srv/my "state"');
    const conf = privateConf(p);
    expect(conf).toMatch(/^port 0$/m);
    expect(conf).toMatch(/^appendonly yes$/m);
    expect(conf).toContain('unixsocket "/srv/my \\"state\\"/redis/redis.sock"');
    expect(socketUrl('/tmp/a b/redis.sock')).toBe('unix:///tmp/a%20b/redis.sock');
  });
});

describe('sunset up on a box with no Redis', () => {
  it('runs its own on a socket in stateDir; the verbs use it; it is restarted when it dies; the last up stops it; the schedule survives', async () => {
    const cfg = config();
    const p = privatePaths(fleet.stateDir);
    const host = JSON.parse(readFileSync(cfg, 'utf8')).host as string;

    // no `up`: a verb that needs Redis says so in one line
    const early = await sunset(['exit', '--job', 'nope', '--config', cfg]);
    expect(early.code).toBe(1);
    expect(early.stderr.trim()).toMatch(/^sunset exit: sunset up is not running: no Redis is named .* start `sunset up` first$/);
    expect(early.stderr.trim().split('\n')).toHaveLength(1);
    // a refusal needs no Redis, as ever; an exit it would queue says why it cannot
    const busy = await fleet.spawnBackground({ mode: 'busy' });
    expect((await sunset(['exit', busy.id, '--config', cfg])).code).toBe(3);
    const unqueued = await sunset(['exit', busy.id, '--override-protection', '--reason', 'x', '--config', cfg]);
    expect(unqueued.code).toBe(1);
    expect(unqueued.stderr.trim()).toMatch(/^sunset exit: not queuing: sunset up is not running: .* start `sunset up` first$/);
    const capEarly = await sunset(['cap', '--json', '--config', cfg]);
    expect(capEarly.code).toBe(0);
    expect(JSON.parse(capEarly.stdout).redisError).toMatch(/sunset up is not running/);

    const a = up(cfg);
    await running(a);
    const started = a.events.find((e) => e.event === 'redis:private-started')!;
    expect(started).toMatchObject({ socket: p.socket, dir: p.dir, restart: 0 });
    expect(a.events.find((e) => e.event === 'up:starting')?.redis).toBe(socketUrl(p.socket));
    // its own config file; a socket and no TCP port; the AOF in stateDir
    expect(readFileSync(p.conf, 'utf8')).toContain(`unixsocket "${p.socket}"`);
    expect(String(await redisCall(p.socket, 'INFO', 'server'))).toMatch(/tcp_port:0\r?\n/);
    expect(await redisCall(p.socket, 'CONFIG', 'GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await redisCall(p.socket, 'CONFIG', 'GET', 'dir')).toEqual(['dir', p.dir]);
    const pid1 = await serverPid(p.socket);
    expect(pid1).toBe(started.pid);

    // the schedule: a finished task's session is asked an hour after release (a delayed job)
    const done = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-done', state: 'done', sessionId: done.sessionId });
    const asks = new Queue(queueName('exit-ask', host), {
      connection: { path: p.socket, maxRetriesPerRequest: null },
      prefix: QUEUE_PREFIX,
    });
    asks.on('error', () => undefined); // the server is killed below
    try {
      await until('the ask is scheduled', async () => (await asks.getDelayed()).length === 1, 60_000, 100);
      const [ask] = await asks.getDelayed();
      const due = ask.timestamp + (ask.delay ?? 0);

      // the verdict beside it: the same next step, at the time the delayed job waits for
      const v = await sunset(['verdict', '--json', '--config', cfg]);
      expect(v.code).toBe(0);
      const row = JSON.parse(v.stdout).sessions.find((s: any) => s.sessionId === done.sessionId);
      expect(row.due?.step ?? row.next?.step, JSON.stringify(row)).toBe('ask');
      expect(Math.abs(Date.parse(row.due?.at ?? row.next?.at) - due)).toBeLessThan(5_000);
      // a person's exit request goes through the private Redis to this `up`, which carries it out
      const ex = await sunset([
        'exit',
        busy.id,
        '--override-protection',
        '--reason',
        'needs the memory',
        '--wait',
        '--json',
        '--config',
        cfg,
      ]);
      expect(ex.code, ex.stderr).toBe(0);
      expect(JSON.parse(ex.stdout)).toMatchObject({ status: 'finished', outcome: 'exited' });
      const cap = await sunset(['cap', '--json', '--config', cfg]);
      expect(cap.code).toBe(0);
      expect(JSON.parse(cap.stdout)).toMatchObject({ admitting: 0, queued: 0 });
      expect(JSON.parse(cap.stdout).redisError).toBeUndefined();
      const exited = await sunset(['exited', '--json', '--config', cfg]);
      expect(exited.code).toBe(0);
      expect(exited.stdout).toContain(busy.sessionId);
      expect((await sunset(['alarms', '--config', cfg])).code).toBe(0);

      // the server dies (the test kills the redis-server its `up` started): up starts it again, the schedule intact
      await until('the ask is in the AOF', () => aofText(p.dir).includes(String(ask.id)), 10_000);
      process.kill(pid1, 'SIGKILL');
      await until(
        'the private Redis restarted',
        () => a.events.some((e) => e.event === 'redis:private-started' && e.restart === 1),
        60_000,
      );
      expect(a.events.some((e) => e.event === 'redis:private-lost')).toBe(true);
      const pid2 = await serverPid(p.socket);
      expect(pid2).not.toBe(pid1);
      expect(a.alive).toBe(true);
      expect((await asks.getJob(String(ask.id)))?.timestamp).toBe(ask.timestamp);

      // a second `up` on the same stateDir joins it: one server on one socket
      const b = up(cfg);
      await running(b);
      expect(b.count('redis:private-joined')).toBe(1);
      expect(b.count('redis:private-started')).toBe(0);
      expect(await serverPid(p.socket)).toBe(pid2);
      // the first stops: the second still uses the server
      expect((await a.stop()).code).toBe(0);
      expect(a.count('redis:private-left')).toBe(1);
      expect(await serverPid(p.socket)).toBe(pid2);
      await asks.close();
      // the last one stops it (SHUTDOWN): socket and process gone
      expect((await b.stop()).code).toBe(0);
      expect(b.count('redis:private-stopped')).toBe(1);
      expect(existsSync(p.socket)).toBe(false);
      expect(alivePid(pid2)).toBe(false);

      const late = await sunset(['exit', '--job', String(ask.id), '--config', cfg]);
      expect(late.code).toBe(1);
      expect(late.stderr).toMatch(/sunset up is not running/);

      // started again: the schedule is the one kept in its AOF (the same job, made at the same time)
      const c = up(cfg);
      await running(c);
      expect(c.count('redis:private-started')).toBe(1);
      const again = new Queue(queueName('exit-ask', host), { connection: { path: p.socket }, prefix: QUEUE_PREFIX });
      try {
        const kept = await again.getJob(String(ask.id));
        expect(kept?.timestamp).toBe(ask.timestamp);
        expect(await kept?.getState()).toBe('delayed');
      } finally {
        await again.close();
      }
      expect((await c.stop()).code).toBe(0);
      expect(existsSync(p.socket)).toBe(false);
    } finally {
      await asks.close();
    }
  }, 240_000);

  it('after a crash: the orphaned server is used, and a stale socket is cleared', async () => {
    const cfg = config();
    const p = privatePaths(fleet.stateDir);
    const a = up(cfg);
    await running(a);
    const pid = await serverPid(p.socket);
    await a.kill9(); // the harness's own process; its redis-server lives on in a session of its own
    expect(await serverPid(p.socket)).toBe(pid);
    const b = up(cfg);
    await running(b);
    expect(b.count('redis:private-joined')).toBe(1);
    await b.kill9();
    process.kill(pid, 'SIGKILL'); // the server sunset started: now its socket file is left, with nothing behind it
    await until('the server gone', () => !alivePid(pid), 10_000);
    expect(existsSync(p.socket)).toBe(true);
    const c = up(cfg);
    await running(c);
    expect(c.count('redis:private-started')).toBe(1);
    const pid3 = await serverPid(p.socket);
    expect(pid3).not.toBe(pid);
    // interrupted twice (the second stops it at once if its close has not ended by then; here its close is
    // quick, so either way may win): its server is shut down all the same
    c.child.kill('SIGINT');
    c.child.kill('SIGINT');
    await c.exited;
    await until('the server stopped', () => !alivePid(pid3), 10_000);
    expect(existsSync(p.socket)).toBe(false);
  }, 120_000);

  it('two `up` started at once on one stateDir: one server, which the last to stop stops', async () => {
    const cfg = config();
    const p = privatePaths(fleet.stateDir);
    const [a, b] = [up(cfg), up(cfg)];
    await Promise.all([running(a), running(b)]);
    const count = (event: string) => a.count(event) + b.count(event);
    expect([count('redis:private-started'), count('redis:private-joined')]).toEqual([1, 1]);
    const starter = a.count('redis:private-started') ? a : b;
    const pid = starter.events.find((e) => e.event === 'redis:private-started')!.pid;
    expect(await serverPid(p.socket)).toBe(pid);
    expect((await starter.stop()).code).toBe(0);
    expect(await serverPid(p.socket)).toBe(pid); // the other still uses it
    expect((await (starter === a ? b : a).stop()).code).toBe(0);
    expect(existsSync(p.socket)).toBe(false);
    expect(alivePid(pid)).toBe(false);
  }, 120_000);

  it('a Redis the user names is used as named: the private one never starts', async () => {
    const named = process.env.REDIS_URL!; // the run's Redis (test/support/global-setup.ts)
    const p = privatePaths(fleet.stateDir);
    // by $REDIS_URL
    const a = new SunsetProc(config(), { cwd: fleet.root, env: { ...env, REDIS_URL: named } });
    procs.push(a);
    await running(a);
    expect(a.events.find((e) => e.event === 'up:starting')?.redis).toBe(named);
    expect(a.events.filter((e) => String(e.event).startsWith('redis:private'))).toEqual([]);
    expect((await a.stop()).code).toBe(0);
    // by redisUrl in the file: a verb uses it, and no `up` is needed for it to answer
    const cfg = config({ redisUrl: named });
    const cap = await sunset(['cap', '--json', '--config', cfg]);
    expect(cap.code).toBe(0);
    expect(JSON.parse(cap.stdout).redisError).toBeUndefined();
    expect(existsSync(p.dir)).toBe(false);
  }, 120_000);

  it('no redis-server on the box: one line naming the package, exit 1', async () => {
    const cfg = config();
    const bin = tempDir('sunset-nobin-'); // a PATH with no redis-server on it (node runs by its full path)
    mkdirSync(bin, { recursive: true });
    const r = await sunset(['up', '--config', cfg], { PATH: bin });
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('{'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^sunset up: no Redis is named and nothing answers at redis:\/\/127\.0\.0\.1:\d+, and redis-server, .* is not on PATH: install it with `(sudo )?apt-get install -y redis-server` \(or your system's package of the same name\), or name a Redis in redisUrl$/,
    );
    expect(existsSync(privatePaths(fleet.stateDir).socket)).toBe(false);
  }, 60_000);
});
