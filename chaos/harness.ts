// What every chaos scenario shares: a real `sunset up` child process (which the harness may kill -9: it is
// the harness's own process), a roster call counter, a task-file monitor that catches lost fields and
// latches moving back, and the measurements of the chaos table.
import { readAudit } from '../src/store/audit.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { TestFleet } from '../sim/fleet/fleet.js';

// chaos/ run by tsx or vitest, or its compiled copy in dist/chaos/ (tsconfig.json type-checks and emits it)
const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, basename(dirname(HERE)) === 'dist' ? '../..' : '..');
export const CLI = join(ROOT, 'dist', 'src', 'cli.js');
export const H = 3_600_000;

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`chaos: ${CLI} is missing; run \`npm run build\` first (npm run chaos does)`);
}

// ------------------------------------------------------------------------------------------ time

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll until cond() holds; throws naming what it waited for when the deadline passes. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 60_000, every = 25): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what}`);
    await sleep(every);
  }
}

/** A small seeded PRNG (mulberry32): the printed seed replays a run's random points. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ------------------------------------------------------------------------------------------ sunset up

/** The compressed windows every scenario runs on (DESIGN §5 in milliseconds). */
export const CHAOS_WINDOWS = {
  grace: 150,
  silence: 100,
  askWait: 250,
  retryWait: 250,
  exitConfirm: 1000,
  expireIdle: '48h',
  reconcileEvery: 1000,
  recheck: 200,
};

/** sunset's config for a fleet, with the roster wrapped so that every roster call is counted. */
export function chaosConfig(
  fleet: TestFleet,
  o: { host: string; redisUrl?: string; redisCluster?: string[]; windows?: Record<string, unknown>; extra?: Record<string, unknown> },
): Record<string, any> {
  return fleet.config({
    host: o.host,
    ...(o.redisUrl ? { redisUrl: o.redisUrl } : {}),
    ...(o.redisCluster ? { redisCluster: o.redisCluster } : {}),
    // generous: a loaded CI box can take seconds to start the stand-in claude (a node process)
    probeTimeout: 10_000,
    exitRate: { max: 20, per: 100 },
    windows: { ...CHAOS_WINDOWS, ...(o.windows ?? {}) },
    log: { level: process.env.CHAOS_VERBOSE ? 'debug' : 'info' },
    ...(o.extra ?? {}),
    fleet: {
      rosterCommand: ['sh', '-c', 'echo >> "$0"; exec "$1" agents --json --all', rosterCountFile(fleet), fleet.claudeBin],
      ...((o.extra?.fleet as object) ?? {}),
    },
  });
}

export const rosterCountFile = (fleet: TestFleet) => join(fleet.root, 'roster-calls');

/** How many times sunset has run the roster command. */
export function rosterCalls(fleet: TestFleet): number {
  try {
    return readFileSync(rosterCountFile(fleet), 'utf8').length;
  } catch {
    return 0;
  }
}

/** Wait until sunset has run the roster at least n more times than now (each a sweep that saw the fleet as it is). */
export async function sweeps(fleet: TestFleet, n: number, ms = 180_000): Promise<void> {
  const from = rosterCalls(fleet);
  await until(`${n} roster calls`, () => rosterCalls(fleet) >= from + n, ms);
}

/** A real `sunset up` process (node dist/src/cli.js up --config FILE), its JSON log lines parsed. */
export class SunsetProc {
  readonly child: ChildProcess;
  readonly events: Array<Record<string, any>> = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private buf = '';

  constructor(cfgFile: string, o: { roles?: string[]; cwd?: string; args?: string[]; env?: NodeJS.ProcessEnv } = {}) {
    const roles = (o.roles ?? ['producers', 'workers']).flatMap((r) => ['--role', r]);
    const env = { ...process.env };
    delete env.REDIS_URL; // the config names this run's Redis
    delete env.SUNSET_CONFIG;
    Object.assign(env, o.env);
    this.child = spawn(process.execPath, [CLI, 'up', ...roles, '--config', cfgFile, ...(o.args ?? [])], {
      cwd: o.cwd,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.exited = new Promise((r) => this.child.once('exit', (code, signal) => r({ code, signal })));
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (d: string) => {
      this.buf += d;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (!line.trim()) continue;
        try {
          this.events.push(JSON.parse(line));
        } catch {
          this.stderr.push(line);
        }
      }
    });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  count(event: string): number {
    return this.events.filter((e) => e.event === event).length;
  }

  /** The harness crashing its own sunset process. */
  async kill9(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** A clean stop (what systemd or Ctrl-C does): it must close everything and exit by itself. */
  async stop(ms = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    const t0 = Date.now();
    if (!this.alive) return { ...(await this.exited), ms: 0 };
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    const r = await this.exited;
    clearTimeout(timer);
    return { ...r, ms: Date.now() - t0 };
  }
}

// ------------------------------------------------------------------------------------------ task files

const LATCHED = ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitRequests', 'exitedAt', 'exitGaveUpAt'];
const SET_ONCE = ['releasedAt', 'exitAskedAt', 'exitedAt', 'exitGaveUpAt'];

/**
 * Polls task files while a scenario runs. A valid task file must keep every field it was written with
 * (and every field it has shown since: another writer may add), its latches set once and never changed,
 * exitRequests only growing, exitRequestedAt moving only with it. An invalid one must keep its bytes.
 */
export class TaskMonitor {
  private readonly seen = new Map<string, Record<string, unknown>>();
  private readonly bytes = new Map<string, string>();
  private readonly forgotten = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  readonly problems: string[] = [];
  private reading = false;

  constructor(
    private readonly dir: string,
    /** Fields another writer owns and may change (the concurrent writer's counter). */
    private readonly foreign: ReadonlySet<string> = new Set(['counter', 'w0', 'w1', 'w2', 'w3', 'w4']),
  ) {}

  /** A valid task file the harness wrote, as it wrote it. */
  watch(id: string, obj: Record<string, unknown>): void {
    this.seen.set(id, { ...obj });
  }

  /** An invalid file: its bytes must never change. */
  watchBytes(name: string): void {
    this.bytes.set(name, hash(join(this.dir, name)));
  }

  /** The harness itself rewrites this file from now on (a fault): stop judging it. */
  forget(idOrName: string): void {
    this.forgotten.add(idOrName);
    this.seen.delete(idOrName);
    this.bytes.delete(idOrName);
  }

  start(everyMs = 40): void {
    this.timer = setInterval(() => this.poll(), everyMs);
  }

  stop(): string[] {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.poll();
    for (const [name, h] of this.bytes)
      if (hash(join(this.dir, name)) !== h) this.problems.push(`${name}: an invalid task file's bytes changed`);
    this.bytes.clear();
    return this.problems;
  }

  private poll(): void {
    if (this.reading) return;
    this.reading = true;
    try {
      for (const [id, prev] of this.seen) {
        if (this.forgotten.has(id)) continue;
        let now: Record<string, unknown>;
        try {
          now = JSON.parse(readFileSync(join(this.dir, `${id}.json`), 'utf8'));
        } catch (err: any) {
          this.problems.push(`${id}: unreadable mid-run (${err.code ?? err.message})`);
          this.seen.delete(id);
          continue;
        }
        for (const [k, v] of Object.entries(prev)) {
          if (!Object.hasOwn(now, k)) this.problems.push(`${id}: field ${k} lost`);
          else if (LATCHED.includes(k) || this.foreign.has(k)) continue;
          else if (!isDeepStrictEqual(now[k], v))
            this.problems.push(`${id}: field ${k} changed from ${JSON.stringify(v)} to ${JSON.stringify(now[k])}`);
        }
        for (const k of SET_ONCE)
          if (prev[k] !== undefined && now[k] !== undefined && now[k] !== prev[k])
            this.problems.push(`${id}: latch ${k} moved from ${prev[k]} to ${now[k]}`);
        const before = Number(prev.exitRequests ?? 0);
        const after = Number(now.exitRequests ?? 0);
        if (after < before) this.problems.push(`${id}: exitRequests went back from ${before} to ${after}`);
        if (after > 3) this.problems.push(`${id}: exitRequests is ${after}`);
        if (after === before && prev.exitRequestedAt !== undefined && now.exitRequestedAt !== prev.exitRequestedAt)
          this.problems.push(`${id}: exitRequestedAt moved without a request`);
        if (typeof now.counter === 'number' && typeof prev.counter === 'number' && now.counter < prev.counter)
          this.problems.push(`${id}: the other writer's counter went back`);
        this.seen.set(id, now);
      }
    } finally {
      this.reading = false;
    }
  }
}

function hash(file: string): string {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch (err: any) {
    return `unreadable: ${err.code ?? err.message}`;
  }
}

// ------------------------------------------------------------------------------------------ measuring

export type Expect = 'exit' | 'give-up' | 'spared' | 'paused';

/** A session in a scenario and what must become of it. */
export interface Subject {
  /** The roster id (what `claude stop` takes) and the session id the task names. */
  id: string;
  sessionId: string;
  pid: number;
  taskId: string | null;
  expect: Expect;
  /** For 'paused': requests it may have had before the fault (at most). */
  maxRequests?: number;
}

export interface Measure {
  exited: number;
  askedTwice: number;
  over3: number;
  alarmsTwice: number;
  fieldsLost: number;
  signals: number;
  spared: number;
  toSpare: number;
  unfinished: number;
  notes: string[];
}

export const emptyMeasure = (): Measure => ({
  exited: 0,
  askedTwice: 0,
  over3: 0,
  alarmsTwice: 0,
  fieldsLost: 0,
  signals: 0,
  spared: 0,
  toSpare: 0,
  unfinished: 0,
  notes: [],
});

export function addMeasure(a: Measure, b: Measure): Measure {
  return {
    exited: a.exited + b.exited,
    askedTwice: a.askedTwice + b.askedTwice,
    over3: a.over3 + b.over3,
    alarmsTwice: a.alarmsTwice + b.alarmsTwice,
    fieldsLost: a.fieldsLost + b.fieldsLost,
    signals: a.signals + b.signals,
    spared: a.spared + b.spared,
    toSpare: a.toSpare + b.toSpare,
    unfinished: a.unfinished + b.unfinished,
    notes: [...a.notes, ...b.notes],
  };
}

function jsonLines(file: string): Array<Record<string, any>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

function readJson(file: string): Record<string, any> | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** Everything the table counts, read from the fleet's registry, sunset's stateDir and the task files. */
export function observe(fleet: TestFleet, _subjects: Subject[]) {
  const reg = fleet.registryDir;
  const state = fleet.stateDir;
  const requests = jsonLines(join(reg, 'requests.jsonl'));
  const endedFiles = safeList(join(reg, 'ended')).filter((n) => n.endsWith('.json') && !n.startsWith('.'));
  const audit = readAudit(state) as Array<Record<string, any>>;
  const alarms = jsonLines(join(state, 'alarms.jsonl'));
  const exits = safeList(join(state, 'exits'))
    .filter((n) => n.endsWith('.json'))
    .map((n) => readJson(join(state, 'exits', n)))
    .filter((r): r is Record<string, any> => r !== null);
  const requestsOf = (id: string) => requests.filter((r) => r.id === id).length;
  const endedOf = (id: string) => endedFiles.filter((n) => n.startsWith(`${id}-`) && /^\d+\.json$/.test(n.slice(id.length + 1))).length;
  const asksOf = (taskId: string) => audit.filter((e) => e.event === 'exit:asked' && e.taskId === taskId).length;
  const callsOf = (sessionId: string) => exits.filter((r) => r.sessionId === sessionId && r.calledAt).length;
  const askFilesOf = (sessionId: string) => {
    if (!sessionId || sessionId.includes('/') || sessionId === '.' || sessionId === '..') return 0;
    return safeList(join(fleet.inboxDir, sessionId)).filter((n) => n.startsWith('sunset-exit-ask-')).length;
  };
  const task = (id: string | null) => (id ? readJson(join(fleet.tasksDir, `${id}.json`)) : null);
  const alarmsFor = (s: Subject) =>
    alarms.filter((a) => (s.taskId && a.taskId === s.taskId) || (!a.taskId && a.sessionId === s.sessionId)).length;
  return { requests, endedFiles, audit, alarms, exits, requestsOf, endedOf, asksOf, callsOf, askFilesOf, task, alarmsFor };
}

/** Has every subject reached what it must (an exit, a give-up with its alarm)? Spared and paused ones are never "done" by themselves. */
export function finished(fleet: TestFleet, subjects: Subject[]): boolean {
  const o = observe(fleet, subjects);
  return subjects.every((s) => {
    if (s.expect === 'exit') return o.endedOf(s.id) > 0 && (!s.taskId || Boolean(o.task(s.taskId)?.exitedAt));
    if (s.expect === 'give-up') return Boolean(o.task(s.taskId)?.exitGaveUpAt) && o.alarmsFor(s) > 0;
    return true;
  });
}

/** The table's row for one run. */
export function measure(
  fleet: TestFleet,
  subjects: Subject[],
  monitorProblems: string[],
  extra: { fieldsLost?: number; notes?: string[] } = {},
): Measure {
  const o = observe(fleet, subjects);
  const m = emptyMeasure();
  m.exited = o.endedFiles.length;
  m.notes.push(...(extra.notes ?? []));
  // asked twice: more than one "ask" decision for a task, or more than one ask file for one task
  const taskIds = new Set(o.audit.filter((e) => e.event === 'exit:asked').map((e) => String(e.taskId)));
  for (const t of taskIds)
    if (o.asksOf(t) > 1) {
      m.askedTwice++;
      m.notes.push(`task ${t} asked ${o.asksOf(t)} times`);
    }
  // the ask file is written again only by a replay of the same ask (crash before its latch), with the time
  // then latched; an ask file newer than exitAskedAt is a second message
  for (const s of subjects) {
    if (!s.taskId || !s.sessionId || s.sessionId.includes('/') || s.sessionId === '..') continue;
    const file = readJson(join(fleet.inboxDir, s.sessionId, `sunset-exit-ask-${s.taskId}.json`));
    const askedAt = o.task(s.taskId)?.exitAskedAt;
    if (file && askedAt && file.at !== askedAt) {
      m.askedTwice++;
      m.notes.push(`task ${s.taskId}: ask file written at ${file.at}, asked at ${askedAt}`);
    }
  }
  // over 3 requests: received by an agent, latched on a task, or called by the exit worker
  const ids = new Set(o.requests.map((r) => String(r.id)));
  for (const id of ids)
    if (o.requestsOf(id) > 3) {
      m.over3++;
      m.notes.push(`session ${id} received ${o.requestsOf(id)} exit requests`);
    }
  for (const s of subjects) {
    const t = o.task(s.taskId);
    if (t && Number(t.exitRequests ?? 0) > 3) {
      m.over3++;
      m.notes.push(`task ${s.taskId} has exitRequests ${t.exitRequests}`);
    }
    if (o.callsOf(s.sessionId) > 3) {
      m.over3++;
      m.notes.push(`session ${s.id}: ${o.callsOf(s.sessionId)} exit calls`);
    }
  }
  // alarms twice: one kind and key, or one task, alarmed more than once
  const byKey = new Map<string, number>();
  for (const a of o.alarms)
    for (const k of [`${a.kind}|${a.key}`, ...(a.taskId ? [`${a.kind}|task|${a.taskId}`] : [])]) byKey.set(k, (byKey.get(k) ?? 0) + 1);
  for (const [k, n] of byKey)
    if (n > 1) {
      m.alarmsTwice++;
      m.notes.push(`alarm ${k} raised ${n} times`);
    }
  m.fieldsLost = monitorProblems.length + (extra.fieldsLost ?? 0);
  m.notes.push(...monitorProblems.slice(0, 5));
  m.signals = fleet.signals().length;
  if (m.signals) m.notes.push(`signals: ${JSON.stringify(fleet.signals().slice(0, 3))}`);
  for (const s of subjects) {
    const alive = isAlive(s.pid);
    const got = o.requestsOf(s.id);
    if (s.expect === 'spared') {
      m.toSpare++;
      const asked = o.askFilesOf(s.sessionId) > 0 || (s.taskId ? o.asksOf(s.taskId) > 0 : false);
      const ok = alive && got === 0 && o.endedOf(s.id) === 0 && !asked && o.callsOf(s.sessionId) === 0 && o.alarmsFor(s) === 0;
      if (ok) m.spared++;
      else
        m.notes.push(
          `${s.id} (${s.expect}) was not spared: alive ${alive}, requests ${got}, asked ${asked}, calls ${o.callsOf(s.sessionId)}, alarms ${o.alarmsFor(s)}`,
        );
    } else if (s.expect === 'paused') {
      m.toSpare++;
      if (alive && got <= (s.maxRequests ?? 0) && o.alarmsFor(s) === 0) m.spared++;
      else m.notes.push(`${s.id} (paused at ${s.maxRequests} requests) went on: alive ${alive}, requests ${got}, alarms ${o.alarmsFor(s)}`);
    } else if (s.expect === 'exit') {
      if (!(o.endedOf(s.id) > 0 && (!s.taskId || o.task(s.taskId)?.exitedAt))) {
        m.unfinished++;
        m.notes.push(`${s.id} did not exit (requests ${got})`);
      }
    } else if (s.expect === 'give-up') {
      const t = o.task(s.taskId);
      if (!t?.exitGaveUpAt || o.alarmsFor(s) !== 1 || !alive) {
        m.unfinished++;
        m.notes.push(`${s.id} did not end in one give-up alarm (gaveUp ${t?.exitGaveUpAt}, alarms ${o.alarmsFor(s)}, alive ${alive})`);
      }
    }
  }
  return m;
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const st = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return st !== 'Z' && st !== 'X';
  } catch {
    return false;
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Files anywhere under dir whose name starts with prefix (canaries a shell would have created). */
export function findFiles(dir: string, prefix: string, depth = 6): string[] {
  const out: string[] = [];
  const walk = (d: string, n: number) => {
    if (n < 0) return;
    for (const name of safeList(d)) {
      const p = join(d, name);
      if (name.startsWith(prefix)) out.push(p);
      try {
        if (statSync(p).isDirectory()) walk(p, n - 1);
      } catch {
        /* vanished */
      }
    }
  };
  walk(dir, depth);
  return out;
}
