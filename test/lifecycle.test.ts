// One lifecycle: every part's closer runs once, last started first, within a deadline; a second signal ends
// `sunset up` at once, even while an exit job holds the close.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../src/lifecycle.js';
import { CLI } from './support/cli.js';
import { useFleet, until } from './support/use-fleet.js';
import { FAST_WINDOWS, uniqueHost, dropHost } from './support/sunset.js';

describe('Lifecycle', () => {
  it('closes each part once, in reverse; a part past its deadline is forced and left, the rest still close', async () => {
    const life = new Lifecycle();
    const order: string[] = [];
    life.add('redis', () => void order.push('redis'));
    life.add('worker', () => new Promise(() => undefined), () => void order.push('worker forced'));
    life.add('web', async () => void order.push('web'));
    const [a, b] = await Promise.all([life.close(50), life.close(50)]);
    expect(order).toEqual(['web', 'worker forced', 'redis']);
    expect(a).toEqual(['worker']);
    expect(b).toBe(a); // once
    expect(() => life.add('late', () => undefined)).toThrow(/after close/);
  });
});

describe('sunset up and signals', () => {
  const ctx = useFleet();
  it('a first interrupt waits for the exit job that is confirming; a second ends it within 1 s', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: 3_600_000 });
    ctx.fleet.writeTask({ id: 't', state: 'done', sessionId: a.sessionId });
    const host = uniqueHost();
    const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const cfg = ctx.fleet.writeConfig({ host, redisUrl, windows: { ...FAST_WINDOWS, exitConfirm: 60_000 }, exitRate: { max: 20, per: 100 } });
    const child = spawn(process.execPath, [CLI, 'up', '--role', 'producers', '--role', 'workers', '--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    let code: number | null | undefined;
    child.on('exit', (c) => (code = c));
    try {
      await until('the exit call made and confirming', () => ctx.fleet.requests(a).length > 0, 30_000);
      child.kill('SIGINT'); // a process this test started: sunset itself, not a session
      await until('stopping', () => /up:stopping/.test(stderr), 5000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(code).toBeUndefined(); // still waiting for the exit job
      const t0 = Date.now();
      child.kill('SIGINT');
      await until('ended', () => code !== undefined, 5000);
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(code).toBe(130);
      expect(stderr).toMatch(/up:forced/);
    } finally {
      if (code === undefined) child.kill('SIGKILL');
      await dropHost(redisUrl, host);
    }
  });
});
