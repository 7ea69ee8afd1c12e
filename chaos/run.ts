// `npm run chaos`: the fault-injection suite. Every fault of chaos/scenarios.ts, on redis-servers, tmux
// servers and test fleets it starts itself, against a real `sunset up` (dist/, so build first: the npm
// script does). Prints one table; exits 1 when a column that must be 0 is not, or an at-risk session was
// not spared (`npm run chaos -- --help` says what each fault and column is).
//
//   npm run chaos                          # the full suite (kill -9 at 20 random points, every fault)
//   npm run chaos -- --short               # the short form, each fault once (in `npm test`: test/chaos.test.ts)
//   npm run chaos -- --only kill9,tmux --runs 5 --seed 42 --jobs 1 --verbose   (--jobs: runs at once, default 2)
//   npm run chaos -- --deadline 600        # give up (tearing down what runs) after 600 s
//   CHAOS_SEED=42 CHAOS_DEADLINE=900 npm run chaos   # the same defaults as the short form reads (flags win)
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { addMeasure, assertBuilt, emptyMeasure, rng, type Measure } from './harness.js';
import { SCENARIOS, STANDARD_FLEET, cleanupAll, type Scenario } from './scenarios.js';

export interface ChaosRow {
  key: string;
  fault: string;
  runs: number;
  m: Measure;
  ms: number;
  seeds: number[];
}

export interface ChaosOptions {
  short?: boolean;
  only?: string[];
  /** Runs per fault, overriding each scenario's own count. */
  runs?: number;
  seed?: number;
  /** Scenario runs at once. @defaultValue 1 */
  jobs?: number;
  /**
   * Give up after this many ms: no further run starts, the runs in flight are torn down (cleanupAll) and
   * runChaos throws, naming what had not finished. A wedged run can then never hold CI forever.
   */
  deadlineMs?: number;
  log?: (s: string) => void;
}

/** Run the chosen scenarios; one row per fault. */
export async function runChaos(o: ChaosOptions = {}): Promise<ChaosRow[]> {
  assertBuilt();
  const log = o.log ?? (() => undefined);
  const base = o.seed ?? Math.floor(Math.random() * 2 ** 31);
  const chosen = SCENARIOS.filter((s) => (o.only?.length ? o.only.includes(s.key) : !o.short || s.runs.short > 0));
  if (o.only?.length)
    for (const k of o.only)
      if (!SCENARIOS.some((s) => s.key === k))
        throw new Error(`chaos: no fault "${k}"; the faults are: ${SCENARIOS.map((s) => s.key).join(', ')}`);
  const rows: ChaosRow[] = chosen.map((s) => ({ key: s.key, fault: s.fault, runs: 0, m: emptyMeasure(), ms: 0, seeds: [] }));
  const work: Array<{ s: Scenario; row: ChaosRow; seed: number; i: number; n: number }> = [];
  chosen.forEach((s, ri) => {
    const n = o.runs ?? (o.short ? Math.max(1, s.runs.short) : s.runs.full);
    // a run's seed depends on its fault's place in SCENARIOS, not in the selection: `--only kill9` with a
    // full run's seed replays that run's kill9 row
    const si = SCENARIOS.indexOf(s);
    for (let i = 0; i < n; i++) work.push({ s, row: rows[ri], seed: (base + si * 1000 + i) >>> 0, i, n });
  });
  // the long runs first (stable): with several at once, the suite then ends on short ones
  work.sort((a, b) => Number(Boolean(b.s.slow)) - Number(Boolean(a.s.slow)));
  let next = 0;
  let over = false;
  const inFlight = new Set<string>();
  const worker = async () => {
    for (;;) {
      const w = over ? undefined : work[next++];
      if (!w) return;
      const label = `${w.s.key} run ${w.i + 1}/${w.n} (seed ${w.seed})`;
      inFlight.add(label);
      const t0 = Date.now();
      const m = await w.s.run({ rand: rng(w.seed), log });
      inFlight.delete(label);
      if (over) return;
      const ms = Date.now() - t0;
      w.row.m = addMeasure(w.row.m, m);
      w.row.runs++;
      w.row.ms += ms;
      w.row.seeds.push(w.seed);
      const bad = failing(m);
      log(
        `${label}: ${(ms / 1000).toFixed(1)} s, ${m.exited} exited, spared ${m.spared}/${m.toSpare}${bad.length ? ` — ${bad.join(', ')}` : ''}`,
      );
      for (const note of m.notes) if (bad.length || process.env.CHAOS_VERBOSE) log(`    ${note}`);
    }
  };
  const all = Promise.all(Array.from({ length: Math.max(1, o.jobs ?? 1) }, worker));
  if (!o.deadlineMs) {
    await all;
    return rows;
  }
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((r) => (timer = setTimeout(() => r('expired'), o.deadlineMs)));
  try {
    if ((await Promise.race([all, expired])) !== 'expired') return rows;
  } finally {
    clearTimeout(timer);
  }
  over = true;
  all.catch(() => undefined); // the runs torn down below may still fail on their way out
  const stuck = [...inFlight];
  const done = rows.reduce((n, r) => n + r.runs, 0);
  await cleanupAll();
  throw new Error(
    `chaos: not done after ${Math.round(o.deadlineMs / 1000)} s: ${done} of ${work.length} runs finished; torn down: ${stuck.join('; ') || 'none'}; never started: ${work.length - done - stuck.length}`,
  );
}

/** The columns that must be 0 and are not (and an at-risk session not spared). */
export function failing(m: Measure): string[] {
  const out: string[] = [];
  if (m.askedTwice) out.push(`asked twice ${m.askedTwice}`);
  if (m.over3) out.push(`over 3 requests ${m.over3}`);
  if (m.alarmsTwice) out.push(`alarms twice ${m.alarmsTwice}`);
  if (m.fieldsLost) out.push(`fields lost ${m.fieldsLost}`);
  if (m.signals) out.push(`signals ${m.signals}`);
  if (m.spared !== m.toSpare) out.push(`spared ${m.spared}/${m.toSpare}`);
  if (m.unfinished) out.push(`other problems ${m.unfinished}`);
  return out;
}

export function formatTable(rows: ChaosRow[]): string {
  const head = [
    'fault',
    'runs',
    'sessions exited',
    'asked twice',
    'over 3 requests',
    'alarms twice',
    'fields lost',
    'signals received',
    'at-risk spared',
    'other problems',
    'run time',
  ];
  const body = rows.map((r) => [
    r.fault,
    String(r.runs),
    String(r.m.exited),
    String(r.m.askedTwice),
    String(r.m.over3),
    String(r.m.alarmsTwice),
    String(r.m.fieldsLost),
    String(r.m.signals),
    `${r.m.spared}/${r.m.toSpare}`,
    String(r.m.unfinished),
    `${Math.round(r.ms / 1000)} s`,
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  return [
    line(head),
    `|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

/** Runs at once, and the deadline in seconds, when neither a flag nor the environment sets them. */
export const DEFAULTS = { jobs: 2, deadlineS: { short: 600, full: 3600 } } as const;

/** Bad flags or environment: said plainly, exit 2. */
export class ChaosUsageError extends Error {}

function wholeNumber(text: string, what: string, min: number): number {
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n < min)
    throw new ChaosUsageError(`chaos: ${what} takes a whole number${min > 0 ? ` of at least ${min}` : ''}, not ${JSON.stringify(text)}`);
  return n;
}

function seconds(text: string, what: string): number {
  const n = Number(text);
  if (!text.trim() || !Number.isFinite(n) || n <= 0)
    throw new ChaosUsageError(`chaos: ${what} takes a number of seconds above 0, not ${JSON.stringify(text)}`);
  return n;
}

export interface ChaosEnv {
  seed?: number;
  jobs?: number;
  deadlineS?: number;
}

/**
 * CHAOS_SEED, CHAOS_JOBS and CHAOS_DEADLINE (seconds): the defaults of --seed, --jobs and --deadline, read
 * alike by `npm run chaos` and its short form (test/chaos.test.ts). Unset or empty: not set. A bad value
 * throws ChaosUsageError naming the variable.
 */
export function chaosEnv(env: NodeJS.ProcessEnv = process.env): ChaosEnv {
  const o: ChaosEnv = {};
  const v = (k: string) => (env[k]?.trim() ? env[k] : undefined);
  if (v('CHAOS_SEED') !== undefined) o.seed = wholeNumber(v('CHAOS_SEED')!, 'CHAOS_SEED', 0);
  if (v('CHAOS_JOBS') !== undefined) o.jobs = wholeNumber(v('CHAOS_JOBS')!, 'CHAOS_JOBS', 1);
  if (v('CHAOS_DEADLINE') !== undefined) o.deadlineS = seconds(v('CHAOS_DEADLINE')!, 'CHAOS_DEADLINE');
  return o;
}

export interface ChaosArgs {
  help?: boolean;
  short?: boolean;
  only?: string[];
  runs?: number;
  seed?: number;
  jobs?: number;
  deadlineS?: number;
  verbose?: boolean;
}

/** `npm run chaos`'s flags. Throws ChaosUsageError (exit 2) on anything it cannot take. */
export function parseChaosArgs(argv: string[]): ChaosArgs {
  const o: ChaosArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new ChaosUsageError(`chaos: ${a} takes a value (try --help)`);
      return v;
    };
    if (a === '--short') o.short = true;
    else if (a === '--only') {
      const keys = val()
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
      const valid = SCENARIOS.map((s) => s.key);
      const unknown = keys.filter((k) => !valid.includes(k));
      if (!keys.length) throw new ChaosUsageError(`chaos: --only takes fault keys, comma-separated: ${valid.join(', ')}`);
      if (unknown.length)
        throw new ChaosUsageError(
          `chaos: --only: no fault ${unknown.map((k) => JSON.stringify(k)).join(', ')}; the faults are: ${valid.join(', ')}`,
        );
      o.only = [...new Set(keys)];
    } else if (a === '--runs') o.runs = wholeNumber(val(), '--runs', 1);
    else if (a === '--seed') o.seed = wholeNumber(val(), '--seed', 0);
    else if (a === '--jobs') o.jobs = wholeNumber(val(), '--jobs', 1);
    else if (a === '--deadline') o.deadlineS = seconds(val(), '--deadline');
    else if (a === '--verbose') o.verbose = true;
    else if (a === '--help' || a === '-h') o.help = true;
    else throw new ChaosUsageError(`chaos: unknown option ${a} (try --help)`);
  }
  return o;
}

function wrap(text: string, indent: number, width = 100): string {
  const lines: string[] = [];
  let line = '';
  for (const w of text.split(/\s+/).filter(Boolean)) {
    if (line && indent + line.length + 1 + w.length > width) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.map((l) => ' '.repeat(indent) + l).join('\n');
}

export function chaosHelp(): string {
  const keyW = Math.max(...SCENARIOS.map((s) => s.key.length));
  const item = (name: string, text: string) => `  ${name.padEnd(keyW)}  ${wrap(text, keyW + 4).trimStart()}`;
  const columns: Array<[string, string]> = [
    ['fault', 'the fault injected (its key is the --only name above).'],
    ['runs', 'runs of that fault measured (a run the deadline tore down is not).'],
    ['sessions exited', 'test sessions that left by their own exit path (claude stop, /exit). A count, not a check.'],
    ['asked twice', 'a task whose session was asked to leave more than once (two ask decisions, or an ask file rewritten). Must be 0.'],
    ['over 3 requests', 'a session that received, was latched with, or was called for more than 3 exit requests. Must be 0.'],
    ['alarms twice', 'one alarm (one kind and key, or one task) raised more than once. Must be 0.'],
    [
      'fields lost',
      'a task-file field sunset lost or changed that it must keep (its latches are set once; others are never dropped), an invalid task file whose bytes changed, or a write of the writer fault lost. Must be 0.',
    ],
    ['signals received', 'signals a test session received: sunset never signals a session. Must be 0.'],
    [
      'at-risk spared',
      'spared/at risk: the sessions the fault put at risk (missing evidence, an outage window, an invalid task file, a lane awaiting a human, a hostile id) against those left wholly alone — alive, never asked, requested, exited or alarmed. Must be equal.',
    ],
    [
      'other problems',
      'everything else that went wrong, each counted once: a session that should have exited did not, a stubborn one did not end in exactly one give-up alarm, a run did not finish in time (its own waits, up to 5 min), sunset up did not exit 0 on SIGTERM, a bad config not refused with exit 2 naming its key, a shell payload ran, a path escaped its folder. --verbose, or a failing run, prints what they were. Must be 0.',
    ],
    ['run time', "the runs' own time, added up (with --jobs above 1 they overlap, so the column adds up to more than the wall time)."],
  ];
  const colW = Math.max(...columns.map(([c]) => c.length));
  return `usage: npm run chaos -- [--short] [--only KEY,...] [--runs N] [--seed N] [--jobs N] [--deadline SECONDS] [--verbose]

The fault-injection suite: each run starts its own redis-server, a private tmux server and a test fleet
(real agent processes, a stand-in claude CLI), runs the built \`sunset up\` (dist/) against them, injects
its fault, waits for every chain to finish, stops sunset and measures. Prints one table, a row per fault.

Options:
  --short            each fault once (runs "short" below): the form \`npm test\` runs (test/chaos.test.ts)
  --only KEY,...     only these faults (keys below)
  --runs N           runs per fault (N >= 1), in place of each fault's own count
  --seed N           base seed of the random points (default: CHAOS_SEED, else random; printed at the
                     start and the end, so a failure can be replayed)
  --jobs N           runs at once (default: CHAOS_JOBS, else ${DEFAULTS.jobs})
  --deadline S       give up after S seconds: no further run starts, the ones in flight are torn down,
                     exit 1 (default: CHAOS_DEADLINE, else ${DEFAULTS.deadlineS.full} s; ${DEFAULTS.deadlineS.short} s with --short, as in
                     the vitest form)
  --verbose          print every run's timeline (as CHAOS_VERBOSE=1)
Flags win over the environment; test/chaos.test.ts reads the same CHAOS_* variables.

Faults (runs in the full suite / in --short and npm test):
${wrap(`The standard fleet: ${STANDARD_FLEET}`, 2)}

${SCENARIOS.map((s) => item(s.key, `(${s.runs.full}/${Math.max(1, s.runs.short)}) ${s.fault}. ${s.about}`)).join('\n')}

Columns:
${columns.map(([c, t]) => `  ${c.padEnd(colW)}  ${wrap(t, colW + 4).trimStart()}`).join('\n')}

Exit codes: 0 every column that must be 0 is 0 and every session at risk was spared; 1 a column is not,
the deadline passed, or the harness failed (not built, no redis-server or tmux); 2 bad flags or CHAOS_*
values; 130 interrupted (SIGINT/SIGTERM: what the runs started is cleaned up first).`;
}

async function main() {
  let o: ChaosArgs;
  let env: ChaosEnv;
  try {
    o = parseChaosArgs(process.argv.slice(2));
    if (o.help) {
      console.log(chaosHelp());
      return;
    }
    env = chaosEnv(process.env);
  } catch (err: any) {
    if (!(err instanceof ChaosUsageError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
  if (o.verbose) process.env.CHAOS_VERBOSE = '1';
  const seed = o.seed ?? env.seed ?? Math.floor(Math.random() * 2 ** 31);
  const jobs = o.jobs ?? env.jobs ?? DEFAULTS.jobs;
  const deadlineS = o.deadlineS ?? env.deadlineS ?? (o.short ? DEFAULTS.deadlineS.short : DEFAULTS.deadlineS.full);
  const started = Date.now();
  // interrupted: stop what the runs started (the fleets' agents are detached from this process group)
  let interrupted = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (interrupted) return;
      interrupted = true;
      console.error(`\nchaos: ${sig}, cleaning up`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
  console.error(
    `chaos: seed ${seed}, ${jobs} at a time, deadline ${deadlineS} s; ${availableParallelism()} × ${cpus()[0]?.model?.trim() ?? 'cpu'}, Node ${process.version}`,
  );
  const rows = await runChaos({
    short: o.short,
    only: o.only,
    runs: o.runs,
    jobs,
    seed,
    deadlineMs: deadlineS * 1000,
    log: (s) => console.error(s),
  });
  console.log(formatTable(rows));
  const bad = rows.filter((r) => failing(r.m).length);
  console.log(
    `\n${rows.reduce((n, r) => n + r.runs, 0)} runs in ${Math.round((Date.now() - started) / 1000)} s, seed ${seed}. ${bad.length ? `FAIL: ${bad.map((r) => `${r.key} (${failing(r.m).join(', ')})`).join('; ')} — replay with CHAOS_SEED=${seed} (or --seed ${seed}) and the same --short/--runs` : 'Every column that must be 0 is 0, and every session at risk was spared.'}`,
  );
  process.exitCode = bad.length ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch(async (err) => {
    // the suite's own refusals (not built, the deadline) are sentences; anything else keeps its stack
    console.error(typeof err?.message === 'string' && err.message.startsWith('chaos: ') ? err.message : (err?.stack ?? err));
    await cleanupAll();
    process.exit(1);
  });
}
