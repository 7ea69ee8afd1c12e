// Ctrl-C at any moment of `sunset demo` (issue 27): the built CLI in a process group of its own, as a terminal
// runs a foreground job; SIGINT (or SIGTERM) to the whole group, as the terminal sends it, at several points.
// Within 10 s of the signal: exit 130 (143), no process it started left (found by a mark in their environment,
// which every child inherits: stand-in agents, the attach client, the tmux server and its pane), the tmux server
// gone, its fleet's files gone (each demo runs with a TMPDIR of its own, which must be left empty: the folder
// it makes for its stand-in fleet, tasks and HOME, named or not yet named when the signal comes), and no key in its Redis (a redis-server of this file's own, so "no key" is
// exact). Before this change the demo died at once and left its stand-ins, its tmux server and its keys.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { CLI } from './support/cli.js';
import { ownRedis, type OwnRedis } from './support/redis.js';
import { pidAlive, TestFleet, waitFor } from '../sim/fleet/fleet.js';
import { DemoParts } from '../src/demo-parts.js';
import type { Running } from '../src/pipeline/up.js';

const MARK = 'SUNSET_DEMO_INTERRUPT_TEST';
let redis: OwnRedis;
const demos: Demo[] = [];

beforeAll(async () => {
  redis = await ownRedis();
});
afterAll(async () => {
  await redis?.destroy();
});
afterEach(async () => {
  // a failed test's leftovers: this file's own processes (the demo and what it started), and its Redis's keys
  for (const d of demos.splice(0)) {
    for (const pid of marked(d.mark)) killQuietly(pid);
    rmSync(d.tmp, { recursive: true, force: true });
  }
  await redis.flushAll();
});

function killQuietly(pid: number) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** Live processes whose environment carries this demo's mark: the demo and everything it started. */
function marked(mark: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || !pidAlive(Number(e))) continue;
    try {
      if (readFileSync(`/proc/${e}/environ`, 'utf8').split('\0').includes(`${MARK}=${mark}`)) out.push(Number(e));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

function describeProc(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 160)}`;
  } catch {
    return `${pid} (gone)`;
  }
}

async function keys(): Promise<string[]> {
  const c = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  c.on('error', () => undefined);
  await c.connect();
  const found = await c.keys('{sunset}:*');
  c.disconnect();
  return found;
}

interface Demo {
  pid: number;
  mark: string;
  /** The demo's TMPDIR: where it makes its fleet's folder. */
  tmp: string;
  text: () => string;
  exit: { code: number | null; signal: NodeJS.Signals | null; at: number } | null;
}

function demo(args: string[] = []): Demo {
  const mark = randomUUID();
  const tmp = mkdtempSync(join(tmpdir(), 'sunset-demo-interrupt-'));
  const child = spawn(process.execPath, [CLI, 'demo', ...args], {
    detached: true, // a process group of its own: the test plays the terminal, signalling the foreground group
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, REDIS_URL: redis.url, TMPDIR: tmp, [MARK]: mark },
  });
  let text = '';
  child.stdout!.on('data', (b: Buffer) => (text += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (text += b.toString()));
  const d: Demo = { pid: child.pid!, mark, tmp, text: () => text, exit: null };
  child.on('exit', (code, signal) => (d.exit = { code, signal, at: Date.now() }));
  demos.push(d);
  return d;
}

async function until(what: string, d: Demo, cond: () => boolean, ms: number) {
  if (!(await waitFor(() => cond() || d.exit !== null, ms, 20)) || !cond())
    throw new Error(`timed out waiting for ${what}; the demo said:\n${d.text()}`);
}

/** Send `signal` to the demo's process group; then, within 10 s: its exit code, and nothing of it left. */
async function interrupt(d: Demo, o: { signal?: NodeJS.Signals; again?: boolean; code?: number } = {}) {
  const text = d.text();
  const root = /a simulated fleet in (\S+)/.exec(text)?.[1] ?? null;
  // the tmux server's socket, from the config it wrote (once it has: before that, it has not started sunset)
  let socket: string | null = null;
  try {
    socket = JSON.parse(readFileSync(`${root}/sunset.config.json`, 'utf8')).fleet.tmuxSocket;
  } catch {
    /* not written yet */
  }
  const started = marked(d.mark).length;
  const t0 = Date.now();
  process.kill(-d.pid, o.signal ?? 'SIGINT');
  if (o.again) {
    await until('the first signal said', d, () => /Interrupted: stopping the demo/.test(d.text()), 5000);
    process.kill(-d.pid, 'SIGINT'); // a second Ctrl-C, while it cleans up
  }
  await until('the demo to exit', d, () => d.exit !== null, 10_000);
  const left = () => marked(d.mark);
  await waitFor(() => left().length === 0, Math.max(0, t0 + 10_000 - Date.now()), 20);
  expect(left().map(describeProc)).toEqual([]);
  expect(d.exit!.at - t0).toBeLessThan(10_000);
  expect(d.exit).toMatchObject({ code: o.code ?? 130, signal: null });
  expect(await keys()).toEqual([]);
  if (root) expect(root.startsWith(`${d.tmp}/`)).toBe(true);
  // the fleet's folder, whether or not the demo had named it yet: nothing of it is left in its TMPDIR
  expect(readdirSync(d.tmp)).toEqual([]);
  if (socket) expect(spawnSync('tmux', ['-L', socket, 'list-sessions'], { stdio: 'ignore' }).status).not.toBe(0);
  return { started, text: d.text() };
}

describe('Ctrl-C at any moment of sunset demo: nothing it started is left', () => {
  it('right after its first line, while it starts its stand-in agents', async () => {
    const d = demo();
    await until('its first line', d, () => /a simulated fleet in \S+/.test(d.text()), 30_000);
    const { text } = await interrupt(d);
    expect(text).toMatch(
      /Interrupted: stopping the demo and removing what it started \(its stand-in sessions, its tmux server, its folder, its keys in Redis\), at most 10 s more/,
    );
    expect(text).toMatch(/The demo was stopped: its stand-in sessions, its tmux server, its folder and its keys in Redis are gone\./);
  });

  it('mid-way, the stand-ins running, an attach client open and sunset deciding: SIGINT exits 130', async () => {
    const d = demo();
    await until('a decision narrated', d, () => /asked once to wrap up/.test(d.text()), 60_000);
    const { started, text } = await interrupt(d);
    expect(started).toBeGreaterThan(10); // the demo, its stand-ins, the attach client, the tmux server…
    expect(text).not.toMatch(/── summary/);
  });

  it('mid-way, SIGTERM exits 143', async () => {
    const d = demo();
    await until('a decision narrated', d, () => /asked once to wrap up/.test(d.text()), 60_000);
    const { text } = await interrupt(d, { signal: 'SIGTERM', code: 143 });
    expect(text).toMatch(/Terminated: stopping the demo/);
  });

  it('a second Ctrl-C while it cleans up says it is still cleaning up, and the cleanup is finished, not abandoned', async () => {
    const d = demo();
    await until('sunset started', d, () => /Bull Board: /.test(d.text()), 60_000);
    const { text } = await interrupt(d, { again: true });
    expect(text).toMatch(
      /Still cleaning up \(its stand-in sessions, its tmux server, its folder, its keys in Redis\), at most \d+ s more: the demo leaves nothing half-removed\./,
    );
    expect(text).toMatch(/The demo was stopped: .* are gone\./);
  });

  it('after the end of --keep: Ctrl-C removes the kept fleet and exits 130', async () => {
    const d = demo(['--keep']);
    await until('the kept demo', d, () => /--keep: sunset is still running on the demo fleet/.test(d.text()), 150_000);
    await interrupt(d);
  }, 200_000);
});

describe("the demo's removal: its folder goes even when the fleet's end outlasts its step", () => {
  it('a fleet whose destroy never settles: its folder is removed, and the fleet is named as not removed in time', async () => {
    const fleet = await TestFleet.create();
    try {
      // the fleet as the demo holds it, its end stuck (as under load, waiting on its stand-ins to die)
      const stuck = Object.assign(Object.create(fleet) as TestFleet, { destroy: () => new Promise<void>(() => undefined) });
      const parts = new DemoParts();
      parts.fleet = Promise.resolve(stuck);
      expect(existsSync(fleet.root)).toBe(true);
      const left = await parts.remove();
      expect(left).toEqual(['the fleet']);
      expect(existsSync(fleet.root)).toBe(false);
    } finally {
      await fleet.destroy();
    }
  }, 20_000);

  it('a worker still closing writes into the folder after the fleet ended: the folder is cleared again, and is gone', async () => {
    const fleet = await TestFleet.create();
    try {
      // as an exit job still confirming does: once its session has ended (the fleet's end), it writes its job's end
      const late = join(fleet.root, 'state', 'exits');
      const ended = Object.assign(Object.create(fleet) as TestFleet, {
        destroy: async () => {
          setTimeout(() => {
            mkdirSync(late, { recursive: true });
            writeFileSync(join(late, 'exit%2Ft%2Fs%2F2.json'), '{}');
          }, 200);
        },
      });
      const parts = new DemoParts();
      parts.fleet = Promise.resolve(ended);
      parts.sunset = Promise.resolve({ close: async () => ['the exit worker'] } as unknown as Running);
      expect(await parts.remove()).toEqual([]);
      // and it stays gone past the worker's write (200 ms after the fleet's end)
      expect(await waitFor(() => existsSync(fleet.root), 400, 20)).toBe(false);
    } finally {
      await fleet.destroy();
    }
  }, 20_000);
});
