// `sunset admit` end to end: the real CLI (node dist/src/cli.js), a real test fleet, the shared Redis
// (a unique host per test, its keys deleted after), commands that leave marker files so a test can
// tell whether they ran.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { agentScript, pidAlive } from '../sim/fleet/fleet.js';
import { CLI } from './support/cli.js';
import { uniqueHost } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { admitKeys } from '../src/cap/admit.js';
import { Alarms } from '../src/store/alarms.js';
import { parseConfig } from '../src/config.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

interface Cli {
  pid: number;
  out: { stdout: string; stderr: string };
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let host: string;
const started: Cli[] = [];

// D1 (useFleet): no agent received a signal, none forwarded by admit
const ctx = useFleet({
  // our own CLI processes, if a failed test left one running (never an agent: destroy() handles those)
  first: () => {
    for (const c of started.splice(0)) if (pidAlive(c.pid)) process.kill(c.pid, 'SIGKILL');
  },
  then: async () => {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    await redis.del(...Object.values(admitKeys(host)));
    await redis.quit();
  },
});
beforeEach(() => {
  host = uniqueHost();
});

function configFile(over: Record<string, unknown> = {}): string {
  const file = join(ctx.fleet.root, `admit-${randomBytes(3).toString('hex')}.json`);
  const { windows, ...rest } = over as { windows?: Record<string, unknown> };
  writeFileSync(file, JSON.stringify(ctx.fleet.config({ host, probeTimeout: '30s', windows: { admitLease: '60s', ...windows }, ...rest })));
  return file;
}

function cli(args: string[]): Cli {
  // detached: its own process group, so a test can signal sunset alone, as a person's kill <pid> would
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('close', (code, signal) => res({ code, signal })));
  const c = { pid: child.pid!, out, done };
  started.push(c);
  return c;
}

async function finish(c: Cli, ms = 60_000) {
  const r = await Promise.race([c.done, new Promise<null>((res) => setTimeout(() => res(null), ms))]);
  if (!r) throw new Error(`sunset did not finish within ${ms} ms; stderr so far:\n${c.out.stderr}`);
  return { ...r, ...c.out };
}

const until = untilWithin(30_000, 50);

/** A command that leaves a marker file, then exits with `code`. */
function marking(name: string, code = 0): { argv: string[]; marker: string } {
  const marker = join(ctx.fleet.root, `ran-${name}`);
  return { argv: [process.execPath, '-e', 'require("fs").writeFileSync(process.argv[1], String(Date.now())); process.exit(Number(process.argv[2]))', marker, String(code)], marker };
}

/** A stand-in agent session started as the admitted command itself (it registers on the roster). */
function agentArgv(): { id: string; argv: string[] } {
  const id = randomBytes(4).toString('hex');
  const cwd = join(ctx.fleet.root, 'work', id);
  mkdirSync(cwd, { recursive: true });
  return { id, argv: [process.execPath, agentScript(), '--registry', ctx.fleet.registryDir, '--id', id, '--session-id', randomUUID(), '--kind', 'background', '--mode', 'idle', '--cwd', cwd] };
}

describe('sunset admit', () => {
  it('under the cap: runs the command and passes its exit code on; records never count', async () => {
    await ctx.fleet.spawnBackground();
    ctx.fleet.addRecords(30);
    const cfg = configFile({ cap: 2 });
    const m = marking('under', 7);
    const r = await finish(cli(['admit', '--config', cfg, '--', ...m.argv]));
    expect(r.code, r.stderr).toBe(7);
    expect(existsSync(m.marker)).toBe(true);
    expect(r.stdout + r.stderr).toBe(''); // quiet when it admits: the terminal is the command's

    const missing = await finish(cli(['admit', '--config', configFile({ cap: 5 }), '--', join(ctx.fleet.root, 'no-such-command')]));
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/cannot start/);
  });

  it('at the cap: one line, exit 75, the command not run, one cap-reached alarm an hour', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'fin', state: 'done', sessionId: a.sessionId, releasedAt: ago(H), exitAskedAt: ago(H / 2) });
    await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.addRecords(5);
    const cfg = configFile({ cap: 2 });
    const m = marking('at');
    const r = await finish(cli(['admit', '--config', cfg, '--', ...m.argv]));
    expect(r.code, r.stderr).toBe(75);
    expect(r.stderr.trim().split('\n')).toEqual(['sunset admit: cap reached: 2/2 — not starting; 1 finished session is being asked to exit']);
    expect(r.stdout).toBe('');
    expect(existsSync(m.marker)).toBe(false);

    const again = await finish(cli(['admit', '--config', configFile({ cap: 1 }), '--', ...m.argv]));
    expect(again.code).toBe(75);
    expect(again.stderr).toMatch(/cap reached: 2\/1 — not starting/);
    const alarms = new Alarms(parseConfig(ctx.fleet.config({ host }), { env: {} })).list();
    expect(alarms).toHaveLength(1); // the same hour: raised once
    expect(alarms[0]).toMatchObject({ kind: 'cap-reached', host, ceiling: 2, counted: 2, leaving: 1 });
  });

  it('a failed roster exits 1 without running the command', async () => {
    const cfg = configFile({ cap: 10 });
    ctx.fleet.setRosterFault('fail');
    const m = marking('roster');
    const r = await finish(cli(['admit', '--config', cfg, '--', ...m.argv]));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/roster failed.*not starting/);
    expect(existsSync(m.marker)).toBe(false);
  });

  it('two (or four) admits at cap − 1 cannot both start: the check and the lease are one step', async () => {
    await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 2 });
    const runs = ['r1', 'r2', 'r3', 'r4'].map((n) => ({ m: marking(n), c: null as Cli | null }));
    for (const x of runs) x.c = cli(['admit', '--config', cfg, '--', ...x.m.argv]);
    const results = await Promise.all(runs.map((x) => finish(x.c!)));
    expect(results.map((r) => r.code).sort(), results.map((r) => r.stderr).join('\n')).toEqual([0, 75, 75, 75]);
    expect(runs.filter((x) => existsSync(x.m.marker))).toHaveLength(1);
    // the lease holds the slot (the command is no session, so the roster never shows it)
    const later = await finish(cli(['admit', '--config', cfg, '--', ...marking('r5').argv]));
    expect(later.stderr).toMatch(/cap reached: 2\/2 — not starting/);
  });

  it('a lease stops counting once the roster shows the session it started: counted once, not twice', async () => {
    await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 3 });
    const s = agentArgv();
    const session = cli(['admit', '--config', cfg, '--', ...s.argv]);
    await until('the admitted session is on the roster', () => typeof ctx.fleet.row(s.id)?.pid === 'number');
    // 2 live rows; the lease is shown by its row, so 1 slot is free (not 0)
    const c = await finish(cli(['cap', '--json', '--config', cfg]));
    expect(JSON.parse(c.stdout)).toMatchObject({ live: 2, admitting: 0, counted: 2, free: 1 });
    const m = marking('third');
    const third = await finish(cli(['admit', '--config', cfg, '--', ...m.argv]));
    expect(third.code, third.stderr).toBe(0);
    // now 2 rows + the third's lease (no session): full
    const full = await finish(cli(['admit', '--config', cfg, '--', ...marking('fourth').argv]));
    expect(full.code, full.stderr).toBe(75);
    expect(full.stderr).toMatch(/cap reached: 3\/3/);
    // the admitted session leaves by its own exit path; admit passes its exit code on
    await ctx.fleet.stop(s.id);
    expect((await finish(session)).code).toBe(0);
    expect(ctx.fleet.ended(s.id)).toMatchObject([{ how: 'stop' }]);
  });

  it('sunset forwards the command no signal: a signal to admit never reaches the session', async () => {
    const cfg = configFile({ cap: 5 });
    const s = agentArgv();
    const c = cli(['admit', '--config', cfg, '--', ...s.argv]);
    await until('the admitted session is on the roster', () => typeof ctx.fleet.row(s.id)?.pid === 'number');
    process.kill(c.pid, 'SIGINT'); // Ctrl-C is the command's business: admit stays, forwards nothing
    await ctx.fleet.stop(s.id); // the session was alive all along to record any forwarded signal (afterEach: none)
    const r = await finish(c);
    expect(r).toMatchObject({ code: 0, signal: null }); // admit outlived the SIGINT and passed the command's code on
    expect(ctx.fleet.ended(s.id)).toMatchObject([{ how: 'stop' }]);
  });

  it('--wait queues the start and starts it once a session exits', async () => {
    const a = await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 1 });
    const m = marking('waited', 5);
    const w = cli(['admit', '--wait', '--timeout', '60s', '--config', cfg, '--', ...m.argv]);
    await until('queued', () => /waiting for a slot: 1\/1, 1st in line/.test(w.out.stderr));
    expect(w.out.stderr).toMatch(/^sunset admit: cap reached: 1\/1 — waiting for a slot; 0 finished sessions are being asked to exit$/m);
    expect(existsSync(m.marker)).toBe(false);
    await ctx.fleet.stop(a); // the session leaves by its own exit path; its slot frees
    const r = await finish(w);
    expect(r.code, r.stderr).toBe(5);
    expect(existsSync(m.marker)).toBe(true);
    expect(r.stderr).toMatch(/a slot freed after .* — starting/);
  });

  it('--wait is first come, first served across processes; --timeout bounds the wait (75)', async () => {
    const a = await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 1 });
    const first = marking('first');
    const second = marking('second');
    const w1 = cli(['admit', '--wait', '--timeout', '60s', '--config', cfg, '--', ...first.argv]);
    await until('w1 queued', () => /1st in line/.test(w1.out.stderr));
    const w2 = cli(['admit', '--wait', '--timeout', '8s', '--config', cfg, '--', ...second.argv]);
    await until('w2 queued behind w1', () => /2nd in line/.test(w2.out.stderr));
    expect(w2.out.stderr).toMatch(/cap reached: 1\/1 \+ 1 queued — waiting for a slot/);
    // a start without --wait does not jump the queue either
    const jumper = await finish(cli(['admit', '--config', cfg, '--', ...marking('jumper').argv]));
    expect(jumper.code, jumper.stderr).toBe(75);
    await ctx.fleet.stop(a);
    const r1 = await finish(w1);
    expect(r1.code, r1.stderr).toBe(0);
    expect(existsSync(first.marker)).toBe(true);
    // w1's lease now holds the one slot until admitLease: w2 waits out its timeout
    const r2 = await finish(w2);
    expect(r2.code, r2.stderr).toBe(75);
    expect(r2.stderr).toMatch(/gave up after 8s: cap reached: 1\/1/);
    expect(existsSync(second.marker)).toBe(false);
  });

  it('usage: no command, or --timeout without --wait, is exit 2', async () => {
    const cfg = configFile();
    expect((await finish(cli(['admit', '--config', cfg]))).code).toBe(2);
    expect((await finish(cli(['admit', '--timeout', '5s', '--config', cfg, '--', 'true']))).code).toBe(2);
    expect((await finish(cli(['admit', '--wait', '--timeout', 'soon', '--config', cfg, '--', 'true']))).code).toBe(2);
  });
});
