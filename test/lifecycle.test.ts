// One lifecycle: every part's closer runs once, last started first, within a deadline and an overall budget;
// `sunset up` stops within 10 s of a signal, whatever Redis does, and a second signal cuts nothing short.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../src/lifecycle.js';
import { CLI } from './support/cli.js';
import { useFleet, until } from './support/use-fleet.js';
import { FAST_WINDOWS, uniqueHost, dropHost } from './support/sunset.js';
import { listExits } from '../src/store/ledger.js';

describe('Lifecycle', () => {
  it('closes each part once, in reverse; a part past its deadline is forced and left, the rest still close', async () => {
    const life = new Lifecycle();
    const order: string[] = [];
    life.add('redis', () => void order.push('redis'));
    life.add(
      'worker',
      () => new Promise(() => undefined),
      () => void order.push('worker forced'),
    );
    life.add('web', async () => void order.push('web'));
    const [a, b] = await Promise.all([life.close(50), life.close(50)]);
    expect(order).toEqual(['web', 'worker forced', 'redis']);
    expect(a).toEqual(['worker']);
    expect(b).toBe(a); // once
    expect(() => life.add('late', () => undefined)).toThrow(/after close/);
  });

  it('all parts together within the total: a part whose force hangs too (a worker on an unreachable Redis) is left, and the parts after it are still closed', async () => {
    const life = new Lifecycle();
    const order: string[] = [];
    life.add('socket', () => void order.push('socket')); // closes at once: done even with the budget spent
    life.add(
      'worker 1',
      () => new Promise(() => undefined),
      () => new Promise(() => void order.push('worker 1 forced')),
    );
    life.add(
      'worker 2',
      () => new Promise(() => undefined),
      () => new Promise(() => void order.push('worker 2 forced')),
    );
    const t0 = Date.now();
    const late = await life.close(10_000, 200);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(late).toEqual(['worker 2', 'worker 1']);
    expect(order).toEqual(['worker 2 forced', 'worker 1 forced', 'socket']);
  });
});

describe('sunset up and signals', () => {
  const ctx = useFleet();
  const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  /** The built CLI's `up` on a config file, REDIS_URL unset (the config's redisUrl decides); its stderr and exit. */
  function up(cfg: string) {
    const env = { ...process.env };
    delete env.REDIS_URL;
    const child = spawn(process.execPath, [CLI, 'up', '--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'], env });
    const p = { child, stderr: '', code: undefined as number | null | undefined, endedAt: 0 };
    child.stderr!.on('data', (d) => (p.stderr += d));
    child.on('exit', (c) => {
      p.code = c;
      p.endedAt = Date.now();
    });
    return p;
  }

  it('a first interrupt waits for the exit job that is confirming, within the 10 s bound; a second says it is still stopping and cuts nothing short', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: 3_600_000 });
    ctx.fleet.writeTask({ id: 't', state: 'done', sessionId: a.sessionId });
    const host = uniqueHost();
    const cfg = ctx.fleet.writeConfig({
      host,
      redisUrl: REDIS,
      windows: { ...FAST_WINDOWS, exitConfirm: 60_000 },
      exitRate: { max: 20, per: 100 },
    });
    const child = spawn(process.execPath, [CLI, 'up', '--role', 'producers', '--role', 'workers', '--config', cfg], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, REDIS_URL: REDIS },
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    let code: number | null | undefined;
    child.on('exit', (c) => (code = c));
    try {
      await until('the exit call made and confirming', () => ctx.fleet.requests(a).length > 0, 30_000);
      const t0 = Date.now();
      child.kill('SIGINT'); // a process this test started: sunset itself, not a session
      await until('stopping', () => /up:stopping/.test(stderr), 5000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(code).toBeUndefined(); // still giving the exit job its confirmation
      child.kill('SIGINT');
      await until('still stopping', () => /up:still-stopping/.test(stderr), 5000);
      expect(stderr).toMatch(/sunset is still stopping, at most \d+ s more/);
      await until('ended', () => code !== undefined, 10_000);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(code).toBe(0);
      // the exit worker was left at the bound, its job confirming: the ledger holds the call, not a finish, for
      // the next start's replay to confirm (a replay of a called job only confirms)
      const stopped = stderr
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .find((e) => e.event === 'up:stopped');
      expect(stopped.left).toEqual([`worker session-exit@${host}`]);
      const [rec] = listExits(ctx.fleet.stateDir);
      expect(rec).toMatchObject({ taskId: 't', n: 1 });
      expect(rec.calledAt).toBeTruthy();
      expect(rec.finishedAt).toBeUndefined();
    } finally {
      if (code === undefined) child.kill('SIGKILL');
      await dropHost(REDIS, host);
    }
  });

  /** stderr's JSON lines, as events. */
  const events = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);

  it('no claude CLI and no tasks folder: each said once, however many scans find them; then SIGTERM ends it promptly, exit 0', async () => {
    const host = uniqueHost();
    const gone = join(ctx.fleet.root, 'not-installed', 'claude'); // a path where no CLI is
    const tasksDir = join(ctx.fleet.root, 'no-tasks-here');
    const cfg = ctx.fleet.writeConfig({
      host,
      redisUrl: REDIS,
      web: { port: 0 },
      log: { level: 'debug' },
      windows: FAST_WINDOWS, // an expire scan every 500 ms: each finds the roster failing
      fleet: {
        ...ctx.fleet.config().fleet,
        tasksDir,
        claudeCommand: gone,
        rosterCommand: [gone, 'agents', '--json', '--all'],
        rosterFrom: 'cli',
      },
    });
    const p = up(cfg);
    try {
      // several scans have found the roster failing for it (each said at debug only)
      await until('three expire scans', () => events(p.stderr).filter((e) => e.event === 'expire:roster-failed').length >= 3, 30_000);
      const all = events(p.stderr);
      const missing = all.filter((e) => e.event === 'claude:missing');
      expect(missing).toHaveLength(1);
      expect(missing[0].level).toBe(40);
      expect(missing[0].msg).toContain(`the Claude Code CLI (${JSON.stringify(gone)}) is not installed or not on PATH`);
      expect(missing[0].msg).toMatch(/meanwhile it protects/);
      expect(all.filter((e) => e.event === 'expire:roster-failed' && e.level >= 40)).toEqual([]);
      expect(all.filter((e) => e.event === 'claude:version')).toEqual([]);
      const tasks = all.filter((e) => e.event === 'tasks:missing');
      expect(tasks.map((e) => e.msg)).toEqual([
        `no tasks folder at ${tasksDir} (fleet.tasksDir): no session has a task; finished background jobs still leave by their own chain, the rest after windows.expireIdle idle`,
      ]);
      const t0 = Date.now();
      p.child.kill('SIGTERM');
      await until('ended', () => p.code !== undefined, 10_000);
      expect(p.endedAt - t0).toBeLessThan(5000); // the ordinary case: promptly, not at the 10 s bound
      expect(p.code).toBe(0);
    } finally {
      if (p.code === undefined) p.child.kill('SIGKILL');
      await dropHost(REDIS, host);
    }
  });

  it('SIGINT while it is still starting ends it within the bound, exit 0 (not killed by the signal)', async () => {
    const host = uniqueHost();
    const cfg = ctx.fleet.writeConfig({ host, redisUrl: REDIS, web: { port: 0 } });
    const p = up(cfg);
    try {
      await until('starting', () => /"up:starting"/.test(p.stderr), 20_000);
      const t0 = Date.now();
      p.child.kill('SIGINT');
      await until('ended', () => p.code !== undefined, 10_000);
      expect(p.endedAt - t0).toBeLessThan(10_000); // its start finishes first (bounded), then every part closes
      expect(p.code).toBe(0);
      expect(p.stderr).toMatch(/"up:stopped"/);
    } finally {
      if (p.code === undefined) p.child.kill('SIGKILL');
      await dropHost(REDIS, host);
    }
  });

  it('with its Redis unreachable and its web port taken: it says so and exits 2, rather than run on with no web', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    const cfg = ctx.fleet.writeConfig({ host: uniqueHost(), redisUrl: 'redis://127.0.0.1:1', web: { port } });
    const p = up(cfg);
    try {
      await until('ended', () => p.code !== undefined, 30_000);
      expect(p.code).toBe(2);
      // said as it happened, before the 10 s of closing what started on a Redis that does not answer
      expect(p.stderr).toMatch(/"event":"web:failed".*EADDRINUSE/);
      expect(p.stderr).toContain(`sunset up: the web cannot listen on 127.0.0.1:${port} (EADDRINUSE): choose another web.host or web.port`);
    } finally {
      if (p.code === undefined) p.child.kill('SIGKILL');
      taken.close();
    }
  });

  it('with its Redis unreachable, SIGTERM stops it within 10 s (exit 0): a closer that waits on Redis is bounded', async () => {
    const host = uniqueHost();
    const cfg = ctx.fleet.writeConfig({ host, redisUrl: 'redis://127.0.0.1:1', web: { port: 0 } });
    const p = up(cfg);
    try {
      await until('running', () => /"up:running"/.test(p.stderr), 20_000);
      await until('Redis said unreachable', () => /redis:error/.test(p.stderr), 10_000);
      const t0 = Date.now();
      p.child.kill('SIGTERM');
      await until('ended', () => p.code !== undefined, 10_000);
      expect(p.endedAt - t0).toBeLessThan(10_000);
      expect(p.code).toBe(0);
      expect(p.stderr).toMatch(/"up:stopping"/);
      expect(p.stderr).toMatch(/"up:stopped"/);
    } finally {
      if (p.code === undefined) p.child.kill('SIGKILL');
    }
  });
});
