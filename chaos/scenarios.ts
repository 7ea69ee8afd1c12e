// The faults of the chaos table, one function per row. Each run builds a test fleet (real agent processes,
// a private tmux server, the stand-in claude CLI), starts its own redis-server and a real `sunset up`
// process, injects its fault, waits (on conditions, with deadlines) for every chain to finish, stops
// sunset cleanly and measures. Sessions the fault damages must be simply spared; the others must finish.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { TestFleet, agentScript, slugOf } from '../sim/fleet/fleet.js';
import { redisCall, redisServer, type RedisServer } from './redis.js';
import {
  H,
  SunsetProc,
  TaskMonitor,
  chaosConfig,
  emptyMeasure,
  findFiles,
  finished,
  measure,
  observe,
  rosterCalls,
  sweeps,
  until,
  type Measure,
  type Subject,
} from './harness.js';

export interface RunContext {
  rand: () => number;
  log: (s: string) => void;
}

export interface Scenario {
  key: string;
  /** The table's row name. */
  fault: string;
  /** What a run does and what it must find, for `npm run chaos -- --help`. */
  about: string;
  /** Runs in the full suite, and in the short form (test/chaos.test.ts, part of `npm test`; 0: left out of it). */
  runs: { full: number; short: number };
  /** A long run (waits out BullMQ locks, or hung probes): started before the others, so that with several runs at once the suite does not end on one. */
  slow?: boolean;
  run(ctx: RunContext): Promise<Measure>;
}

// deadlines are generous: a loaded CI box can take minutes where an idle one takes seconds
const FINISH_MS = 300_000;
const uniqueHost = () => `chaos-${randomBytes(4).toString('hex')}`;
const CHAIN_QUEUES = ['task-terminal', 'exit-ask', 'exit-retry', 'session-exit'];

// ------------------------------------------------------------------------------------------ the frame

interface Env {
  fleet: TestFleet;
  redis: RedisServer;
  host: string;
  cfgFile: string;
  monitor: TaskMonitor;
  subjects: Subject[];
  notes: string[];
  /** Violations that are none of the table's named columns (injections, a sunset that would not stop). */
  problems: string[];
  /** Sessions the fault put at risk: [spared, at risk] added to the measure. */
  risk: { spared: number; toSpare: number };
  lost: { n: number };
  /** Note how long the run took to get here (printed with --verbose). */
  mark(what: string): void;
  start(o?: { roles?: string[] }): SunsetProc;
  task(id: string, sessionId: string, state?: string, extra?: Record<string, unknown>): Record<string, unknown>;
  /** Wait until every chain finished, then until the pipeline has been quiet for a while. */
  finish(): Promise<void>;
}

interface FrameOptions {
  windows?: Record<string, unknown>;
  extra?: Record<string, unknown>;
  redis?: 'start' | 'absent';
}

/** What runs now, so that an interrupted suite can still clean up (its fleets' agents are detached). */
const live = new Set<() => Promise<void>>();

/** Stop every sunset, redis-server and fleet a run has not cleaned up yet (Ctrl-C). */
export async function cleanupAll(): Promise<void> {
  await Promise.allSettled([...live].map((f) => f()));
}

async function frame(_ctx: RunContext, o: FrameOptions, body: (env: Env) => Promise<void>): Promise<Measure> {
  const t0 = Date.now();
  const fleet = await TestFleet.create();
  let redis: RedisServer;
  try {
    redis = await redisServer({ start: o.redis !== 'absent' });
  } catch (err) {
    await fleet.destroy();
    throw err;
  }
  const procs: SunsetProc[] = [];
  const teardown = async () => {
    for (const p of procs) await p.stop(5000);
    await redis.destroy();
    await fleet.destroy();
  };
  live.add(teardown);
  const host = uniqueHost();
  const monitor = new TaskMonitor(fleet.tasksDir);
  const env: Env = {
    fleet,
    redis,
    host,
    cfgFile: fleet.writeConfig(chaosConfig(fleet, { host, redisUrl: redis.url, windows: o.windows, extra: o.extra })),
    monitor,
    subjects: [],
    notes: [],
    problems: [],
    risk: { spared: 0, toSpare: 0 },
    lost: { n: 0 },
    mark(what) {
      env.notes.push(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    },
    start(so = {}) {
      const p = new SunsetProc(env.cfgFile, { roles: so.roles, cwd: fleet.root });
      procs.push(p);
      return p;
    },
    task(id, sessionId, state = 'done', extra = {}) {
      const obj = { id, state, sessionId, title: `keep ${id}`, nested: { x: [1, 2], s: '\u00e9' }, big: '12345678901234567890', ...extra };
      fleet.writeTask(obj);
      monitor.watch(id, obj);
      return obj;
    },
    async finish() {
      env.mark('waiting for every chain to finish');
      await until('every chain finished', () => finished(fleet, env.subjects), FINISH_MS, 50);
      env.mark('every chain finished');
      // then settle: the pipeline quiet for 1.5 s, or — while a spared session's job keeps re-checking its
      // protection, so that it never is — four more sweeps, each a chance to act wrongly
      let quietSince: number | null = null;
      const from = rosterCalls(fleet);
      await until(
        'the pipeline quiet for 1.5 s, or four more sweeps',
        async () => {
          if (rosterCalls(fleet) >= from + 4) return true;
          const idle = await chainsIdle(redis.port, host);
          if (!idle) quietSince = null;
          else quietSince ??= Date.now();
          return quietSince !== null && Date.now() - quietSince >= 1500;
        },
        FINISH_MS,
        100,
      );
    },
  };
  let failed: Error | null = null;
  monitor.start();
  env.mark('fleet and Redis ready');
  try {
    await body(env);
    env.mark('done');
  } catch (err: any) {
    failed = err;
  }
  // a clean stop must end every process by itself (Cluster and Redis handles included)
  for (const p of procs) {
    if (!p.alive) continue;
    const r = await p.stop(20_000);
    if (r.code !== 0) env.problems.push(`sunset up did not exit cleanly on SIGTERM (code ${r.code}, signal ${r.signal}, ${r.ms} ms)`);
  }
  const m = measure(fleet, env.subjects, monitor.stop(), { fieldsLost: env.lost.n, notes: env.notes });
  m.spared += env.risk.spared;
  m.toSpare += env.risk.toSpare;
  if (failed) env.problems.push(`run did not finish: ${failed.message}`);
  m.unfinished += env.problems.length;
  m.notes.push(...env.problems);
  if (process.env.CHAOS_VERBOSE) {
    const rel = (iso: unknown) => (typeof iso === 'string' ? `${((Date.parse(iso) - t0) / 1000).toFixed(1)}` : '-');
    for (const s of env.subjects.filter((x) => x.taskId)) {
      const t = readTask(fleet, s.taskId!);
      m.notes.push(
        `${s.taskId}: released ${rel(t.releasedAt)} asked ${rel(t.exitAskedAt)} requested(${t.exitRequests ?? 0}) ${rel(t.exitRequestedAt)} exited ${rel(t.exitedAt)} gaveUp ${rel(t.exitGaveUpAt)}`,
      );
    }
    const failedJobs = procs.flatMap((p) =>
      p.events
        .filter((e) => e.event === 'job:failed' || e.event === 'redis:error')
        .map((e) => `${e.event} ${e.queue ?? ''} ${e.jobId ?? ''} ${e.error ?? ''}`),
    );
    m.notes.push(`${failedJobs.length} failed job attempts / Redis errors: ${failedJobs.slice(0, 6).join(' | ')}`);
  }
  if (m.unfinished || m.askedTwice || m.over3 || m.alarmsTwice || m.fieldsLost || m.signals) {
    const tail = procs.flatMap((p) => p.events.slice(-15).map((e) => `${e.event ?? ''} ${e.msg ?? ''}`));
    m.notes.push(`fleet root ${fleet.root}; last log lines: ${tail.slice(-10).join(' | ')}`);
  }
  live.delete(teardown);
  await redis.destroy();
  await fleet.destroy();
  return m;
}

/** No chain job waiting or running (delayed ones may sit: a protection that re-checks). */
async function chainsIdle(port: number, host: string): Promise<boolean> {
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    for (const q of CHAIN_QUEUES) {
      const k = `{sunset}:${q}@${host}`;
      const [w, a, p] = await Promise.all([c.llen(`${k}:wait`), c.llen(`${k}:active`), c.zcard(`${k}:prioritized`)]);
      if (w + a + p > 0) return false;
    }
    return true;
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

// ------------------------------------------------------------------------------------------ fleets

/** Ordinary and stubborn background sessions, an interactive one, and a lane awaiting a human. */
async function standardFleet(env: Env, o: { interactive?: boolean } = {}): Promise<void> {
  const { fleet } = env;
  const ord = await fleet.spawnBackground({ transcriptAgeMs: H });
  env.task('ord', ord.sessionId);
  env.subjects.push({ id: ord.id, sessionId: ord.sessionId, pid: ord.pid, taskId: 'ord', expect: 'exit' });
  const stub = await fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
  env.task('stub', stub.sessionId, 'abandoned');
  env.subjects.push({ id: stub.id, sessionId: stub.sessionId, pid: stub.pid, taskId: 'stub', expect: 'give-up' });
  if (o.interactive !== false) {
    const it = await fleet.spawnInteractive({ transcriptAgeMs: H });
    env.task('inter', it.sessionId, 'parked');
    env.subjects.push({ id: it.id, sessionId: it.sessionId, pid: it.pid, taskId: 'inter', expect: 'exit' });
  }
  const lane = await fleet.spawnBackground({ transcriptAgeMs: 300 * H });
  env.task('lane', lane.sessionId, 'awaiting-human');
  env.subjects.push({ id: lane.id, sessionId: lane.sessionId, pid: lane.pid, taskId: 'lane', expect: 'spared' });
}

const readTask = (fleet: TestFleet, id: string): Record<string, any> => {
  try {
    return JSON.parse(readFileSync(join(fleet.tasksDir, `${id}.json`), 'utf8'));
  } catch {
    return {};
  }
};

const released = (env: Env) =>
  env.subjects.filter((s) => s.expect === 'exit' || s.expect === 'give-up').every((s) => readTask(env.fleet, s.taskId!).releasedAt);

/** What has been done to each subject so far: compared before and after a fault window. */
function acts(env: Env): Map<string, string> {
  const o = observe(env.fleet, env.subjects);
  return new Map(
    env.subjects.map((s) => [
      s.id,
      JSON.stringify([
        o.requestsOf(s.id),
        o.askFilesOf(s.sessionId),
        s.taskId ? o.asksOf(s.taskId) : 0,
        o.callsOf(s.sessionId),
        o.endedOf(s.id),
      ]),
    ]),
  );
}

/** Sessions alive through a fault window that nothing acted on, against those at risk. */
function judgeWindow(env: Env, before: Map<string, string>, who: Subject[], what: string): void {
  const after = acts(env);
  for (const s of who) {
    env.risk.toSpare++;
    if (before.get(s.id) === after.get(s.id)) env.risk.spared++;
    else env.notes.push(`${s.id}: acted on during ${what}: ${before.get(s.id)} -> ${after.get(s.id)}`);
  }
}

/** A background agent started here rather than by the fleet, so that its id can be anything agent.mjs takes. */
async function rawAgent(fleet: TestFleet, id: string, sessionId: string): Promise<Subject> {
  const cwd = join(fleet.root, 'work', `raw-${randomBytes(3).toString('hex')}`);
  mkdirSync(cwd, { recursive: true });
  const transcript = join(fleet.projectsDir, slugOf(cwd), `${sessionId}.jsonl`);
  const child = spawn(
    process.execPath,
    [
      agentScript(),
      '--registry',
      fleet.registryDir,
      '--id',
      id,
      '--session-id',
      sessionId,
      '--kind',
      'background',
      '--mode',
      'idle',
      '--cwd',
      cwd,
      '--transcript',
      transcript,
    ],
    { detached: true, stdio: 'ignore', cwd },
  );
  child.unref();
  const row = join(fleet.registryDir, 'agents', `${id}.json`);
  await until(
    `raw agent ${JSON.stringify(id)} registered`,
    () => {
      try {
        return JSON.parse(readFileSync(row, 'utf8')).pid === child.pid;
      } catch {
        return false;
      }
    },
    20_000,
  );
  const t = new Date(Date.now() - H);
  utimesSync(transcript, t, t);
  return { id, sessionId, pid: child.pid!, taskId: null, expect: 'exit' };
}

// ------------------------------------------------------------------------------------------ the faults

const killRun = (ctx: RunContext) =>
  frame(ctx, {}, async (env) => {
    await standardFleet(env);
    const kills = 1 + Math.floor(ctx.rand() * 3);
    const points: number[] = [];
    for (let k = 0; k < kills; k++) {
      const p = env.start();
      const after = Math.round(150 + ctx.rand() * 4000);
      points.push(after);
      const at = Date.now() + after;
      await until('the kill point', () => Date.now() >= at || !p.alive, 60_000, 5);
      await p.kill9();
    }
    env.notes.push(`killed at ${points.join(', ')} ms after each start`);
    env.start();
    await env.finish();
  });

const flushRun = (ctx: RunContext) =>
  frame(ctx, {}, async (env) => {
    await standardFleet(env);
    env.start();
    const n = 1 + Math.floor(ctx.rand() * 2);
    for (let k = 0; k < n; k++) {
      const at = Date.now() + 300 + ctx.rand() * 3000;
      await until('the flush point', () => Date.now() >= at, 60_000, 5);
      await env.redis.flushAll();
    }
    await env.finish();
  });

const restartRun = (ctx: RunContext) =>
  frame(ctx, {}, async (env) => {
    await standardFleet(env);
    env.start();
    const at = Date.now() + 300 + ctx.rand() * 3000;
    await until('the restart point', () => Date.now() >= at, 60_000, 5);
    await env.redis.stop();
    await env.redis.start();
    await env.finish();
  });

const absentRun = (ctx: RunContext) =>
  frame(ctx, { redis: 'absent' }, async (env) => {
    await standardFleet(env);
    const before = acts(env);
    const p = env.start();
    await until('sunset to report Redis unreachable', () => p.count('redis:error') > 0, FINISH_MS);
    judgeWindow(env, before, env.subjects, 'the Redis outage at start');
    await env.redis.start();
    await env.finish();
  });

const rosterRun = (fault: 'fail' | 'hang' | 'garbage') => (ctx: RunContext) =>
  frame(ctx, { windows: { grace: 3000 }, extra: fault === 'hang' ? { probeTimeout: 5000 } : {} }, async (env) => {
    await standardFleet(env);
    env.start();
    await until('every finished task released', () => released(env), FINISH_MS);
    // 1. across the end of the grace window: nothing may be asked, requested or exited
    const graceEnd =
      Math.max(...env.subjects.filter((s) => s.taskId).map((s) => Date.parse(readTask(env.fleet, s.taskId!).releasedAt ?? '') || 0)) + 3000;
    const before = acts(env);
    env.fleet.setRosterFault(fault);
    await sweeps(env.fleet, 3);
    await until('the grace window to end under the fault', () => Date.now() > graceEnd + 1000, 60_000);
    await sweeps(env.fleet, 1);
    judgeWindow(env, before, env.subjects, `the roster fault (${fault})`);
    env.fleet.setRosterFault(null);
    // 2. mid-chain, right after the stubborn session's first request
    await until('the first request', () => Number(readTask(env.fleet, 'stub').exitRequests ?? 0) >= 1, FINISH_MS);
    env.fleet.setRosterFault(fault);
    await sweeps(env.fleet, 3);
    env.fleet.setRosterFault(null);
    await env.finish();
  });

const tmuxRun = (ctx: RunContext) =>
  frame(ctx, { windows: { grace: 3000 } }, async (env) => {
    const { fleet } = env;
    const panes: Subject[] = [];
    for (let i = 0; i < 2; i++) {
      const a = await fleet.spawnInteractive({ transcriptAgeMs: H });
      env.task(`pane-${i}`, a.sessionId);
      panes.push({ id: a.id, sessionId: a.sessionId, pid: a.pid, taskId: `pane-${i}`, expect: 'exit' });
    }
    const bg = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('bg', bg.sessionId);
    env.subjects.push(...panes, { id: bg.id, sessionId: bg.sessionId, pid: bg.pid, taskId: 'bg', expect: 'exit' });
    const serverPid = Number(fleet.tmux(['display-message', '-p', '#{pid}']).trim());
    const sock = join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid?.() ?? 0}`, fleet.tmuxSocket);
    env.start();
    await until('every finished task released', () => released(env), FINISH_MS);
    const before = acts(env);
    // the server's socket is gone (a tmp cleaner, a stray rm): sunset finds no server, its panes live on
    rmSync(sock, { force: true });
    await sweeps(fleet, 3);
    await until(
      'the grace window to end with tmux gone',
      () => env.subjects.every((s) => Date.now() > Date.parse(readTask(fleet, s.taskId!).releasedAt) + 4000),
      60_000,
    );
    await sweeps(fleet, 1);
    judgeWindow(env, before, panes, 'the tmux outage');
    process.kill(serverPid, 'SIGUSR1'); // the harness's own tmux server: recreate its socket (tmux(1))
    await until('the tmux socket back', () => existsSync(sock), 10_000);
    await env.finish();
  });

const transcriptRun = (ctx: RunContext) =>
  frame(ctx, { windows: { grace: 3000 } }, async (env) => {
    const { fleet } = env;
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('gone-early', a.sessionId);
    const b = await fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    env.task('gone-mid', b.sessionId);
    const c = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('control', c.sessionId);
    const sa: Subject = { id: a.id, sessionId: a.sessionId, pid: a.pid, taskId: 'gone-early', expect: 'spared' };
    const sb: Subject = { id: b.id, sessionId: b.sessionId, pid: b.pid, taskId: 'gone-mid', expect: 'give-up' };
    env.subjects.push(sb, { id: c.id, sessionId: c.sessionId, pid: c.pid, taskId: 'control', expect: 'exit' });
    env.start();
    await until('released', () => released(env), FINISH_MS);
    fleet.deleteTranscript(a); // during the grace window: never asked
    env.subjects.push(sa);
    await until('the stubborn session requested once', () => Number(readTask(fleet, 'gone-mid').exitRequests ?? 0) >= 1, FINISH_MS);
    fleet.deleteTranscript(b); // mid-chain: no further request, no give-up
    sb.expect = 'paused';
    sb.maxRequests = 1;
    await until('the control session exited', () => finished(fleet, env.subjects), FINISH_MS);
    await sweeps(fleet, 5);
  });

// A writer that cooperates as sunset does: it takes the task's lock file, reads, bumps its counter, adds a
// field, writes a temp file and renames it — as fast as it can. It counts writes of its own it found lost.
const WRITER = `
  const fs = require('fs');
  const [dir, stop, ...ids] = process.argv.slice(1);
  let writes = 0, lost = 0, busy = 0;
  const last = {};
  while (!fs.existsSync(stop)) {
    for (const id of ids) {
      const file = dir + '/' + id + '.json', lock = dir + '/.' + id + '.json.lock', tmp = file + '.writer.tmp';
      try { fs.closeSync(fs.openSync(lock, 'wx')); } catch (e) { if (e.code !== 'EEXIST') throw e; busy++; continue; }
      try {
        const obj = JSON.parse(fs.readFileSync(file, 'utf8'));
        if (last[id] !== undefined && obj.counter !== last[id]) lost++;
        obj.counter = (obj.counter || 0) + 1;
        obj['w' + (obj.counter % 5)] = { n: obj.counter, s: '\\u00e9' };
        fs.writeFileSync(tmp, JSON.stringify(obj, null, 2) + '\\n');
        fs.renameSync(tmp, file);
        last[id] = obj.counter;
        writes++;
      } finally { fs.unlinkSync(lock); }
    }
  }
  process.stdout.write(JSON.stringify({ writes, lost, busy }));
`;

const writerRun = (ctx: RunContext) =>
  frame(ctx, {}, async (env) => {
    const { fleet } = env;
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('rw-ord', a.sessionId, 'done', { counter: 0 });
    const b = await fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    env.task('rw-stub', b.sessionId, 'done', { counter: 0 });
    env.subjects.push(
      { id: a.id, sessionId: a.sessionId, pid: a.pid, taskId: 'rw-ord', expect: 'exit' },
      { id: b.id, sessionId: b.sessionId, pid: b.pid, taskId: 'rw-stub', expect: 'give-up' },
    );
    const stop = join(fleet.root, 'writer-stop');
    const w = spawn(process.execPath, ['-e', WRITER, fleet.tasksDir, stop, 'rw-ord', 'rw-stub'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    w.stdout!.on('data', (d) => (out += d));
    w.stderr!.on('data', (d) => (err += d));
    const exited = new Promise((r) => w.once('exit', r));
    try {
      await until('the writer under way', () => Number(readTask(fleet, 'rw-ord').counter ?? 0) > 20, 30_000);
      env.start();
      await env.finish();
    } finally {
      writeFileSync(stop, '');
      await exited;
    }
    const r = out ? JSON.parse(out) : { writes: 0, lost: 1 };
    if (err.trim()) env.problems.push(`the other writer failed: ${err.trim().split('\n').pop()}`);
    env.lost.n += r.lost;
    env.notes.push(`the other writer wrote ${r.writes} times (lost ${r.lost}, met the lock ${r.busy} times)`);
  });

const invalidRun = (ctx: RunContext) =>
  frame(ctx, { windows: { grace: 3000 } }, async (env) => {
    const { fleet, monitor } = env;
    const bad = async (name: string, bytes: (sid: string) => string | Buffer) => {
      const a = await fleet.spawnBackground({ transcriptAgeMs: H });
      fleet.writeTaskRaw(name, bytes(a.sessionId));
      monitor.watchBytes(name);
      env.subjects.push({ id: a.id, sessionId: a.sessionId, pid: a.pid, taskId: null, expect: 'spared' });
    };
    await bad('bad-malformed.json', (sid) => `{"id":"bad-malformed","state":"done","sessionId":"${sid}",`);
    await bad('bad-typed.json', (sid) =>
      JSON.stringify({ id: 'bad-typed', state: 'done', sessionId: sid, exitRequests: 'three', releasedAt: 12 }),
    );
    await bad('bad-huge.json', (sid) => `{"id":"bad-huge","state":"done","sessionId":"${sid}","pad":"${'x'.repeat(20 * 1024 * 1024)}"}`);
    await bad('bad-binary.json', (sid) => Buffer.concat([randomBytes(4096), Buffer.from(`\u0000${sid}\u0000`), randomBytes(4096)]));
    await bad('bad-mismatch.json', (sid) => JSON.stringify({ id: 'someone-else', state: 'done', sessionId: sid }));
    await bad('bad-wrong-shape.json', (sid) => JSON.stringify([{ id: 'bad-wrong-shape', state: 'done', sessionId: sid }]));
    // a valid finished task whose file turns corrupt during the grace window
    const m = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('turns-bad', m.sessionId);
    const c = await fleet.spawnBackground({ transcriptAgeMs: H });
    env.task('control', c.sessionId);
    env.subjects.push({ id: c.id, sessionId: c.sessionId, pid: c.pid, taskId: 'control', expect: 'exit' });
    env.start();
    await until('released', () => Boolean(readTask(fleet, 'turns-bad').releasedAt && readTask(fleet, 'control').releasedAt), FINISH_MS);
    monitor.forget('turns-bad');
    fleet.writeTaskRaw('turns-bad.json', readFileSync(join(fleet.tasksDir, 'turns-bad.json'), 'utf8').replace(/\}\s*$/, ',,}'));
    monitor.watchBytes('turns-bad.json');
    env.subjects.push({ id: m.id, sessionId: m.sessionId, pid: m.pid, taskId: 'turns-bad', expect: 'spared' });
    await env.finish();
  });

const hostileRun = (ctx: RunContext) =>
  frame(
    ctx,
    // releaseCommand records the argv it gets: every placeholder must arrive as one literal word
    // (`--` first: a task id may start with "-", and a release command must not take it for an option)
    {
      extra: {
        fleet: {
          releaseCommand: [
            process.execPath,
            '-e',
            `require('fs').appendFileSync(${JSON.stringify('RELEASE_LOG')}, JSON.stringify(process.argv.slice(1)) + '\\n')`,
            '--',
            '{taskId}',
            '{sessionId}',
          ],
        },
      },
    },
    async (env) => {
      const { fleet } = env;
      // the release log path is only known now: patch it into the written config
      const cfg = JSON.parse(readFileSync(env.cfgFile, 'utf8'));
      const releaseLog = join(fleet.root, 'release-argv.jsonl');
      cfg.fleet.releaseCommand[2] = cfg.fleet.releaseCommand[2].replace('RELEASE_LOG', releaseLog);
      writeFileSync(env.cfgFile, JSON.stringify(cfg, null, 2));
      const tag = randomBytes(3).toString('hex');
      const pwn = (n: string) => `pwned-${tag}-${n}`;
      const legal: Array<{ subject: Subject; taskId: string }> = [];
      // shell metacharacters in a session id and a task id: carried literally, the session leaves normally
      const a = await fleet.spawnBackground({ transcriptAgeMs: H, sessionId: `s;$(touch ${pwn('s1')})|x&\`touch ${pwn('s1b')}\`` });
      legal.push({
        subject: { id: a.id, sessionId: a.sessionId, pid: a.pid, taskId: null, expect: 'exit' },
        taskId: `t$(touch ${pwn('t1')})`,
      });
      // in a roster id (what `claude stop` takes) too
      legal.push({
        subject: await rawAgent(fleet, `i$(touch ${pwn('i2')});x`, `\`touch ${pwn('s2')}\``),
        taskId: `x; touch ${pwn('t2')} && echo`,
      });
      legal.push({ subject: await rawAgent(fleet, `a b'c"d&e>${pwn('i3')}`, `s3 "$HOME" *`), taskId: `-rf --no-preserve-root` });
      for (const { subject, taskId } of legal) {
        subject.taskId = taskId;
        env.task(taskId, subject.sessionId);
        env.subjects.push(subject);
      }
      // path traversal in a session id: its inbox and transcript cannot be resolved safely, so it is spared
      const outside = `../../escape-${tag}`;
      const t = await fleet.spawnBackground({ transcriptAgeMs: H, sessionId: outside });
      env.task('traversal', outside);
      env.subjects.push({ id: t.id, sessionId: t.sessionId, pid: t.pid, taskId: 'traversal', expect: 'spared' });
      // task ids that are not file names: invalid, they protect the sessions they name
      for (const [name, id] of [
        ['evil.json', '../../evil'],
        ['a..b.json', 'a..b'],
        ['nl\nid.json', 'nl\nid'],
      ] as const) {
        const s = await fleet.spawnBackground({ transcriptAgeMs: H });
        fleet.writeTaskRaw(name, JSON.stringify({ id, state: 'done', sessionId: s.sessionId }));
        env.monitor.watchBytes(name);
        env.subjects.push({ id: s.id, sessionId: s.sessionId, pid: s.pid, taskId: null, expect: 'spared' });
      }
      // an id that would read as an option: protected outright (id-unsafe) — never asked, requested or alarmed
      const opt = await rawAgent(fleet, '-rf', `opt-${tag}`);
      opt.taskId = 'option-like';
      opt.expect = 'spared';
      env.task('option-like', opt.sessionId);
      env.subjects.push(opt);
      env.start();
      await env.finish();
      // nothing ran a shell; nothing landed outside the fleet
      const canaries = [
        ...findFiles(fleet.root, 'pwned-'),
        ...findFiles(process.cwd(), 'pwned-', 1),
        ...findFiles('/tmp', `pwned-${tag}`, 1),
      ];
      if (canaries.length) env.problems.push(`a shell ran a payload: ${canaries.join(', ')}`);
      for (const p of [resolve(fleet.inboxDir, outside), resolve(fleet.stateDir, outside), resolve(fleet.tasksDir, outside)])
        if (existsSync(p)) env.problems.push(`a path escaped its folder: ${p}`);
      const argvs = readFileSync(releaseLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as string[]);
      for (const { subject, taskId } of legal) {
        if (!argvs.some((v) => v.length === 2 && v[0] === taskId && v[1] === subject.sessionId))
          env.problems.push(`releaseCommand did not get task ${JSON.stringify(taskId)} as literal words: ${JSON.stringify(argvs)}`);
      }
      const optObs = observe(fleet, env.subjects);
      env.notes.push(
        `option-like id: asked ${optObs.askFilesOf(opt.sessionId)}, exit calls refused ${optObs.exits.filter((e) => e.sessionId === opt.sessionId).length}, alarms ${optObs.alarmsFor(opt)}`,
      );
    },
  );

/** Config files sunset must refuse (exit 2, naming the key) before it touches anything. */
const BAD_CONFIGS: Array<{ what: string; text: (valid: Record<string, any>) => string | null; says: RegExp }> = [
  {
    what: 'unknown key',
    text: (v) => JSON.stringify({ ...v, windows: { ...v.windows, gracee: '1m' } }),
    says: /unknown key "windows\.gracee"/,
  },
  { what: 'bad duration', text: (v) => JSON.stringify({ ...v, windows: { ...v.windows, grace: 'soon' } }), says: /windows\.grace/ },
  { what: 'a fourth request', text: (v) => JSON.stringify({ ...v, maxExitRequests: 4 }), says: /maxExitRequests/ },
  {
    what: 'a shell string for argv',
    text: (v) => JSON.stringify({ ...v, fleet: { ...v.fleet, rosterCommand: 'claude agents --json --all; rm -rf ~' } }),
    says: /fleet\.rosterCommand/,
  },
  { what: 'not JSON', text: () => '{ "host": "x", nope', says: /not valid JSON/ },
  { what: 'not an object', text: () => '[]', says: /one JSON object/ },
  {
    what: 'cluster nodes as a string',
    text: (v) => JSON.stringify({ ...v, redisCluster: 'redis://127.0.0.1:7000' }),
    says: /redisCluster/,
  },
  { what: 'a host with a slash', text: (v) => JSON.stringify({ ...v, host: '../other host' }), says: /"host"/ },
  { what: 'zero exit rate', text: (v) => JSON.stringify({ ...v, exitRate: { max: 0, per: '1s' } }), says: /exitRate\.max/ },
  { what: 'a missing file', text: () => null, says: /cannot be read/ },
];

const badConfigRun = (ctx: RunContext) =>
  frame(ctx, {}, async (env) => {
    await standardFleet(env, { interactive: false });
    for (const s of env.subjects) s.expect = 'spared';
    const valid = JSON.parse(readFileSync(env.cfgFile, 'utf8'));
    // all at once: each is a node process that must refuse before it touches anything
    await Promise.all(
      BAD_CONFIGS.map(async (b, i) => {
        const file = join(env.fleet.root, `bad-${i}.json`);
        const text = b.text(valid);
        if (text !== null) writeFileSync(file, text);
        const p = new SunsetProc(file, { cwd: env.fleet.root });
        let timer: NodeJS.Timeout | undefined;
        const r = await Promise.race([p.exited, new Promise<null>((res) => (timer = setTimeout(() => res(null), 60_000)))]);
        clearTimeout(timer);
        if (r === null) {
          await p.stop(5000);
          env.problems.push(`${b.what}: sunset up did not refuse the config`);
          return;
        }
        const said = p.stderr.join('\n');
        if (r.code !== 2) env.problems.push(`${b.what}: exit code ${r.code}, not 2 (${said.slice(0, 200)})`);
        else if (!b.says.test(said)) env.problems.push(`${b.what}: the message does not name the problem: ${said.slice(0, 200)}`);
      }),
    );
    if (existsSync(env.fleet.stateDir)) env.problems.push(`a refused config still created ${env.fleet.stateDir}`);
    const keys = Number(await redisCall(env.redis.port, 'DBSIZE'));
    if (keys !== 0) env.problems.push(`a refused config still wrote ${keys} keys to Redis`);
    if (rosterCalls(env.fleet) !== 0) env.problems.push('a refused config still ran the roster');
  });

// every run also checks the columns of the table (chaos/run.ts: `npm run chaos -- --help`); `about` says
// what the fault is and what is expected of it besides
/** standardFleet, and what must become of it, for the help. */
export const STANDARD_FLEET =
  'an ordinary and a stubborn background session, an interactive one (in a tmux pane) and a lane awaiting a human. Every chain must finish: the ordinary and the interactive session exit, the stubborn one ends in one give-up alarm, the lane is spared.';
const STANDARD = 'The standard fleet';
export const SCENARIOS: Scenario[] = [
  {
    key: 'kill9',
    fault: 'kill -9 of sunset at random points',
    about: `${STANDARD}; sunset is killed with SIGKILL 1 to 3 times, each 0.15–4 s after a start, then started again.`,
    runs: { full: 20, short: 1 },
    slow: true,
    run: killRun,
  },
  {
    key: 'flush',
    fault: 'Redis FLUSHALL mid-chain',
    about: `${STANDARD}; Redis is flushed (FLUSHALL) once or twice, 0.3–3.3 s into the run: the schedule is rebuilt from the task files.`,
    runs: { full: 3, short: 1 },
    run: flushRun,
  },
  {
    key: 'absent',
    fault: 'Redis absent at start, then started',
    about: `${STANDARD}; sunset starts with no Redis listening. Until it reports Redis unreachable nothing may be acted on (every session is at risk); then Redis starts.`,
    runs: { full: 2, short: 1 },
    run: absentRun,
  },
  {
    key: 'restart',
    fault: 'Redis restarted mid-chain',
    about: `${STANDARD}; Redis (no persistence: it comes back empty) is stopped and started again 0.3–3.3 s into the run.`,
    runs: { full: 3, short: 1 },
    run: restartRun,
  },
  {
    key: 'roster-fail',
    fault: 'roster probe failing',
    about: `${STANDARD}; the roster command (claude agents) exits non-zero across the end of the grace window — nothing may be asked, requested or exited meanwhile (every session at risk) — and again right after the stubborn session's first exit request.`,
    runs: { full: 2, short: 1 },
    run: rosterRun('fail'),
  },
  {
    key: 'roster-hang',
    fault: 'roster probe timing out',
    about: 'As roster-fail, but the roster command hangs past probeTimeout (5 s here). A slow run.',
    runs: { full: 2, short: 1 },
    slow: true,
    run: rosterRun('hang'),
  },
  {
    key: 'roster-garbage',
    fault: 'roster probe printing garbage',
    about: 'As roster-fail, but the roster command prints what is not its JSON.',
    runs: { full: 2, short: 1 },
    run: rosterRun('garbage'),
  },
  {
    key: 'tmux',
    fault: 'tmux server gone',
    about:
      "Two interactive sessions in tmux panes and a background one; once their tasks are released the tmux server's socket is removed (a tmp cleaner) through the end of the grace window: the panes must be spared (no /exit typed into them), then the socket comes back and every session exits.",
    runs: { full: 2, short: 1 },
    run: tmuxRun,
  },
  {
    key: 'transcript',
    fault: 'a transcript deleted',
    about:
      "One session's transcript is deleted during the grace window (it must be spared: never asked), another's right after its first exit request (no further request, no give-up alarm); a control session exits.",
    runs: { full: 2, short: 1 },
    run: transcriptRun,
  },
  {
    key: 'writer',
    fault: 'task file rewritten by another writer (tight loop)',
    about:
      "Another process rewrites two task files in a tight loop, cooperating as sunset does (the task's lock file, a temp file renamed): none of its writes and none of sunset's latches may be lost (fields lost); the sessions exit and give up as usual.",
    runs: { full: 2, short: 1 },
    run: writerRun,
  },
  {
    key: 'invalid',
    fault: 'malformed, wrong-typed, 20 MB, non-JSON, id-mismatched task files',
    about:
      'Task files that are malformed, wrong-typed, 20 MB, binary, id-mismatched or of the wrong shape, and a valid one that turns corrupt during its grace window: their sessions must be spared and their bytes left as they are; a control session exits.',
    runs: { full: 1, short: 1 },
    run: invalidRun,
  },
  {
    key: 'hostile',
    fault: 'hostile session and task ids (shell, traversal)',
    about:
      'Shell metacharacters in session, task and roster ids (carried as literal words: those sessions exit, no shell runs a payload, releaseCommand gets each id as one word); path traversal in a session id and in task ids, and an option-like id "-rf": spared, nothing written outside its folder.',
    runs: { full: 1, short: 1 },
    run: hostileRun,
  },
  {
    key: 'bad-config',
    fault: 'a bad config',
    about: `${BAD_CONFIGS.length} bad config files at once (an unknown key, a bad duration, maxExitRequests 4, a shell string for an argv, not JSON, not an object, …, a missing file): \`sunset up\` must exit 2 naming the problem before it touches Redis, stateDir or the roster; the standard fleet, less its interactive session, is all at risk.`,
    runs: { full: 1, short: 1 },
    run: badConfigRun,
  },
];

export { emptyMeasure };
