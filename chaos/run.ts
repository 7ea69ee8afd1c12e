// `npm run chaos`: the fault-injection suite. Every fault of chaos/scenarios.ts, on redis-servers, tmux
// servers and test fleets it starts itself, against a real `sunset up` (dist/, so build first: the npm
// script does). Prints one table; exits 1 when a column that must be 0 is not, or an at-risk session was
// not spared.
//
//   npm run chaos                          # the full suite (kill -9 at 20 random points, every fault)
//   npm run chaos -- --short               # the short form, each fault once (in `npm test`: test/chaos.test.ts)
//   npm run chaos -- --only kill9,tmux --runs 5 --seed 42 --jobs 1 --verbose   (--jobs: runs at once, default 2)
//   npm run chaos -- --deadline 600        # give up (tearing down what runs) after 600 s
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { addMeasure, assertBuilt, emptyMeasure, rng, type Measure } from './harness.js';
import { SCENARIOS, cleanupAll, type Scenario } from './scenarios.js';

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
  if (o.only?.length) for (const k of o.only) if (!SCENARIOS.some((s) => s.key === k)) throw new Error(`chaos: no fault "${k}"; the faults are: ${SCENARIOS.map((s) => s.key).join(', ')}`);
  const rows: ChaosRow[] = chosen.map((s) => ({ key: s.key, fault: s.fault, runs: 0, m: emptyMeasure(), ms: 0, seeds: [] }));
  const work: Array<{ s: Scenario; row: ChaosRow; seed: number; i: number; n: number }> = [];
  chosen.forEach((s, si) => {
    const n = o.runs ?? (o.short ? Math.max(1, s.runs.short) : s.runs.full);
    for (let i = 0; i < n; i++) work.push({ s, row: rows[si], seed: (base + si * 1000 + i) >>> 0, i, n });
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
      log(`${label}: ${(ms / 1000).toFixed(1)} s, ${m.exited} exited, spared ${m.spared}/${m.toSpare}${bad.length ? ` — ${bad.join(', ')}` : ''}`);
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
  throw new Error(`chaos: not done after ${Math.round(o.deadlineMs / 1000)} s: ${done} of ${work.length} runs finished; torn down: ${stuck.join('; ') || 'none'}; never started: ${work.length - done - stuck.length}`);
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
  const head = ['fault', 'runs', 'sessions exited', 'asked twice', 'over 3 requests', 'alarms twice', 'fields lost', 'signals received', 'at-risk spared', 'other problems', 'run time'];
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
  return [line(head), `|${width.map((w, i) => (i === 0 ? ':' + '-'.repeat(w + 1) : '-'.repeat(w + 1) + ':')).join('|')}|`, ...body.map(line)].join('\n');
}

function parseArgs(argv: string[]): ChaosOptions & { help?: boolean } {
  const o: ChaosOptions & { help?: boolean } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`chaos: ${a} takes a value`);
      return v;
    };
    if (a === '--short') o.short = true;
    else if (a === '--only') o.only = val().split(',').filter(Boolean);
    else if (a === '--runs') o.runs = Number(val());
    else if (a === '--seed') o.seed = Number(val());
    else if (a === '--jobs') o.jobs = Number(val());
    else if (a === '--deadline') o.deadlineMs = Number(val()) * 1000;
    else if (a === '--verbose') process.env.CHAOS_VERBOSE = '1';
    else if (a === '--help' || a === '-h') o.help = true;
    else throw new Error(`chaos: unknown option ${a} (try --help)`);
  }
  for (const k of ['runs', 'seed', 'jobs'] as const) if (o[k] !== undefined && !(Number.isInteger(o[k]) && o[k]! >= 0)) throw new Error(`chaos: --${k} takes a whole number`);
  if (o.deadlineMs !== undefined && !(o.deadlineMs > 0)) throw new Error('chaos: --deadline takes a number of seconds');
  return o;
}

async function main() {
  let o: ReturnType<typeof parseArgs>;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (err: any) {
    console.error(err.message);
    process.exit(2);
  }
  if (o.help) {
    console.log(`usage: npm run chaos -- [--short] [--only ${SCENARIOS.map((s) => s.key).join(',')}] [--runs N] [--seed N] [--jobs N] [--deadline SECONDS] [--verbose]`);
    return;
  }
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
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
  console.error(`chaos: seed ${seed}; ${availableParallelism()} × ${cpus()[0]?.model?.trim() ?? 'cpu'}, Node ${process.version}`);
  const rows = await runChaos({ ...o, jobs: o.jobs ?? 2, seed, log: (s) => console.error(s) });
  console.log(formatTable(rows));
  const bad = rows.filter((r) => failing(r.m).length);
  console.log(`\n${rows.reduce((n, r) => n + r.runs, 0)} runs in ${Math.round((Date.now() - started) / 1000)} s, seed ${seed}. ${bad.length ? `FAIL: ${bad.map((r) => `${r.key} (${failing(r.m).join(', ')})`).join('; ')}` : 'Every column that must be 0 is 0, and every session at risk was spared.'}`);
  process.exitCode = bad.length ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    console.error(err?.stack ?? err);
    process.exit(1);
  });
}
