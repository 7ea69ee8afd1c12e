// `sunset admit` end to end: the real CLI (node dist/src/cli.js), a real test fleet, the shared Redis
// (a unique host per test, its keys deleted after), commands that leave marker files so a test can
// tell whether they ran.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { agentScript, pidAlive } from '../sim/fleet/fleet.js';
import { CLI } from './support/cli.js';
import { startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { admitKeys } from '../src/cap/admit.js';
import { noUpLine } from '../src/cap/up-running.js';
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
  after: async () => {
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
  // no memory floor unless a test sets one: the count's tests must not depend on this box's free memory
  writeFileSync(
    file,
    JSON.stringify(
      ctx.fleet.config({ host, probeTimeout: '30s', memoryFloorMB: null, windows: { admitLease: '60s', ...windows }, ...rest }),
    ),
  );
  return file;
}

function cli(args: string[]): Cli {
  // detached: its own process group, so a test can signal sunset alone, as a person's kill <pid> would
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('close', (code, signal) => res({ code, signal })),
  );
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
  return {
    argv: [
      process.execPath,
      '-e',
      'require("fs").writeFileSync(process.argv[1], String(Date.now())); process.exit(Number(process.argv[2]))',
      marker,
      String(code),
    ],
    marker,
  };
}

/** A stand-in agent session started as the admitted command itself (it registers on the roster). */
function agentArgv(): { id: string; argv: string[] } {
  const id = randomBytes(4).toString('hex');
  const cwd = join(ctx.fleet.root, 'work', id);
  mkdirSync(cwd, { recursive: true });
  return {
    id,
    argv: [
      process.execPath,
      agentScript(),
      '--registry',
      ctx.fleet.registryDir,
      '--id',
      id,
      '--session-id',
      randomUUID(),
      '--kind',
      'background',
      '--mode',
      'idle',
      '--cwd',
      cwd,
    ],
  };
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
    expect(r.stderr.trim().split('\n')).toEqual([
      'sunset admit: cap reached: 2/2 — not starting; 1 finished session is being asked to exit',
    ]);
    expect(r.stdout).toBe('');
    expect(existsSync(m.marker)).toBe(false);

    const again = await finish(cli(['admit', '--config', configFile({ cap: 1 }), '--', ...m.argv]));
    expect(again.code).toBe(75);
    expect(again.stderr).toMatch(/cap reached: 2\/1 — not starting/);
    const alarms = new Alarms(parseConfig(ctx.fleet.config({ host }), { env: {} })).list();
    expect(alarms).toHaveLength(1); // the same hour: raised once
    expect(alarms[0]).toMatchObject({ kind: 'cap-reached', host, ceiling: 2, counted: 2, leaving: 1 });
    // the host is the alarm's own field (a channel's title says it): not said again in its words
    expect(alarms[0].message).toMatch(/^cap reached: 2\/2 — a start was refused; /);
    expect(alarms[0].message).not.toContain(host);
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
    expect(w.out.stderr).toMatch(/^sunset admit: sunset up is not running/m); // none runs here: said, the wait goes on
    expect(existsSync(m.marker)).toBe(false);
    await ctx.fleet.stop(a); // the session leaves by its own exit path; its slot frees
    const r = await finish(w);
    expect(r.code, r.stderr).toBe(5);
    expect(existsSync(m.marker)).toBe(true);
    expect(r.stderr).toMatch(/a slot freed after .* — starting/);
  });

  it('--wait with no sunset up running says so plainly (nothing frees a slot by itself); with up running, it does not', async () => {
    await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 1 });
    const noUp = await finish(cli(['admit', '--wait', '--timeout', '2s', '--config', cfg, '--', ...marking('no-up').argv]));
    expect(noUp.code, noUp.stderr).toBe(75); // its exit codes as documented: the wait timed out
    const said = new RegExp(
      `^sunset admit: sunset up is not running \\(no worker on session-exit@${host}\\): nothing asks finished sessions to leave, so no slot frees by itself`,
      'm',
    );
    expect(noUp.stderr).toMatch(said);
    expect(noUp.stderr.match(new RegExp(said.source, 'gm'))).toHaveLength(1); // once, not at every progress line
    // a `sunset up` running this host's workers: admit waits on it without that line
    const up = await startTestSunset(testConfig(ctx.fleet, { host, cap: 1 }), { roles: ['workers'] });
    try {
      const withUp = await finish(cli(['admit', '--wait', '--timeout', '2s', '--config', cfg, '--', ...marking('with-up').argv]));
      expect(withUp.code, withUp.stderr).toBe(75);
      expect(withUp.stderr).toMatch(/waiting for a slot: 1\/1, 1st in line/);
      expect(withUp.stderr).not.toMatch(/sunset up is not running/);
    } finally {
      await up.close();
    }
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

  it('--wait: Ctrl-C while waiting leaves the queue and ends admit (130), the command never started; SIGTERM during a hung roster look ends it within 10 s (143)', async () => {
    await ctx.fleet.spawnBackground();
    const cfg = configFile({ cap: 1 }); // probeTimeout 30 s: a hung roster holds a look that long
    const keys = admitKeys(host);
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const queued = async () => [await redis.zcard(keys.queue), await redis.zcard(keys.beats)];
    try {
      const m = marking('never');
      const w = cli(['admit', '--wait', '--config', cfg, '--', ...m.argv]);
      await until('queued', () => /waiting for a slot: 1\/1, 1st in line/.test(w.out.stderr));
      expect(await queued()).toEqual([1, 1]);
      let t0 = Date.now();
      process.kill(-w.pid, 'SIGINT'); // the terminal's Ctrl-C: to admit's whole process group
      const r = await finish(w, 15_000);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r).toMatchObject({ code: 130, signal: null });
      expect(r.stderr).toMatch(/^sunset admit: interrupted: leaving the queue; ".+" was not started$/m);
      expect(await queued()).toEqual([0, 0]);
      expect(existsSync(m.marker)).toBe(false);

      // at the head of the line, the look's roster call hangs: a SIGTERM does not wait for it
      const w2 = cli(['admit', '--wait', '--config', cfg, '--', ...m.argv]);
      await until('queued again', () => /1st in line/.test(w2.out.stderr));
      const calls = () =>
        existsSync(join(ctx.fleet.registryDir, 'roster-calls.log'))
          ? readFileSync(join(ctx.fleet.registryDir, 'roster-calls.log'), 'utf8').split('\n').length
          : 0;
      ctx.fleet.setRosterFault('hang');
      const before = calls();
      await until('a roster call made while it hangs', () => calls() > before);
      t0 = Date.now();
      process.kill(w2.pid, 'SIGTERM'); // to admit alone (as `kill PID`): the hung roster call is not signalled
      const r2 = await finish(w2, 40_000);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r2).toMatchObject({ code: 143, signal: null });
      expect(await queued()).toEqual([0, 0]);
      expect(existsSync(m.marker)).toBe(false);
    } finally {
      ctx.fleet.setRosterFault(null);
      await redis.quit();
    }
  });

  it('usage: no command, or --timeout without --wait, is exit 2', async () => {
    const cfg = configFile();
    expect((await finish(cli(['admit', '--config', cfg]))).code).toBe(2);
    expect((await finish(cli(['admit', '--timeout', '5s', '--config', cfg, '--', 'true']))).code).toBe(2);
    expect((await finish(cli(['admit', '--wait', '--timeout', 'soon', '--config', cfg, '--', 'true']))).code).toBe(2);
  });
});

describe('sunset admit: admission by memory (a meminfo file the test writes)', () => {
  const MB = 1024 * 1024;
  /** A meminfo as the kernel writes it, MemAvailable `mb`; replaced whole (a reader never sees half of one). */
  function meminfo(mb: number): string {
    const file = join(ctx.fleet.root, 'meminfo');
    const kb = mb * 1024;
    writeFileSync(
      `${file}.tmp`,
      `MemTotal:       ${kb * 4} kB\nMemFree:        ${kb} kB\nMemAvailable:   ${kb} kB\nBuffers:        0 kB\n`,
    );
    renameSync(`${file}.tmp`, file);
    return file;
  }
  /** Floor 1000 MB, a typical session 300 MB while none is measured, MemAvailable `mb` (written now). */
  const memConfig = (over: Record<string, unknown> = {}, mb = 1200) =>
    configFile({ cap: 10, memoryFloorMB: 1000, meminfoPath: meminfo(mb), admit: { sessionMB: 300 }, ...over });

  it('refused by memory with no live session (admit.sessionMB is typical): says so and by how much; allowed once it rises', async () => {
    const cfg = memConfig();
    const m = marking('mem');
    const r = await finish(cli(['admit', '--json', '--config', cfg, '--', ...m.argv]));
    expect(r.code, r.stderr).toBe(75);
    expect(existsSync(m.marker)).toBe(false);
    expect(r.stderr.trim().split('\n')).toEqual([
      'sunset admit: memory floor reached: MemAvailable 1.2 GB less 300 MB (a typical session: admit.sessionMB: no live session measured) leaves 900 MB, 100 MB under memoryFloorMB (1000 MB) — not starting; 0 finished sessions are being asked to exit',
    ]);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({
      started: false,
      reason: 'refused',
      refusedBy: ['memory'],
      count: { counted: 0, ceiling: 10, reached: false },
      memory: {
        reached: true,
        availableBytes: 1200 * MB,
        floorBytes: 1000 * MB,
        typicalBytes: 300 * MB,
        typicalFrom: 'default',
        shortBytes: 100 * MB,
      },
    });
    const alarms = new Alarms(parseConfig(ctx.fleet.config({ host }), { env: {} })).list();
    expect(alarms).toMatchObject([{ kind: 'cap-reached', refusedBy: ['memory'], shortBytes: 100 * MB }]);
    expect(alarms[0].message).toMatch(/^memory floor reached: /);

    meminfo(1301); // 1301 − 300 = 1001 MB left: above the floor
    const ok = await finish(cli(['admit', '--json', '--config', cfg, '--', ...m.argv]));
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(m.marker)).toBe(true);
    expect(ok.stdout + ok.stderr).toBe('');
  });

  it('a typical session is the median RSS of the live ones; a start in flight counts against memory too; both limits are named', async () => {
    for (let i = 0; i < 3; i++) await ctx.fleet.spawnBackground();
    const cfg = memConfig({}, 100_000);
    const c = JSON.parse((await finish(cli(['cap', '--json', '--config', cfg]))).stdout);
    expect(c.memory).toMatchObject({ typicalFrom: 'median', sampled: 3, availableBytes: 100_000 * MB, reached: false });
    const typical: number = c.memory.typicalBytes;
    expect(typical).toBeGreaterThan(5 * MB); // three node processes, measured
    // room for one start of a typical session, not two
    const avail = Math.ceil((1000 * MB + 1.5 * typical) / MB);
    meminfo(avail);
    const first = await finish(cli(['admit', '--config', cfg, '--', ...marking('one').argv]));
    expect(first.code, first.stderr).toBe(0);
    // the first one's lease (its command is no session) is a start in flight: it takes a typical session's memory
    const second = await finish(cli(['admit', '--json', '--config', cfg, '--', ...marking('two').argv]));
    expect(second.code, second.stderr).toBe(75);
    expect(second.stderr).toMatch(
      /memory floor reached: MemAvailable .* less .* \(2 typical sessions of .*: this start and 1 admitted or queued before it; the median of 3 live sessions\) leaves .*, .* under memoryFloorMB \(1000 MB\) — not starting/,
    );
    expect(JSON.parse(second.stdout)).toMatchObject({ refusedBy: ['memory'], count: { counted: 4 }, memory: { starts: 2 } });
    // sunset cap says the same: the next start would be refused by memory
    const capNow = await finish(cli(['cap', '--config', cfg]));
    expect(capNow.stdout).toMatch(
      /^memory: AT THE FLOOR — `sunset admit` refuses new starts \(memory floor reached: .*the median of 3 live sessions/m,
    );

    // at the ceiling as well: both limits named, in the line and the JSON
    const both = await finish(cli(['admit', '--json', '--config', memConfig({ cap: 4 }, avail), '--', 'true']));
    expect(both.code).toBe(75);
    expect(both.stderr).toMatch(/^sunset admit: cap reached: 4\/4, and memory floor reached: .* — not starting; /m);
    expect(JSON.parse(both.stdout)).toMatchObject({ refusedBy: ['count', 'memory'], count: { slotsShort: 1 } });
  });

  it('--wait waits for memory and starts once MemAvailable rises', async () => {
    const cfg = memConfig();
    const m = marking('waited-mem', 4);
    const w = cli(['admit', '--wait', '--timeout', '60s', '--config', cfg, '--', ...m.argv]);
    await until('waiting for memory', () => /waiting for memory: 100 MB under memoryFloorMB, 1st in line/.test(w.out.stderr));
    expect(w.out.stderr).toMatch(/^sunset admit: memory floor reached: .* — waiting for memory; /m);
    // no `sunset up` here: worded by the limit that refused — memory can free up by itself, a slot cannot
    expect(w.out.stderr).toMatch(
      /^sunset admit: sunset up is not running \(no worker on session-exit@.*\): nothing asks finished sessions to leave, so memory frees only when other programs on this host use less, or a session ends or a person ends one\. Waiting anyway/m,
    );
    expect(w.out.stderr).not.toMatch(/no slot frees by itself/);
    expect(existsSync(m.marker)).toBe(false);
    meminfo(2000);
    const r = await finish(w);
    expect(r.code, r.stderr).toBe(4);
    expect(existsSync(m.marker)).toBe(true);
    expect(r.stderr).toMatch(/memory freed after .* — starting/);
  });

  it('MemAvailable that cannot be read, with a floor set, starts nothing (exit 1); with no floor, count alone decides', async () => {
    const gone = join(ctx.fleet.root, 'no-meminfo');
    const m = marking('unknown-mem');
    const r = await finish(cli(['admit', '--config', memConfig({ meminfoPath: gone }), '--', ...m.argv]));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`MemAvailable cannot be read from ${gone}`);
    expect(existsSync(m.marker)).toBe(false);
    const free = await finish(cli(['admit', '--config', memConfig({ meminfoPath: gone, memoryFloorMB: null }), '--', ...m.argv]));
    expect(free.code, free.stderr).toBe(0);
    expect(existsSync(m.marker)).toBe(true);
  });
});

describe('sunset admit: the no-up line, worded by the limit that refused (pure)', () => {
  it('count: no slot frees by itself; memory: it frees as other programs use less; both: says both', () => {
    const cfg = parseConfig({ host: 'box1' }, { env: {} });
    expect(noUpLine(cfg, ['count'])).toContain('so no slot frees by itself — only when a session ends or a person ends one. Waiting');
    const mem = noUpLine(cfg, ['memory']);
    expect(mem).toContain('so memory frees only when other programs on this host use less, or a session ends or a person ends one.');
    expect(mem).not.toContain('by itself');
    expect(noUpLine(cfg, ['count', 'memory'])).toContain(
      'no slot frees by itself — only when a session ends or a person ends one; memory frees when that happens or when other programs use less.',
    );
  });
});
