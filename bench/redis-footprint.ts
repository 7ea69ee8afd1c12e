// Bench: Redis footprint. 10,000 finished tasks go through the whole exit pipeline — release, ask,
// requests, exit, and for the stubborn fifth three requests and a give-up with its alarm — on a private
// redis-server, and Redis must end up bounded: `INFO memory` used_memory after (pipeline quiet) minus
// before, per task; finished jobs trimmed by the queues' retention.
//
//   Real: redis-server, BullMQ queues and workers (startSunset, the real processors), task files latched on
//   disk, ask files, the exit ledger, alarms. Synthetic: the fleet's *evidence* (every task's session is a
//   live, idle, silent background row) and the exit call itself (a stub that says "exited", or for every
//   fifth task "still running") — so that 10,000 sessions cost no processes and the bench measures Redis.
//   Tasks go in batches (default 1,000), as a fleet finishes work, not all at once.
//
//   Its own redis-server, never the shared one: a child of this process on a free port (from 16400), proved to
//   be that child before anything is written (INFO server's process_id is the child's pid), stopped at the end.
//   Nothing is ever flushed; `used_memory` is read on that server alone.
//
//   node dist/bench/run.js footprint [--footprint-tasks=N] [--footprint-batch=N] [--exit-keep=N]   (after npm run build)
//   node dist/bench/redis-footprint.js [--tasks=N] [--batch=N] [--exit-keep=N]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { parseConfig, queueName, type Config } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { startSunset, type Running } from '../src/pipeline/up.js';
import { freePortNear } from '../src/private-redis.js';
import { decide, policyFrom, type Evidence, type SessionFacts } from '../src/doctrine/verdict.js';
import type { FleetSnapshot, SessionView } from '../src/evidence/fleet.js';
import { readTask as readTaskFile, type Task } from '../src/tasks/tasks.js';
import { CHAIN_RETENTION, EXIT_RETENTION, PREFIX } from '../queues/common.js';
import { Cleanup, load, printFigure, type Figure } from './common.js';

export interface FootprintOptions {
  /** Tasks through the pipeline. @defaultValue 10000 */
  tasks?: number;
  /** Tasks finished at once. @defaultValue 1000 */
  batch?: number;
  /** Bytes per task the figure must stay under. @defaultValue 2048 */
  budget?: number;
  /**
   * What if: keep at most this many finished exit jobs instead of queues/common.ts EXIT_RETENTION's count.
   * Set on the running exit queue's job defaults only, to measure a retention before choosing it.
   */
  exitKeep?: number;
}

const H = 3_600_000;
const QUEUES = ['task-terminal', 'exit-ask', 'exit-retry', 'session-exit', 'reconcile', 'expire-scan'];
const STUBBORN_EVERY = 5;

export async function benchRedisFootprint(o: FootprintOptions = {}): Promise<Figure[]> {
  const total = o.tasks ?? 10_000;
  const batch = Math.max(1, Math.min(o.batch ?? 1000, total));
  const budget = o.budget ?? 2048;
  console.log(`\n== redis footprint: ${total} tasks in batches of ${batch}, load ${load()} ==`);
  const cleanup = new Cleanup();
  const figures: Figure[] = [];
  try {
    const redis = await ownRedisServer(cleanup);
    console.log(`  own redis-server: pid ${redis.pid}, ${redis.url} (not the shared Redis)`);
    const root = mkdtempSync(join(tmpdir(), 'sunset-footprint-'));
    cleanup.add('temp folder', () => rmSync(root, { recursive: true, force: true }));
    for (const d of ['tasks', 'inbox', 'projects', 'state']) mkdirSync(join(root, d), { recursive: true });
    const config = parseConfig(
      {
        host: 'footprint',
        redisUrl: redis.url,
        stateDir: join(root, 'state'),
        fleet: {
          rosterCommand: ['false'],
          claudeCommand: 'false',
          tmuxSocket: `sunset-footprint-${process.pid}`,
          tasksDir: join(root, 'tasks'),
          inboxDir: join(root, 'inbox'),
          projectsDir: join(root, 'projects'),
        },
        windows: {
          grace: 0,
          silence: 0,
          askWait: 0,
          retryWait: 0,
          exitConfirm: 200,
          recheck: 100,
          reconcileEvery: '10s',
          expireEvery: '1h',
        },
        probeTimeout: 2000,
        exitRate: { max: 1000, per: 100 },
        log: { level: 'silent' },
      },
      { env: {} },
    );
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    cleanup.add('redis client', () => client.quit());
    const used = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);

    // the exit call: "exited" — or, for every fifth task, "still running" (three requests, then a give-up)
    const exitImpl = async (t: { sessionId: string }) => {
      const stubborn = Number(t.sessionId.slice(t.sessionId.lastIndexOf('-') + 1)) % STUBBORN_EVERY === 0;
      return { method: 'claude-stop' as const, called: true, exited: !stubborn, ms: 0 };
    };
    const running: Running = await startSunset(config, { roles: ['producers', 'workers'], log: silentLogger, exitImpl });
    cleanup.add('sunset', () => running.close());
    if (o.exitKeep !== undefined) {
      const q = running.deps.producers.exit.queue as unknown as { jobsOpts: Record<string, unknown> };
      q.jobsOpts = { ...q.jobsOpts, removeOnComplete: { age: 7 * 86400, count: o.exitKeep } };
      console.log(`  what if: finished exit jobs kept at most ${o.exitKeep} (not the configured retention)`);
    }
    const active = new Set<string>();
    const fleet = syntheticFleet(config, active);
    running.deps.fleet = fleet.source;
    await waitQuiet(client, config.host, 60_000);
    const before = await used();
    console.log(`  before: used_memory ${kb(before)} (sunset running, schedulers in place, no task yet)`);

    const t0 = Date.now();
    let done = 0;
    while (done < total) {
      const n = Math.min(batch, total - done);
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const k = done + i;
        const id = `fp-${k}`;
        ids.push(id);
        writeTaskJson(config.fleet.tasksDir, {
          id,
          state: 'done',
          sessionId: `sess-${k}`,
          title: `bench task ${k}`,
          updatedAt: new Date().toISOString(),
        });
        active.add(id); // in the same tick as the write: no job can judge the task before its session is in
        fleet.changed();
      }
      let quietSince: number | null = null;
      await until(
        `batch ${done}-${done + n} finished`,
        async () => {
          for (const id of ids) {
            if (!active.has(id)) continue;
            const t = await readTask(config.fleet.tasksDir, id);
            if (!(t?.exitedAt || t?.exitGaveUpAt)) {
              // a chain that stopped short would leave the queues idle with tasks unfinished: say so, do not hang
              if (!(await quiet(client, config.host))) quietSince = null;
              else if (Date.now() - (quietSince ??= Date.now()) > 10_000)
                throw new Error(`the pipeline went quiet with task ${id} unfinished: ${JSON.stringify(t)}`);
              return false;
            }
            active.delete(id); // a finished task's stale row in a cached snapshot is harmless: no job judges it again
          }
          return true;
        },
        30 * 60_000,
      );
      done += n;
      process.stdout.write(`  ${done}/${total} tasks through (${Math.round((Date.now() - t0) / 1000)} s)\n`);
    }
    await waitQuiet(client, config.host, 5 * 60_000);
    const after = await used();
    const perTask = (after - before) / total;
    const breakdown = await describe(client, config.host);
    console.log(`  after: used_memory ${kb(after)}; ${breakdown.text}`);
    const f: Figure = {
      bench: 'redis-footprint',
      name: `Redis used_memory growth per task (${total} tasks through the whole pipeline${o.exitKeep !== undefined ? `, exit jobs kept ≤ ${o.exitKeep}` : ''})`,
      value: `${Math.round(perTask)} B/task (${kb(before)} → ${kb(after)}, in ${Math.round((Date.now() - t0) / 1000)} s)`,
      floor: `${kb(before)} with sunset running and no task`,
      target: `≤ ${budget} B/task`,
      pass: perTask <= budget,
    };
    printFigure(f);
    figures.push(f);
    // finished jobs trimmed: no queue keeps more finished jobs than its retention allows
    const keepOf = (q: string) => {
      const r = q === 'session-exit' ? EXIT_RETENTION : CHAIN_RETENTION;
      const count = (x: unknown) => (typeof x === 'object' && x && 'count' in x ? Number((x as { count: number }).count) : Infinity);
      const done = q === 'session-exit' && o.exitKeep !== undefined ? o.exitKeep : count(r.removeOnComplete);
      return { done, failed: count(r.removeOnFail) };
    };
    const over = breakdown.kept.filter((k) => k.completed > keepOf(k.queue).done || k.failed > keepOf(k.queue).failed);
    const chain = breakdown.kept.filter((k) => QUEUES.slice(0, 4).includes(k.queue));
    const trim: Figure = {
      bench: 'redis-footprint',
      name: 'finished jobs kept (trimmed by retention)',
      value: chain.map((k) => `${k.queue} ${k.completed}+${k.failed}`).join(', '),
      target: `≤ retention (chain ${keepOf('task-terminal').done}, exit ${keepOf('session-exit').done} completed)`,
      pass: over.length === 0,
    };
    printFigure(trim);
    figures.push(trim);
    console.log(`  [load ${load()}]`);
  } finally {
    await cleanup.run();
  }
  return figures;
}

/**
 * A redis-server of this bench's own: a child process (not daemonized, so its pid is known) on a free port,
 * and proved to be that child — `INFO server` answers with its pid — before the bench writes anything. A port
 * taken between the check and the server's bind makes the child exit; the next port is tried. Never a
 * server someone else runs: the shared Redis is never written, flushed or shut down.
 */
async function ownRedisServer(cleanup: Cleanup): Promise<{ url: string; pid: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sunset-footprint-redis-'));
  cleanup.add('redis-server folder', () => rmSync(dir, { recursive: true, force: true }));
  let from = 16400;
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePortNear(from);
    from = port + 1;
    if (port === 6379) continue;
    const child: ChildProcess = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--protected-mode',
        'yes',
        '--logfile',
        '',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const url = `redis://127.0.0.1:${port}`;
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM'); // our own child: redis-server shuts down on SIGTERM (no save: --save '')
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    };
    const deadline = Date.now() + 10_000;
    let owned = false;
    while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
      const failed = await Promise.race([spawnFailed, new Promise<null>((r) => setTimeout(() => r(null), 50))]);
      if (failed) throw new Error(`could not start redis-server (${failed.message}); install it (apt-get install redis-server)`);
      const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
      c.on('error', () => undefined);
      try {
        await c.connect();
        const pid = Number(/process_id:(\d+)/.exec(await c.info('server'))?.[1]);
        if (pid !== child.pid) {
          // someone else's server took this port first: leave it alone, ours will fail to bind and exit
          await stop();
          break;
        }
        owned = true;
        break;
      } catch {
        /* not listening yet */
      } finally {
        c.disconnect();
      }
    }
    if (owned) {
      cleanup.add(`stop redis-server (pid ${child.pid})`, stop);
      return { url, pid: child.pid! };
    }
    await stop();
    console.log(`  (port ${port} was not ours after all: ${out.trim().split('\n').pop() ?? ''}; trying another)`);
  }
  throw new Error('redis footprint bench: could not start a redis-server of its own on a free port');
}

/** Every task in `active` is a live, idle, silent, unattached background session with a drained inbox. */
function syntheticFleet(config: Config, active: Set<string>) {
  const policy = policyFrom(config);
  let last: { at: number; version: number; snap: FleetSnapshot } | null = null;
  let version = 0;
  const source = async (maxAgeMs: number): Promise<FleetSnapshot> => {
    const now = Date.now();
    // never fresher than 200 ms while the set of sessions stays the same: the evidence is synthetic, and
    // re-reading a thousand task files for every exit job is not what this bench measures
    if (last && last.version === version && now - last.at <= Math.max(maxAgeMs, 200)) return last.snap;
    const at = version;
    const tasks: Task[] = [];
    for (const id of active) {
      const t = await readTask(config.fleet.tasksDir, id);
      if (t) tasks.push(t);
    }
    const sessions = tasks.map((t): SessionView => {
      const evidence: Evidence = {
        live: true,
        status: 'idle',
        silenceMs: H,
        transcript: null,
        attached: false,
        attachedBy: 'roster',
        inboxPending: 0,
        probeFailures: [],
        task: {
          id: t.id,
          state: t.state,
          terminal: t.terminal,
          exitRequests: t.exitRequests,
          releasedAt: t.releasedAt,
          exitAskedAt: t.exitAskedAt,
          exitRequestedAt: t.exitRequestedAt,
          exitedAt: t.exitedAt,
          exitGaveUpAt: t.exitGaveUpAt,
        },
        openTasks: [],
        invalidTasks: [],
      };
      const facts: SessionFacts = { id: t.sessionId!, sessionId: t.sessionId!, kind: 'background', pid: process.pid, evidence };
      const row = {
        id: t.sessionId!,
        sessionId: t.sessionId!,
        name: null,
        kind: 'background' as const,
        pid: process.pid,
        state: 'running',
        status: 'idle' as const,
        waitingFor: null,
        cwd: null,
        startedAt: null,
        attached: false,
        raw: {},
      };
      return {
        ...facts,
        ...decide(facts, policy, now),
        row,
        label: t.sessionId!,
        name: null,
        live: true,
        taskId: t.id,
        taskState: t.state,
        rssBytes: null,
        procStartMs: null,
      };
    });
    const snap: FleetSnapshot = {
      at: now,
      host: config.host,
      roster: { ok: true },
      rosterFrom: 'cli',
      sessions,
      tasks,
      invalidTasks: [],
      problems: [],
      probeErrors: {},
      overhead: null,
      agentViews: 0,
      agentViewsOpen: [],
    };
    last = { at: now, version: at, snap };
    return snap;
  };
  return { source, changed: () => void version++ };
}

/** No chain job waiting, running, delayed or prioritized. */
async function quiet(client: Redis, host: string): Promise<boolean> {
  for (const q of QUEUES.slice(0, 4)) {
    const k = `${PREFIX}:${queueName(q, host)}`;
    const [w, a, d, p] = await Promise.all([
      client.llen(`${k}:wait`),
      client.llen(`${k}:active`),
      client.zcard(`${k}:delayed`),
      client.zcard(`${k}:prioritized`),
    ]);
    if (w + a + d + p) return false;
  }
  return true;
}

async function waitQuiet(client: Redis, host: string, ms: number): Promise<void> {
  await until('the pipeline quiet', () => quiet(client, host), ms);
}

/** What is left in Redis: jobs kept per queue and the events streams, with their memory. */
async function describe(
  client: Redis,
  host: string,
): Promise<{ text: string; kept: Array<{ queue: string; completed: number; failed: number }> }> {
  const parts: string[] = [];
  const kept: Array<{ queue: string; completed: number; failed: number }> = [];
  let keys = 0;
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    keys += found.length;
  } while (cursor !== '0');
  parts.push(`${keys} keys`);
  for (const q of QUEUES) {
    const k = `${PREFIX}:${queueName(q, host)}`;
    const [completed, failed, events] = await Promise.all([
      client.zcard(`${k}:completed`),
      client.zcard(`${k}:failed`),
      client.xlen(`${k}:events`).catch(() => 0),
    ]);
    const eventsBytes = Number((await client.call('MEMORY', 'USAGE', `${k}:events`)) ?? 0);
    // what one kept job costs: its hash, sampled
    const sample = await client.zrange(`${k}:completed`, '0', '49');
    const sizes = await Promise.all(sample.map(async (id) => Number((await client.call('MEMORY', 'USAGE', `${k}:${id}`)) ?? 0)));
    const perJob = sizes.length ? Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length) : 0;
    kept.push({ queue: q, completed, failed });
    parts.push(
      `${q}: ${completed} completed + ${failed} failed kept (≈ ${perJob} B each), events stream ${events} entries (${kb(eventsBytes)})`,
    );
  }
  return { text: parts.join('; '), kept };
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function readTask(dir: string, id: string): Promise<Task | null> {
  const r = await readTaskFile(dir, id);
  return r.kind === 'task' ? r.task : null;
}

/** As the Driver writes a task file: a temp file, then a rename. */
function writeTaskJson(dir: string, t: Record<string, unknown> & { id: string }): void {
  const tmp = join(dir, `.${t.id}.json.tmp`);
  writeFileSync(tmp, `${JSON.stringify(t, null, 2)}\n`);
  renameSync(tmp, join(dir, `${t.id}.json`));
}

const kb = (b: number) => (b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MB` : `${(b / 1024).toFixed(1)} KB`);

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const num = (k: string) => {
    const m = process.argv.find((a) => a.startsWith(`--${k}=`));
    return m ? Number(m.slice(k.length + 3)) : undefined;
  };
  benchRedisFootprint({ tasks: num('tasks'), batch: num('batch'), exitKeep: num('exit-keep') }).then(
    (figs) => (process.exitCode = figs.every((f) => f.pass !== false) ? 0 : 1),
    (err) => {
      console.error(err);
      process.exitCode = 2;
    },
  );
}
