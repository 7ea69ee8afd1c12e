// Bench: the exit pipeline on the shared Redis (a unique host per phase, its queues obliterated after).
//
//   floor     1,000 raw BullMQ add → worker-finished round trips (no-op processor), one at a time, and
//             1,000 added at once to a worker of the release worker's concurrency (32)
//   burst     1,000 task files rewritten from `active` to `done` by rename in one burst: latency from each
//             file's write to its release on disk (p50/p99) and throughput (grace 1 h: release only), judged
//             against the file system's floor measured just before and just after it (their mean) and BullMQ's;
//             then a trickle of 200 more at 50/s, the latency of a release when nothing queues; and, as
//             information, the release path's own floor (BullMQ jobs each making a plain latch, no sunset)
//   lateness  300 finished tasks on live (light) sessions, grace 3 s: how late the ask fires after
//             releasedAt + grace (p50/p99), from the ask job's processedOn and from exitAskedAt — once with
//             the 300 finishing over 10 s, once all at once
//   idle      `node dist/src/cli.js up` (every role, the web on a free port) as a child (compiled JS) on the
//             census fleet (300 live, 2,000 records, 10,000 tasks; windows of a day, so nothing falls due):
//             RSS, CPU and roster calls over 600 s (--idle-seconds; two reconcile passes fall in it) once it has settled (first reconcile,
//             expire scan and census done, then ≤ 1 % of a core over 5 s and RSS steady over 10 s: start-up's garbage
//             collected; its peak is printed apart)
//
//   node dist/bench/run.js pipeline [--only=floor,burst,lateness,idle]      (after npm run build)
//   BENCH_PROFILE=<dir>: CPU profiles of the measured windows; BENCH_UP_NODE_ARGS: node options for `up`
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  appendFileSync,
  readdirSync,
  closeSync,
  existsSync,
  fsync as fsFsync,
  mkdtempSync,
  open as fsOpen,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  write as fsWrite,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { parseConfig, type Config } from '../src/config.js';
import { buildFleet } from './sweep.js';
import { createLogger } from '../src/log.js';
import { startSunset, type Running } from '../src/pipeline/up.js';
import { createProducers } from '../src/pipeline/deps.js';
import { redisOptions } from '../src/redis.js';
import { pageBytes } from '../src/evidence/proc.js';
import { childCount } from '../src/run.js';
import { PREFIX } from '../queues/common.js';
import { exitAskId } from '../queues/exit-ask.js';
import { TestFleet, waitFor } from '../sim/fleet/fleet.js';
import { uniqueHost } from '../test/support/sunset.js';
import { Cleanup, load, median, ms, printFigure, profiled, quantile, sleep, type Figure } from './common.js';

export interface PipelineOptions {
  burst?: number;
  trickle?: number;
  late?: number;
  idleSessions?: number;
  idleSeconds?: number;
  floorTrips?: number;
  /** Run only these phases (floor, burst, lateness, idle); all when absent. */
  only?: string[];
}

export const PIPELINE_PHASES = ['floor', 'burst', 'lateness', 'idle'];

const H = 3_600_000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');
const NOTES = 'Implement the change described in the issue, run the tests, write the close-out. '.repeat(4);

/** Every queue of a host, removed from the shared Redis (schedulers and jobs included), then checked. */
export async function obliterateHost(config: Config): Promise<void> {
  const producers = createProducers(config, redisOptions(config.redisUrl));
  try {
    for (const p of Object.values(producers)) {
      await p.queue.waitUntilReady();
      await p.queue.obliterate({ force: true });
    }
  } finally {
    await Promise.all(Object.values(producers).map((p) => p.close()));
  }
  // what is left under this bench-only host (a key rewritten while closing) goes too
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    const left: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}:*@${config.host}:*`, 'COUNT', 1000);
      cursor = next;
      left.push(...keys);
    } while (cursor !== '0');
    if (left.length) await redis.del(...left);
  } finally {
    redis.disconnect();
  }
}

/** pino lines of one kind, as they are written: the time each was seen and its fields. */
class EventSink extends Writable {
  readonly seen = new Map<string, Array<{ at: number; line: Record<string, any> }>>();
  constructor(private readonly kinds: string[]) {
    super();
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    const at = Date.now();
    for (const text of String(chunk).split('\n')) {
      const kind = this.kinds.find((k) => text.includes(`"event":"${k}"`));
      if (!kind) continue;
      const list = this.seen.get(kind) ?? [];
      list.push({ at, line: JSON.parse(text) });
      this.seen.set(kind, list);
    }
    cb();
  }
  count(kind: string): number {
    return this.seen.get(kind)?.length ?? 0;
  }
}

function benchConfig(fleet: TestFleet, windows: Record<string, unknown>): Config {
  return parseConfig(
    fleet.config({
      host: uniqueHost(),
      redisUrl: REDIS_URL,
      probeTimeout: 15_000,
      exitRate: { max: 20, per: 100 },
      windows: { grace: '1h', askWait: '1h', retryWait: '1h', reconcileEvery: '5m', expireEvery: '30m', recheck: '5m', ...windows },
      log: { level: 'info' },
    }),
    { env: {} },
  );
}

async function startInProcess(config: Config, sink: EventSink, cleanup: Cleanup): Promise<Running> {
  const running = await startSunset(config, { roles: ['producers', 'workers'], log: createLogger('info', sink) });
  console.log(
    `  (sunset in-process, host ${config.host}: in the bench's own process, with node's default options, not the \`sunset\` command's ${shebangFlags(CLI).join(' ')})`,
  );
  cleanup.add(`obliterate queues of ${config.host}`, () => obliterateHost(config));
  cleanup.add(`close sunset ${config.host}`, () => running.close());
  // settled: the first reconcile and expire-scan runs (they fire at once) are done
  const settled = await waitFor(
    async () =>
      (await running.deps.producers.reconcile.queue.getCompletedCount()) >= 1 &&
      (await running.deps.producers.expire.queue.getCompletedCount()) >= 1,
    60_000,
    100,
  );
  if (!settled) throw new Error('pipeline bench: sunset did not finish its first reconcile and expire scan within 60 s');
  await sleep(500);
  return running;
}

// ------------------------------------------------------------------------------------------ floor

async function rawFloor(trips: number, cleanup: Cleanup) {
  const name = `bench-floor@${uniqueHost()}`;
  const queue = new Queue(name, { connection: redisOptions(REDIS_URL), prefix: PREFIX });
  cleanup.add(`obliterate ${name}`, async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  const waiting = new Map<string, () => void>();
  const done = (job: Job) => waiting.get(job.id!)?.();
  const worker = new Worker(name, async () => undefined, { connection: redisOptions(REDIS_URL, true), prefix: PREFIX, concurrency: 1 });
  cleanup.add(`close worker ${name}`, () => worker.close());
  worker.on('completed', done);
  await worker.waitUntilReady();
  const round = async (id: string) => {
    const finished = new Promise<void>((r) => waiting.set(id, r));
    const t0 = process.hrtime.bigint();
    await queue.add('noop', { i: id }, { jobId: id, removeOnComplete: true });
    await finished;
    waiting.delete(id);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  for (let i = 0; i < 50; i++) await round(`warm-${i}`);
  const rts: number[] = [];
  for (let i = 0; i < trips; i++) rts.push(await round(`rt-${i}`));
  await worker.close();

  // burst floor: all added at once (one add() each, as the watcher does) to a worker with the release
  // worker's concurrency (32): latency from the burst's start to each job's finish, and throughput
  const burst = new Worker(name, async () => undefined, { connection: redisOptions(REDIS_URL, true), prefix: PREFIX, concurrency: 32 });
  cleanup.add(`close burst worker ${name}`, () => burst.close());
  await burst.waitUntilReady();
  const finishedAt: number[] = [];
  const all = new Promise<void>((r) => burst.on('completed', () => finishedAt.push(Date.now()) === trips && r()));
  const t0 = Date.now();
  await Promise.all(Array.from({ length: trips }, (_, i) => queue.add('noop', { i }, { jobId: `b-${i}`, removeOnComplete: true })));
  await all;
  await burst.close();
  const lat = finishedAt.map((t) => t - t0);
  return {
    p50: median(rts),
    p99: quantile(rts, 0.99),
    rate: (trips * 1000) / (Math.max(...finishedAt) - t0),
    burstP50: median(lat),
    burstP99: quantile(lat, 0.99),
  };
}

/**
 * The file system's floor for a burst of releases: per task, what a durable latch cannot do without — the
 * cooperative lock (exclusive create, unlink), one read, a temp file written and fsynced, a rename, a
 * directory fsync — done plainly, 32 at a time, on ~1 KB files in the same file system as the task files.
 * On a shared box this floor moves with everyone else's file system work (ext4's journal is shared).
 */
async function fsFloor(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sunset-fs-floor-'));
  try {
    writeFloorFiles(dir, n);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const done: number[] = []; // each latch's finish, from the start: the floor's latency, as the burst's is measured
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < n) {
          await plainLatch(dir, next++);
          done.push(performance.now() - t0);
        }
      }),
    );
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { rate: (n * 1000) / wall, p50: median(done), p99: quantile(done, 0.99), userMs: c.user / 1000 / n, sysMs: c.system / 1000 / n };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type FsFloor = Awaited<ReturnType<typeof fsFloor>>;

function writeFloorFiles(dir: string, n: number): void {
  const body = Buffer.from(`${JSON.stringify({ id: 'x', state: 'done', notes: NOTES }, null, 2)}\n`);
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `f-${i}.json`), body);
}

const cb = <T>(f: (done: (err: Error | null, v?: T) => void) => void) =>
  new Promise<T>((res, rej) => f((err, v) => (err ? rej(err) : res(v as T))));

/** One plain durable latch of `f-<i>.json` in dir: the lock file created and removed, a read, a temp file written and fsynced, a rename, the folder fsynced. */
async function plainLatch(dir: string, i: number): Promise<void> {
  const file = join(dir, `f-${i}.json`);
  const lock = join(dir, `.f-${i}.json.lock`);
  const lfd = await cb<number>((d) => fsOpen(lock, 'wx', 0o644, d));
  closeSync(lfd);
  const text = readFileSync(file);
  const tmp = join(dir, `.f-${i}.json.tmp`);
  const fd = await cb<number>((d) => fsOpen(tmp, 'wx', 0o600, d));
  await cb<number>((d) => fsWrite(fd, text, 0, text.length, null, d));
  await cb<void>((d) => fsFsync(fd, d));
  renameSync(tmp, file);
  closeSync(fd);
  const dfd = openSync(dir, 'r');
  await cb<void>((d) => fsFsync(dfd, d));
  closeSync(dfd);
  unlinkSync(lock);
}

/**
 * The release path's own floor, with no sunset in it: n BullMQ jobs added at once to a worker of the release
 * worker's concurrency (32), each making one plain durable latch (plainLatch) and adding one delayed job to a
 * second queue (the ask). Printed beside the burst as information: how near sunset comes to its design's floor
 * (the target compares it with the two floors apart, each the larger of which alone is less than their sum).
 */
async function designFloor(n: number, cleanup: Cleanup) {
  const dir = mkdtempSync(join(tmpdir(), 'sunset-design-floor-'));
  const name = `bench-design@${uniqueHost()}`;
  const queue = new Queue(name, { connection: redisOptions(REDIS_URL), prefix: PREFIX });
  const asks = new Queue(`${name}-ask`, { connection: redisOptions(REDIS_URL), prefix: PREFIX });
  cleanup.add(`obliterate ${name}`, async () => {
    for (const q of [queue, asks]) {
      await q.obliterate({ force: true });
      await q.close();
    }
  });
  try {
    writeFloorFiles(dir, n);
    const finishedAt: number[] = [];
    let t0 = 0;
    let resolveAll: () => void = () => undefined;
    const all = new Promise<void>((r) => (resolveAll = r));
    const worker = new Worker(
      name,
      async (job: Job) => {
        await plainLatch(dir, job.data.i as number);
        finishedAt.push(performance.now() - t0);
        if (finishedAt.length === n) resolveAll();
        await asks.add('ask', { i: job.data.i }, { jobId: `ask-${job.data.i}`, delay: H, removeOnComplete: true });
      },
      { connection: redisOptions(REDIS_URL, true), prefix: PREFIX, concurrency: 32 },
    );
    cleanup.add(`close worker ${name}`, () => worker.close());
    await worker.waitUntilReady();
    t0 = performance.now();
    await Promise.all(Array.from({ length: n }, (_, i) => queue.add('release', { i }, { jobId: `r-${i}`, removeOnComplete: true })));
    await all;
    const wall = Math.max(...finishedAt);
    await worker.close();
    return { rate: (n * 1000) / wall, p50: median(finishedAt), p99: quantile(finishedAt, 0.99) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------ burst

/** CPU ticks (user + system) of this process's main thread: what the event loop itself spent (cpuUsage counts every thread). */
const TICKS_PER_S = 100;
function mainThreadTicks(): number {
  const st = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** How many of a kind of event name tasks whose id starts with prefix. */
function countFor(sink: EventSink, kind: string, prefix: string): number {
  return (sink.seen.get(kind) ?? []).filter((e) => String(e.line.taskId).startsWith(prefix)).length;
}

async function burstBench(n: number, trickle: number, cleanup: Cleanup, afterBurst: () => Promise<FsFloor>) {
  const fleet = await TestFleet.create();
  cleanup.add('destroy the burst fleet', () => fleet.destroy());
  const body = (id: string, state: string, sessionId: string) => ({
    id,
    state,
    sessionId,
    title: `burst task ${id}`,
    notes: NOTES,
    createdAt: new Date(Date.now() - H).toISOString(),
  });
  const burstIds = Array.from({ length: n }, (_, i) => `burst-${String(i).padStart(4, '0')}`);
  const trickleIds = Array.from({ length: trickle }, (_, i) => `trickle-${String(i).padStart(4, '0')}`);
  const ids = [...burstIds, ...trickleIds];
  const sessions = new Map(ids.map((id) => [id, randomUUID()]));
  for (const id of ids) fleet.writeTask(body(id, 'active', sessions.get(id)!));
  const config = benchConfig(fleet, { grace: '1h' });
  const sink = new EventSink(['task:released']);
  await startInProcess(config, sink, cleanup);

  // the finished versions wait as dot-files (ignored by the watcher), then go in by rename
  const tmp = (id: string) => join(fleet.tasksDir, `.${id}.json.burst`);
  for (const id of ids)
    writeFileSync(
      tmp(id),
      `${JSON.stringify({ ...body(id, 'done', sessions.get(id)!), stateChangedAt: new Date().toISOString() }, null, 2)}\n`,
    );
  await sleep(300);
  const wrote = new Map<string, number>();
  const finish = (id: string) => {
    renameSync(tmp(id), join(fleet.tasksDir, `${id}.json`));
    wrote.set(id, Date.now());
  };
  const latencies = (list: string[]) => {
    const onDisk = new Map<string, number>(); // when the release was on disk: logged right after the latch's rename + fsync
    for (const e of sink.seen.get('task:released') ?? []) onDisk.set(e.line.taskId, e.at);
    const disk: number[] = [];
    const field: number[] = [];
    let last = 0;
    for (const id of list) {
      const released = Date.parse(JSON.parse(readFileSync(join(fleet.tasksDir, `${id}.json`), 'utf8')).releasedAt);
      const w = wrote.get(id)!;
      const d = onDisk.get(id);
      if (!Number.isFinite(released) || d === undefined) throw new Error(`pipeline bench: ${id} has no releasedAt on disk`);
      field.push(released - w);
      disk.push(d - w);
      last = Math.max(last, d);
    }
    return { disk, field, last };
  };

  // the burst: every file at once
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadTicks();
  const all = await profiled('burst', async () => {
    for (const id of burstIds) finish(id);
    return waitFor(() => countFor(sink, 'task:released', 'burst-') >= n, 120_000, 50);
  });
  if (!all) throw new Error(`pipeline bench: only ${countFor(sink, 'task:released', 'burst-')}/${n} tasks released within 120 s`);
  const cpu = process.cpuUsage(cpu0);
  const mainMs = ((mainThreadTicks() - main0) * 1000) / TICKS_PER_S;
  const writes = burstIds.map((id) => wrote.get(id)!);
  const first = Math.min(...writes);
  const b = latencies(burstIds);

  // the file system floor again, at once: the disk as the burst left it (before the trickle and the teardown add to it)
  const after = await afterBurst();

  // the trickle: one file every 20 ms (50 tasks/s), the latency of a release when nothing queues
  await sleep(1000);
  for (const id of trickleIds) {
    finish(id);
    await sleep(20);
  }
  if (!(await waitFor(() => countFor(sink, 'task:released', 'trickle-') >= trickle, 60_000, 50)))
    throw new Error('pipeline bench: the trickle was not released within 60 s');
  const t = latencies(trickleIds);
  return {
    p50: median(b.disk),
    p99: quantile(b.disk, 0.99),
    fieldP50: median(b.field),
    fieldP99: quantile(b.field, 0.99),
    rate: (n * 1000) / (b.last - first),
    spanMs: b.last - first,
    burstWriteMs: Math.max(...writes) - first,
    cpuMsPerTask: (cpu.user + cpu.system) / 1000 / n,
    userMsPerTask: cpu.user / 1000 / n,
    sysMsPerTask: cpu.system / 1000 / n,
    mainMsPerTask: mainMs / n,
    trickleP50: median(t.disk),
    trickleP99: quantile(t.disk, 0.99),
    after,
  };
}

// ------------------------------------------------------------------------------------------ lateness

async function latenessBench(n: number, cleanup: Cleanup) {
  const fleet = await TestFleet.create();
  cleanup.add('destroy the lateness fleet', () => fleet.destroy());
  const live = await fleet.spawnLight(n, { transcriptAgeMs: 2 * H });
  const grace = 3000;
  const config = benchConfig(fleet, { grace, silence: '15m', askWait: '1h' });
  const sink = new EventSink(['exit:asked', 'task:released']);
  const running = await startInProcess(config, sink, cleanup);

  // One round: n tasks finish (spaced spacingMs apart, or all at once), each on its own session; a later
  // round's tasks supersede the earlier ones on the same sessions.
  const round = async (prefix: string, spacingMs: number) => {
    const ids = live.map((_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
    const cpu0 = process.cpuUsage();
    const kids0 = childCount();
    const t0 = Date.now();
    const all = await profiled(`lateness-${prefix}`, async () => {
      for (let i = 0; i < n; i++) {
        fleet.writeTask({
          id: ids[i],
          state: 'done',
          sessionId: live[i].sessionId,
          title: `finished ${ids[i]}`,
          notes: NOTES,
          stateChangedAt: new Date().toISOString(),
        });
        if (spacingMs) await sleep(spacingMs);
      }
      return waitFor(() => countFor(sink, 'exit:asked', `${prefix}-`) >= n, grace + 180_000, 100);
    });
    const kids = childCount() - kids0;
    console.log(
      `  (${prefix}: ${countFor(sink, 'exit:asked', `${prefix}-`)}/${n} asked in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${kids} child processes ≈ ${Math.round(kids / 2)} sweeps)`,
    );
    if (!all)
      throw new Error(
        `pipeline bench: only ${countFor(sink, 'exit:asked', `${prefix}-`)}/${n} sessions asked within ${grace / 1000 + 180} s`,
      );
    const cpu = process.cpuUsage(cpu0);
    const fired: number[] = [];
    const acted: number[] = [];
    for (const id of ids) {
      const t = JSON.parse(readFileSync(join(fleet.tasksDir, `${id}.json`), 'utf8'));
      const due = Date.parse(t.releasedAt) + grace;
      acted.push(Date.parse(t.exitAskedAt) - due);
      const job = await running.deps.producers.ask.queue.getJob(exitAskId(id));
      if (job?.processedOn) fired.push(job.processedOn - due);
    }
    return { fired, acted, cpuMsPerTask: (cpu.user + cpu.system) / 1000 / n };
  };
  const spread = await round('spread', Math.round(10_000 / n));
  await sleep(1000);
  const together = await round('together', 0);
  return { n, spread, together };
}

// ------------------------------------------------------------------------------------------ idle

export function procSample(pid: number): { cpuTicks: number; childTicks: number; rssBytes: number; anonBytes: number; fileBytes: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields 14-17 (utime, stime, cutime, cstime) are f[11..14]
  const cpuTicks = Number(f[11]) + Number(f[12]);
  const childTicks = Number(f[13]) + Number(f[14]);
  const rssBytes = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * pageBytes();
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { cpuTicks, childTicks, rssBytes, anonBytes: kb('RssAnon'), fileBytes: kb('RssFile') };
}

/** CPU ticks per thread, by thread name (node's main thread, V8's GC helpers, libuv's pool): where idle CPU goes. */
export function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')).replace(/\d+$/, '#');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
    } catch {
      /* a thread that ended */
    }
  }
  return out;
}

/** "main 0.40 %, V8Worker# 0.30 %, …": the threads' share of one core between two threadTicks samples. */
export function threadShares(a: Map<string, number>, b: Map<string, number>, wallS: number): string {
  return [...b]
    .map(([k, v]) => [k, (v - (a.get(k) ?? 0)) / wallS] as const)
    .filter(([, pct]) => pct > 0)
    .sort((x, y) => y[1] - x[1])
    .map(([k, pct]) => `${k} ${pct.toFixed(2)} %`)
    .join(', ');
}

/** The RSS floor: a bare `node` that only waits, measured the same way. */
export async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    await sleep(1500);
    return procSample(child.pid!).rssBytes;
  } finally {
    child.kill('SIGKILL'); // our own child
  }
}

/**
 * The idle floor, measured over the same window as sunset: a node with sunset's node options that only waits.
 * `start()` when the window opens, `end()` when it closes: its RSS then and its CPU over the window.
 */
export function bareNode(cleanup: Cleanup): { start: () => void; end: () => { rssBytes: number; cpuPct: number } } {
  const child = spawn(process.execPath, [...shebangFlags(CLI), '-e', 'setInterval(() => {}, 1 << 30)'], {
    stdio: 'ignore',
    env: shebangEnv(CLI),
  });
  cleanup.add(`stop the bare node (pid ${child.pid})`, () => void child.kill('SIGKILL')); // our own child
  let a = { t: Date.now(), ticks: 0 };
  return {
    start: () => (a = { t: Date.now(), ticks: procSample(child.pid!).cpuTicks }),
    end: () => {
      const b = procSample(child.pid!);
      const wall = (Date.now() - a.t) / 1000;
      child.kill('SIGKILL');
      return { rssBytes: b.rssBytes, cpuPct: (b.cpuTicks - a.ticks) / wall };
    },
  };
}

/** When the stand-in `claude agents` ran (the test fleet logs each call). */
function rosterCalls(fleet: TestFleet): number[] {
  try {
    return readFileSync(join(fleet.registryDir, 'roster-calls.log'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function idleBench(size: { live: number; records: number; tasks: number }, seconds: number, cleanup: Cleanup) {
  const fleet = await TestFleet.create();
  cleanup.add('destroy the idle fleet', () => fleet.destroy());
  // the census fleet (the sweep bench's): its finished tasks wait out long windows, so nothing falls due
  await buildFleet(fleet, size);
  const host = uniqueHost();
  const raw = {
    host,
    redisUrl: REDIS_URL,
    windows: { grace: '24h', askWait: '24h', retryWait: '24h', reconcileEvery: '5m', expireEvery: '30m' },
    web: { port: 0 },
    log: { level: 'info' },
  };
  const file = fleet.writeConfig(raw);
  console.log(`  (sunset up, every role, as a child; host ${host})`);
  const config = parseConfig(fleet.config(raw), { env: {} });
  cleanup.add(`obliterate queues of ${host}`, () => obliterateHost(config));

  // run as the `sunset` command runs: with the node options of its shebang (src/cli.ts: a small young
  // generation); BENCH_UP_NODE_ARGS adds more, to try others
  const nodeArgs = [...shebangFlags(CLI), ...(process.env.BENCH_UP_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, CLI, 'up', '--config', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...shebangEnv(CLI), REDIS_URL },
  });
  const pid = child.pid;
  if (!pid) throw new Error('pipeline bench: could not start sunset up');
  let stderr = '';
  const upLog = process.env.BENCH_UP_LOG; // the child's log lines, whole, for investigating
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
    if (upLog) appendFileSync(upLog, d);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  cleanup.add(`stop sunset up (pid ${pid})`, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM'); // our own child: sunset up closes its workers and queues on SIGTERM
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  });

  // settled: the first reconcile (which schedules every chain's next step) and expire scan are done
  const producers = createProducers(config, redisOptions(REDIS_URL));
  cleanup.add('close the idle probes', () => Promise.all(Object.values(producers).map((p) => p.close())));
  const settled = await waitFor(
    async () =>
      child.exitCode === null &&
      (await producers.expire.queue.getCompletedCount()) >= 1 &&
      (await producers.reconcile.queue.getCompletedCount()) >= 1,
    120_000,
    250,
  );
  const sessions = size.live;
  if (!settled) throw new Error(`pipeline bench: sunset up did not settle within 120 s (exit ${child.exitCode}); stderr:\n${stderr}`);
  // and the fleet sampler's first census (docs/sampler.md: min(sampleEvery, 60 s) after start), a start-up
  // event like the first reconcile; later ones come every sampleEvery (5 min), outside a 60 s window
  const samples = join(config.stateDir, 'samples.jsonl');
  const pre = procSample(pid);
  const preAt = Date.now();
  const census = await waitFor(() => existsSync(samples) && statSync(samples).size > 0, 90_000, 500);
  // at rest: start-up over, its garbage collected too (V8's memory reducer shrinks the heap ~8 s after the first
  // reconcile's 10,000 reads and ~1,900 latches). The window opens once the process has used ≤ 1 % of a core over
  // the last 5 s and its RSS has moved less than 1 MB over the last 10 s; start-up's peak RSS is printed apart.
  let startupPeak = procSample(pid).rssBytes;
  const seen: Array<{ ticks: number; rss: number }> = [];
  const quietFrom = Date.now();
  let quiet = false;
  while (Date.now() - quietFrom < 120_000) {
    await sleep(1000);
    const s = procSample(pid);
    startupPeak = Math.max(startupPeak, s.rssBytes);
    seen.push({ ticks: s.cpuTicks, rss: s.rssBytes });
    const k = seen.length - 1;
    if (k >= 10 && seen[k].ticks - seen[k - 5].ticks <= 5 && Math.abs(seen[k].rss - seen[k - 10].rss) < 1024 * 1024) {
      quiet = true;
      break;
    }
  }
  const quietAfterS = (Date.now() - quietFrom) / 1000;
  if (upLog) appendFileSync(upLog, `{"bench":"idle window starts","time":"${new Date().toISOString()}"}\n`);
  const a = procSample(pid);
  const threadsA = threadTicks(pid);
  const floorNode = bareNode(cleanup);
  floorNode.start();
  // what the census (one sweep of the fleet) cost, less the idle baseline over the same time: work that
  // recurs every sampleEvery, like the reconcile pass every reconcileEvery
  const censusCpuMs = (a.cpuTicks + a.childTicks - pre.cpuTicks - pre.childTicks) * 10;
  const censusWaitS = (Date.now() - preAt) / 1000;
  const t0 = Date.now();
  const callsBefore = rosterCalls(fleet).length;
  const reconcilesBefore = await producers.reconcile.queue.getCompletedCount();
  let peak = a.rssBytes;
  while (Date.now() - t0 < seconds * 1000) {
    await sleep(Math.min(5000, seconds * 1000 - (Date.now() - t0)));
    peak = Math.max(peak, procSample(pid).rssBytes);
  }
  const b = procSample(pid);
  const wall = (Date.now() - t0) / 1000;
  const threads = threadShares(threadsA, threadTicks(pid), wall);
  const calls = rosterCalls(fleet).length - callsBefore;
  const reconciles = (await producers.reconcile.queue.getCompletedCount()) - reconcilesBefore;
  const tck = 100;
  const bareEnd = floorNode.end();
  const bare = bareEnd.rssBytes;
  return {
    bareCpuPct: bareEnd.cpuPct,
    census,
    censusCpuMs,
    censusWaitS,
    bare,
    anon: b.anonBytes,
    file: b.fileBytes,
    nodeArgs: [...shebang(CLI).env, ...nodeArgs], // as it ran: the shebang's environment, then node's options
    startupPeak,
    quiet,
    quietAfterS,
    rssStart: a.rssBytes,
    rssEnd: b.rssBytes,
    rssPeak: peak,
    sessions,
    calls,
    reconciles,
    cpuPct: (((b.cpuTicks - a.cpuTicks) / tck) * 100) / wall,
    childCpuPct: (((b.childTicks - a.childTicks) / tck) * 100) / wall,
    threads,
    wall,
  };
}

// ------------------------------------------------------------------------------------------ all

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;

export async function benchPipeline(o: PipelineOptions = {}): Promise<Figure[]> {
  const n = o.burst ?? 1000;
  const late = o.late ?? 300;
  const trickle = o.trickle ?? 200;
  const idleSize = { live: o.idleSessions ?? 300, records: 2000, tasks: 10_000 };
  const idleSeconds = o.idleSeconds ?? 600;
  const trips = o.floorTrips ?? 1000;
  const want = (p: string) => !o.only?.length || o.only.includes(p);
  const figures: Figure[] = [];
  const out = (f: Figure) => {
    figures.push(f);
    printFigure(f);
  };
  console.log(`\n== pipeline: Redis ${REDIS_URL.replace(/\/\/[^@]*@/, '//')}, load ${load()} ==`);

  const cleanup = new Cleanup();
  try {
    let floor = { p50: NaN, p99: NaN, rate: NaN, burstP50: NaN, burstP99: NaN };
    if (want('floor') || want('burst')) {
      floor = await rawFloor(trips, cleanup);
      await cleanup.run();
      out({
        bench: 'pipeline',
        name: `raw BullMQ add→finish (${trips}, one at a time)`,
        value: `p50 ${ms(floor.p50)} ms, p99 ${ms(floor.p99)} ms; ${trips} at once (concurrency 32): p50 ${ms(floor.burstP50)} ms, p99 ${ms(floor.burstP99)} ms, ${Math.round(floor.rate)} jobs/s`,
        target: '',
        pass: null,
      });
      console.log(`  [load ${load()}]`);
    }

    if (want('burst')) {
      const fsf = await fsFloor(n);
      console.log(
        `file system floor: ${n} plain durable latches (lock create + unlink, read, temp write + fsync, rename, dir fsync), 32 at a time: ` +
          `${Math.round(fsf.rate)}/s, p50 ${ms(fsf.p50)} ms, p99 ${ms(fsf.p99)} ms; CPU ${ms(fsf.userMs)} ms user + ${ms(fsf.sysMs)} ms system each [load ${load()}]`,
      );
      // The file system floor again, as soon as the burst is over. On a file system where creating a file costs more
      // the more files were deleted in the last minutes (ext4 without a journal: docs/benchmarks.md), the floor measured
      // first ran on a disk the bench had not yet churned, and the burst on one it had (the floor's own latches and the
      // burst's renames free some 4,000 inodes between them): the floor the burst is judged by is the mean of the two,
      // which bracket it. Both are printed.
      const b = await burstBench(n, trickle, cleanup, () => fsFloor(n));
      await cleanup.run();
      const after = b.after;
      const fsP99 = (fsf.p99 + after.p99) / 2;
      const fsRate = (fsf.rate + after.rate) / 2;
      console.log(
        `  (the file system floor again, as soon as the burst was over: ${Math.round(after.rate)}/s, p50 ${ms(after.p50)} ms, p99 ${ms(after.p99)} ms; ` +
          `the two bracket the burst, their arithmetic mean: ${Math.round(fsRate)}/s, p99 ${ms(fsP99)} ms. Each plain latch creates two files, ` +
          `a lock and a temp file; sunset's one, its lock file holding the new text)`,
      );
      // issue 15: p99 within twice the larger floor of the same run (BullMQ's burst, or the file system's latches)
      const floorP99 = Math.max(floor.burstP99, fsP99);
      out({
        bench: 'pipeline',
        name: `burst of ${n}: write → released on disk`,
        value: `p50 ${ms(b.p50)} ms, p99 ${ms(b.p99)} ms`,
        floor: `BullMQ burst p99 ${ms(floor.burstP99)} ms; ${n} plain durable latches p99 ${ms(fsP99)} ms (${ms(fsf.p99)} before, ${ms(after.p99)} after)`,
        target: `p99 ≤ 2 × ${ms(floorP99)} ms`,
        pass: b.p99 <= 2 * floorP99,
      });
      console.log(
        `  (from the releasedAt field: p50 ${ms(b.fieldP50)} ms, p99 ${ms(b.fieldP99)} ms; the ${n} renames took ${b.burstWriteMs} ms; ` +
          `sunset's CPU ${ms(b.cpuMsPerTask)} ms per task: ${ms(b.userMsPerTask)} user + ${ms(b.sysMsPerTask)} system, ${ms(b.mainMsPerTask)} of it on the main thread) [load ${load()}]`,
      );
      out({
        bench: 'pipeline',
        name: `burst of ${n}: throughput`,
        value: `${Math.round(b.rate)} tasks/s (${n} in ${b.spanMs} ms)`,
        floor: `BullMQ ${Math.round(floor.rate)} jobs/s; file system ${Math.round(fsRate)}/s (${Math.round(fsf.rate)} before, ${Math.round(after.rate)} after)`,
        target: '≥ 500 tasks/s',
        pass: b.rate >= 500,
      });
      // information beside the figures above: the release path's own floor (BullMQ jobs that each make a plain
      // latch and add the ask; no sunset in it), measured last, on the disk as the burst left it
      const design = await designFloor(n, cleanup);
      await cleanup.run();
      out({
        bench: 'pipeline',
        name: `release path floor: ${n} BullMQ jobs, each a plain durable latch + a delayed add`,
        value: `p50 ${ms(design.p50)} ms, p99 ${ms(design.p99)} ms, ${Math.round(design.rate)}/s`,
        floor: `sunset's burst above reached ${Math.round((100 * b.rate) / design.rate)} % of its rate`,
        target: '',
        pass: null,
      });
      out({
        bench: 'pipeline',
        name: `trickle of ${trickle} at 50/s: write → released on disk`,
        value: `p50 ${ms(b.trickleP50)} ms, p99 ${ms(b.trickleP99)} ms`,
        floor: `BullMQ p99 ${ms(floor.p99)} ms`,
        target: 'p99 < 250 ms',
        pass: b.trickleP99 < 250,
      });
    }

    if (want('lateness')) {
      const l = await latenessBench(late, cleanup);
      await cleanup.run();
      for (const [what, r] of [
        [`${l.n} due over 10 s`, l.spread],
        [`${l.n} due at once`, l.together],
      ] as const) {
        const p99 = quantile(r.fired, 0.99);
        out({
          bench: 'pipeline',
          name: `ask lateness after releasedAt + grace, ${what}`,
          value: `fired p50 ${ms(median(r.fired))} ms, p99 ${ms(p99)} ms; acted (exitAskedAt) p99 ${ms(quantile(r.acted, 0.99))} ms`,
          target: 'p99 ≤ 1000 ms (fired)',
          pass: p99 <= 1000,
        });
        console.log(`  (sunset's CPU ${ms(r.cpuMsPerTask)} ms per task, release and ask) [load ${load()}]`);
      }
    }

    if (want('idle')) {
      const idle = await idleBench(idleSize, idleSeconds, cleanup);
      await cleanup.run();
      out({
        bench: 'pipeline',
        name: `idle RSS, sunset up (compiled, every role) on the census fleet (${idleSize.live} live, ${idleSize.records} records, ${idleSize.tasks} tasks)`,
        value:
          `peak ${mb(idle.rssPeak)} (the figure judged; start ${mb(idle.rssStart)}, end ${mb(idle.rssEnd)}; anon ${mb(idle.anon)}, file ${mb(idle.file)}; ` +
          `start-up's peak before the window ${mb(idle.startupPeak)}, the window opened ${idle.quietAfterS.toFixed(0)} s after the first census${idle.quiet ? ', once quiet' : ', not quiet within 120 s'})` +
          `${idle.nodeArgs.length ? ` with ${idle.nodeArgs.join(' ')}` : ''}`,
        floor: `a bare node with sunset's node options ${mb(idle.bare)}`,
        target: '≤ 100 MB at its peak',
        pass: idle.rssPeak <= 100 * 1024 * 1024,
      });
      out({
        bench: 'pipeline',
        name: `idle CPU over ${Math.round(idle.wall)} s`,
        value: `${idle.cpuPct.toFixed(2)} % (+ ${idle.childCpuPct.toFixed(2)} % in child processes)${idle.census ? ', after the first census' : ', no census seen'}; by thread (each read apart): ${idle.threads || 'none'}`,
        floor: `a bare node with sunset's node options, the same window: ${idle.bareCpuPct.toFixed(2)} %`,
        target: '≤ 0.5 %, own + children',
        pass: idle.cpuPct + idle.childCpuPct <= 0.5,
      });
      out({
        bench: 'pipeline',
        name: `idle roster calls over ${Math.round(idle.wall)} s`,
        value: `${idle.calls} (reconcile passes in that time: ${idle.reconciles})${idle.reconciles === 0 ? ' — no reconcile pass fell in this window: the check is empty (use --idle-seconds ≥ 300)' : ''}`,
        floor: 'one per reconcile pass',
        target: '≤ reconcile passes',
        pass: idle.reconciles === 0 && idle.calls === 0 ? null : idle.calls <= idle.reconciles,
      });
      if (idle.census) {
        const base = (idle.cpuPct + idle.childCpuPct) / 100;
        const sweepCpu = Math.max(0, idle.censusCpuMs / 1000 - base * idle.censusWaitS);
        console.log(
          `  (the first census, a start-up sweep before the window, cost ≈ ${(sweepCpu * 1000).toFixed(0)} ms CPU with its children; in the window, ` +
            `${idle.reconciles} reconcile ${idle.reconciles === 1 ? 'pass' : 'passes'}, the census riding on them)`,
        );
      }
      console.log(`  [load ${load()}]`);
    }
    return figures;
  } finally {
    await cleanup.run();
  }
}

/** The node options in a script's `#!/usr/bin/env -S node …` line. */
export function shebangFlags(file: string): string[] {
  return shebang(file).flags;
}

/** The environment the shebang sets (`env -S NAME=value … node …`), over this process's: sunset's children run in it. */
export function shebangEnv(file: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, ...Object.fromEntries(shebang(file).env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])) };
}

function shebang(file: string): { env: string[]; flags: string[] } {
  const first = readFileSync(file, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S ((?:[A-Z_][A-Z0-9_]*=\S* )*)node (.*)$/.exec(first);
  return m ? { env: m[1].split(' ').filter(Boolean), flags: m[2].split(' ').filter(Boolean) } : { env: [], flags: [] };
}
