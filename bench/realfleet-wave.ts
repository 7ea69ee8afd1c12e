// The exit wave (issue 28 item 7), on the real-fleet bench's fleet: about 73 % of the sessions' tasks turn done
// at once (22 of 30, 44 of 60), the rest stay active (their sessions must live on), exitRate 2/s, the windows
// compressed. Each finishing session is timed from its task closing to its process gone (no /proc entry, a
// zombie, or its pid reused): min/median/max, and the slowest against the floor — the configured windows
// (grace + askWait) plus the rate's spread ((finishing − 1) / rate). sunset's own CPU and its children's (the
// `claude` calls, tmux) per exit come from /proc of the `sunset up` child; sunset's log (its pino lines, kept in a
// file) and the exit jobs' BullMQ times split each exit's time into its parts.
//
//   npm run bench -- realfleet --wave --sessions=30
import { appendFileSync, chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Job } from 'bullmq';
import { requestExitId } from '../queues/session-exit.js';
import type { Producers } from '../src/pipeline/deps.js';
import { waitFor } from '../sim/fleet/fleet.js';
import { median, sleep, type Figure } from './common.js';
import { procSample } from './pipeline.js';

export interface WaveSession {
  sessionId: string;
  kind: string;
  pid: number;
}

export interface WaveContext {
  sessions: WaveSession[];
  tasksDir: string;
  root: string;
  callsLog: string;
  producers: Producers;
  /** The config file's text for these windows and extra keys (realfleet.ts's raw()). */
  config(windows: Record<string, unknown>, extra: Record<string, unknown>): { fleet: Record<string, unknown> };
  /** The `claude` sunset runs (the fleet's wrapper). */
  claude: string;
  startUp(file: string, logFile: string): { pid: number; stop(): Promise<void>; stderr(): string };
  writeTask(t: Record<string, unknown> & { id: string }): void;
  add(f: Omit<Figure, 'bench'>): void;
  finishing?: number;
}

/** The windows of the wave: compressed, and the floor they make with the rate (as issue 28 measured: 5.5 s + spread). */
export const WAVE_WINDOWS = { grace: 2000, silence: 1000, askWait: 3500, retryWait: 2000, exitConfirm: 30_000, recheck: 3000 };
/** exitRate 2/s, evenly: one exit call every 500 ms. */
export const WAVE_RATE = { max: 1, per: 500 };

/** How many of n finish: 22 of 30, 44 of 60 (the issue's share); the rest are held open. */
export const finishingOf = (n: number, given?: number) => Math.max(1, Math.min(n, given ?? Math.round((n * 22) / 30)));

/** Which sessions finish: spread evenly through the fleet, so both kinds finish in about equal numbers. */
export function finishingSet(n: number, f: number): boolean[] {
  return Array.from({ length: n }, (_, i) => Math.floor(((i + 1) * f) / n) > Math.floor((i * f) / n));
}

/** A process's start time (field 22 of /proc/<pid>/stat, in ticks), or null when it has none. */
function startTicks(pid: number): string | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Gone: no /proc entry, a zombie (it holds no memory; sunset counts it gone too), or the pid is another process's. */
export function processGone(pid: number, start: string | null): boolean {
  let s: string;
  try {
    s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true;
  }
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return f[0] === 'Z' || f[0] === 'X' || (start !== null && f[19] !== start);
}

/** Each decision's time (epoch ms) in sunset's log, by event and taskId: the first line of each. */
export function logTimes(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let o: { event?: unknown; taskId?: unknown; time?: unknown };
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof o.event !== 'string' || typeof o.taskId !== 'string' || typeof o.time !== 'string') continue;
    const key = `${o.event} ${o.taskId}`;
    if (!out.has(key)) out.set(key, Date.parse(o.time));
  }
  return out;
}

const s1 = (msec: number) => (msec / 1000).toFixed(1);
const s2 = (msec: number) => (msec / 1000).toFixed(2);

/** One exit's parts, in ms, each from the step before (NaN where a step left no trace). */
interface Split {
  taskId: string;
  kind: string;
  gone: number;
  noticed: number;
  grace: number;
  askWait: number;
  queued: number;
  recheck: number;
  path: number;
  confirmed: number;
  slot: number;
}

const PARTS: Array<{ key: keyof Split; words: string; ideal: (s: Split) => number }> = [
  { key: 'noticed', words: 'task done → released (the watcher, the release)', ideal: () => 0 },
  { key: 'grace', words: 'released → asked (grace, the ask sweep, the message)', ideal: () => WAVE_WINDOWS.grace },
  { key: 'askWait', words: 'asked → requested (askWait, the step)', ideal: () => WAVE_WINDOWS.askWait },
  { key: 'queued', words: 'requested → exit job started (the rate limiter)', ideal: (s) => s.slot },
  { key: 'recheck', words: 'exit job started → calling (the re-check sweep)', ideal: () => 0 },
  { key: 'path', words: 'calling → process gone (claude stop / typed /exit)', ideal: () => 0 },
];

export async function exitWave(x: WaveContext): Promise<void> {
  const n = x.sessions.length;
  const f = finishingOf(n, x.finishing);
  const finish = finishingSet(n, f);
  const w = WAVE_WINDOWS;
  const rate = WAVE_RATE;
  const floorMs = w.grace + w.askWait + ((f - 1) * rate.per) / rate.max;
  const file = join(x.root, 'sunset-wave.json');
  const logFile = join(x.root, 'sunset-wave.log');
  // every `claude` call sunset makes, timed: its verb, wall and CPU (bench/realfleet-wave.ts timedClaude)
  const callsFile = join(x.root, 'wave-claude-calls.log');
  const timed = timedClaude(x.root, x.claude, callsFile);
  const cfg = x.config(w, { exitRate: rate });
  cfg.fleet.claudeCommand = timed;
  cfg.fleet.rosterCommand = [timed, 'agents', '--json', '--all'];
  writeFileSync(file, JSON.stringify(cfg));
  const rec0 = await x.producers.reconcile.queue.getCompletedCount();
  const up = x.startUp(file, logFile);
  // sunset at rest first: its first reconcile (a CLI roster call, every chain looked at) done
  if (!(await waitFor(async () => (await x.producers.reconcile.queue.getCompletedCount()) > rec0, 120_000, 250)))
    throw new Error(`realfleet wave: sunset up did not reconcile within 120 s; stderr:\n${up.stderr()}`);
  await sleep(2000);
  const starts = x.sessions.map((s) => startTicks(s.pid));
  const calls0 = callsIn(x.callsLog);
  const verbs0 = callsIn(callsFile);
  const cpu0 = procSample(up.pid);
  const box0 = boxTicks();
  const d0 = Date.now();
  x.sessions.forEach((s, i) => {
    if (finish[i]) x.writeTask({ id: `t-${i}`, state: 'done', sessionId: s.sessionId });
  });
  const goneAt = new Map<number, number>();
  const deadline = d0 + 300_000;
  while (goneAt.size < f && Date.now() < deadline) {
    for (let i = 0; i < n; i++)
      if (finish[i] && !goneAt.has(i) && processGone(x.sessions[i].pid, starts[i])) goneAt.set(i, Date.now() - d0);
    await sleep(25);
  }
  const box1 = boxTicks();
  // the exits' own ends (a confirmation, an exit job's last roster read) are the wave's cost too: counted until done
  await waitFor(
    async () => {
      const c = await x.producers.exit.queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized');
      return Object.values(c).every((v) => v === 0);
    },
    60_000,
    250,
  );
  const cpu1 = procSample(up.pid);
  const calls = callsIn(x.callsLog) - calls0;
  // the held sessions: still running, nothing asked of them
  const heldAlive = x.sessions.filter((s, i) => !finish[i] && !processGone(s.pid, starts[i])).length;
  const heldTouched = x.sessions.filter((_, i) => {
    if (finish[i]) return false;
    const t = JSON.parse(readFileSync(join(x.tasksDir, `t-${i}.json`), 'utf8'));
    return Boolean(t.askedAt || t.requests || t.exitedAt);
  }).length;
  await up.stop();

  const times = [...goneAt.values()].sort((a, b) => a - b);
  const all = goneAt.size === f;
  const worst = times.length ? times[times.length - 1] : NaN;
  const ratio = worst / floorMs;
  const tick = 10; // /proc's CPU ticks are 1/100 s
  const own = ((cpu1.cpuTicks - cpu0.cpuTicks) * tick) / f;
  const kids = ((cpu1.childTicks - cpu0.childTicks) * tick) / f;
  const memMb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  x.add({
    name: `exit wave: ${f} of ${n} real sessions' tasks done at once (${n - f} held open), exitRate ${rate.max} per ${rate.per} ms, grace ${w.grace} ms + askWait ${w.askWait} ms: task closed → process gone`,
    value: all
      ? `${s1(times[0])}–${s1(worst)} s (median ${s1(median(times))}); the last ${ratio.toFixed(2)}× the floor`
      : `${goneAt.size} of ${f} gone in ${s1(Date.now() - d0)} s`,
    floor: `${s1(floorMs)} s (grace + askWait + (finishing − 1) · per / max)`,
    target: '≤ 1.25× the floor, every held session still running and never asked',
    pass: all && ratio <= 1.25 && heldAlive === n - f && heldTouched === 0,
  });
  x.add({
    name: `exit wave: CPU per exit (sunset up's utime+stime; its children's cutime+cstime), ${calls} roster calls`,
    value: `${Math.round(own)} ms own, ${Math.round(kids)} ms in children (over the wave: ${s1(own * f)} s own, ${s1(kids * f)} s children); sunset up's RSS ${memMb(cpu1.rssBytes)} MB`,
    floor: '',
    target: '',
    pass: null,
  });
  if (box0 && box1 && box1.total > box0.total)
    console.log(
      `  (the whole box, from the tasks closing to the last process gone: ${((1 - (box1.idle - box0.idle) / (box1.total - box0.total)) * 100).toFixed(0)} % of its CPUs busy; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
    );
  x.add({
    name: 'exit wave: the held sessions',
    value: `${heldAlive} of ${n - f} still running, ${heldTouched} asked or requested`,
    floor: '',
    target: 'all running, none asked',
    pass: heldAlive === n - f && heldTouched === 0,
  });
  // the wave's log lines, whole, for investigating (the fleet's folder goes with the fleet)
  if (process.env.BENCH_UP_LOG) copyFileSync(logFile, process.env.BENCH_UP_LOG);
  printSplit(await splits(x, finish, goneAt, d0, readFileSync(logFile, 'utf8')), floorMs);
  printCalls(readFileSync(callsFile, 'utf8').split('\n').filter(Boolean).slice(verbs0), d0);
}

/**
 * A wrapper around the fleet's `claude` that appends one line per call — its start and end (epoch ms), the CPU its
 * child took (ticks, from the shell's own cutime + cstime after the wait) and the verb — and passes the exit code on.
 */
export function timedClaude(root: string, inner: string, log: string): string {
  const file = join(root, 'bin', 'claude-timed');
  const q = (p: string) => `'${p.replace(/'/g, `'\\''`)}'`;
  writeFileSync(
    file,
    `#!/bin/sh\nt0=$(date +%s%3N)\nverb="$1"\n${q(inner)} "$@"\nrc=$?\nread -r st < /proc/$$/stat\nst=\${st##*) }\nset -- $st\necho "$t0 $(date +%s%3N) $((\${14} + \${15})) $verb" >> ${q(log)}\nexit $rc\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** The `claude` calls of the wave, by verb: how many, their wall (median, max) and their CPU (10 ms ticks, summed). */
function printCalls(lines: string[], d0: number): void {
  const by = new Map<string, { wall: number[]; ticks: number; first: number; last: number }>();
  for (const l of lines) {
    const [a, b, t, verb] = l.split(' ');
    const e = by.get(verb) ?? { wall: [], ticks: 0, first: Infinity, last: -Infinity };
    e.wall.push(Number(b) - Number(a));
    e.ticks += Number(t);
    e.first = Math.min(e.first, Number(a) - d0);
    e.last = Math.max(e.last, Number(b) - d0);
    by.set(verb, e);
  }
  console.log(`  sunset's \`claude\` calls over the wave (wall median / max; CPU summed, 10 ms ticks; from / to, after the tasks closed):`);
  for (const [verb, e] of by)
    console.log(
      `    claude ${verb.padEnd(8)} ${String(e.wall.length).padStart(4)} calls, ${s2(median(e.wall))} / ${s2(Math.max(...e.wall))} s wall, ${s1(e.ticks * 10)} s CPU; ${s1(e.first)}–${s1(e.last)} s`,
    );
}

/** The box's CPU ticks, all and idle (/proc/stat's first line). */
function boxTicks(): { idle: number; total: number } | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3] + (f[4] || 0), total: f.reduce((a, b) => a + (b || 0), 0) };
  } catch {
    return null;
  }
}

function callsIn(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** Each finishing session's exit, split by sunset's log lines and its exit job's BullMQ times. */
async function splits(x: WaveContext, finish: boolean[], goneAt: Map<number, number>, d0: number, log: string): Promise<Split[]> {
  const t = logTimes(log);
  const out: Split[] = [];
  for (let i = 0; i < x.sessions.length; i++) {
    if (!finish[i]) continue;
    const s = x.sessions[i];
    const taskId = `t-${i}`;
    const at = (e: string) => t.get(`${e} ${taskId}`) ?? NaN;
    const job = await Job.fromId(x.producers.exit.queue, requestExitId(taskId, s.sessionId, 1));
    const released = at('task:released');
    const asked = at('exit:asked');
    const requested = at('exit:requested');
    const started = job?.processedOn ?? NaN;
    const calling = at('exit:calling');
    const gone = goneAt.has(i) ? d0 + goneAt.get(i)! : NaN;
    out.push({
      taskId,
      kind: s.kind,
      gone: gone - d0,
      noticed: released - d0,
      grace: asked - released,
      askWait: requested - asked,
      queued: started - requested,
      recheck: calling - started,
      path: gone - calling,
      confirmed: at('exit:exited') - gone,
      slot: 0,
    });
  }
  // the rate's share of each one's queueing: its place among the exit jobs, by when each started
  const byStart = out
    .filter((s) => Number.isFinite(s.queued))
    .sort((a, b) => a.noticed + a.grace + a.askWait + a.queued - (b.noticed + b.grace + b.askWait + b.queued));
  byStart.forEach((s, k) => {
    s.slot = (k * WAVE_RATE.per) / WAVE_RATE.max;
  });
  return out;
}

function printSplit(xs: Split[], floorMs: number): void {
  const fin = (v: number[]) => v.filter(Number.isFinite);
  console.log(`  where each exit's time went (median / max over ${xs.length} exits; the ideal: its window, or its place in the rate):`);
  const kinds = [...new Set(xs.map((s) => s.kind))];
  for (const p of PARTS) {
    const perKind = kinds
      .map((k) => {
        const v = fin(xs.filter((s) => s.kind === k).map((s) => s[p.key] as number));
        return v.length ? `${k} ${s2(median(v))}` : '';
      })
      .filter(Boolean)
      .join(', ');
    const v = fin(xs.map((s) => s[p.key] as number));
    const over = fin(xs.map((s) => (s[p.key] as number) - p.ideal(s)));
    if (!v.length) {
      console.log(`    ${p.words.padEnd(62)} no trace`);
      continue;
    }
    console.log(
      `    ${p.words.padEnd(62)} ${s2(median(v)).padStart(6)} / ${s2(Math.max(...v)).padStart(6)} s; beyond its ideal ${s2(median(over))} / ${s2(Math.max(...over))} s (medians: ${perKind})`,
    );
  }
  const c = fin(xs.map((s) => s.confirmed));
  if (c.length)
    console.log(
      `    ${'process gone → exit:exited logged (after the measure)'.padEnd(62)} ${s2(median(c)).padStart(6)} / ${s2(Math.max(...c)).padStart(6)} s`,
    );
  const last = [...xs].sort((a, b) => b.gone - a.gone)[0];
  if (last)
    console.log(
      `  the last to go (${last.taskId}, ${last.kind}, ${s2(last.gone)} s vs a floor of ${s2(floorMs)} s): ${PARTS.map((p) => `${p.key} ${s2(last[p.key] as number)}`).join(', ')} (its slot ${s2(last.slot)})`,
    );
  if (process.env.BENCH_WAVE_SPLITS) appendFileSync(process.env.BENCH_WAVE_SPLITS, `${JSON.stringify(xs)}\n`);
}
