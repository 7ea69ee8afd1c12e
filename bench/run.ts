// npm run bench  =  npm run build && node dist/bench/run.js [sweep|pipeline|footprint|realfleet]...
// Runs the benches (all of them by default; `npm run bench -- footprint` runs only that one), prints the
// machine's facts first and a summary table last.
// Exit code 0 when every figure meets its target, 1 when one misses, 2 when a bench could not run.
import { Cleanup, load, machine, summaryLines, type Figure } from './common.js';

// The pipeline bench first: its burst creates a file a latch, and on a file system where a create costs more the
// more files were deleted in the minutes before (ext4 without a journal, as here: docs/benchmarks.md), the sweep
// bench's teardown just before it — 12,300 files — made the burst measure the bench's own churn, not the box's.
// Named benches run in the order given (`sweep pipeline` measures that case).
const BENCHES = ['pipeline', 'sweep', 'footprint', 'realfleet'] as const;
type Bench = (typeof BENCHES)[number];

/** The pipeline bench's phases (--only=…). */
const PHASES = ['floor', 'burst', 'lateness', 'idle'];
/** --key=number options, for quick runs while investigating (the defaults are the bench's sizes); the first three are told of in the usage. */
const NUMBER_OPTIONS = [
  'idle-seconds',
  'real-idle-seconds',
  'sessions',
  'live',
  'records',
  'tasks',
  'runs',
  'burst',
  'trickle',
  'late',
  'idle-sessions',
  'floor-trips',
  'footprint-tasks',
  'footprint-batch',
  'exit-keep',
  'finishing',
];

/** `--key value` written as `--key=value` (both are taken), so that the rest reads one form. */
function joined(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const key = /^--([a-z-]+)$/.exec(a)?.[1];
    if (key && (NUMBER_OPTIONS.includes(key) || key === 'only') && i + 1 < argv.length && !argv[i + 1].startsWith('-'))
      out.push(`${a}=${argv[++i]}`);
    else out.push(a);
  }
  return out;
}

/** The --key=number options, by their camelCase names, and any other option given (misspelt: an error, not a full-size run). */
function numbers(argv: string[]): { n: Record<string, number>; unknown: string[] } {
  const n: Record<string, number> = {};
  const unknown: string[] = [];
  for (const a of argv.filter((x) => x.startsWith('-') && !x.startsWith('--only='))) {
    const m = /^--([a-z-]+)=(\d+)$/.exec(a);
    if (a === '--wave') n.wave = 1;
    else if (m && NUMBER_OPTIONS.includes(m[1])) n[m[1].replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = Number(m[2]);
    else unknown.push(a);
  }
  return { n, unknown };
}

async function runOne(name: Bench, only: string[], n: Record<string, number>): Promise<Figure[]> {
  if (name === 'sweep') return (await import('./sweep.js')).benchSweep({ live: n.live, records: n.records, tasks: n.tasks, runs: n.runs });
  // its own redis-server on a free port, never the shared Redis (bench/redis-footprint.ts)
  // the real Claude Code CLI on its stand-in API, its own HOME, daemon, tmux socket and redis-server
  if (name === 'realfleet')
    return (await import('./realfleet.js')).benchRealFleet({
      sessions: n.sessions,
      idleSeconds: n.realIdleSeconds,
      runs: n.runs,
      wave: n.wave === 1,
      finishing: n.finishing,
    });
  if (name === 'footprint')
    return (await import('./redis-footprint.js')).benchRedisFootprint({
      tasks: n.footprintTasks,
      batch: n.footprintBatch,
      exitKeep: n.exitKeep,
    });
  return (await import('./pipeline.js')).benchPipeline({
    only,
    burst: n.burst,
    trickle: n.trickle,
    late: n.late,
    idleSessions: n.idleSessions,
    idleSeconds: n.idleSeconds,
    floorTrips: n.floorTrips,
  });
}

/** Words in lines of at most `width` characters, each line indented. */
function wrapped(words: string[], width: number, indent: string): string {
  const lines: string[] = [];
  for (const w of words) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + w.length <= width) lines[last] += ` ${w}`;
    else lines.push(indent + w);
  }
  return lines.join('\n');
}

const USAGE = `usage: npm run bench -- [${BENCHES.join('|')}]... [options]
       (node dist/bench/run.js … once built)

Runs the named benches in the order named (all four by default, in this order: ~30–35 min), prints each
figure beside its floor and target, and a summary last. Exit 0 when every judged figure meets its target,
1 when one misses, 2 when a bench could not run. docs/benchmarks.md says what each measures and holds the
figures of each round.

  pipeline   the schedule on the shared Redis: floors, a burst of 1,000 tasks (and a trickle of 200
             after it), ask lateness, idle sunset up on the census fleet                    (~14 min)
  sweep      one sweep of the census fleet (300 live, 2,000 records, 10,000 tasks), test fleet (<1 min)
  footprint  Redis memory per task (its own redis-server)                                     (~9 min)
  realfleet  N real Claude Code sessions (the real-client tier's CLI on a stand-in API)       (~7 min;
             ~3 with --real-idle-seconds=60, which holds no reconcile pass: no roster-call check)

options (--key=N or --key N):
  --only=${PHASES.join(',')}  some of the pipeline bench's phases (alone, it means the
                         pipeline bench); floor ~10 s, burst ~15 s (with the floors it is judged by),
                         lateness ~1 min, idle ~12 min
  --idle-seconds=N       the census idle window (default 600; ≥ 300 holds a reconcile pass)
  --real-idle-seconds=N  realfleet's idle window (default 300; ≥ 300 holds a reconcile pass; CPU is
                         judged only from 60 s)
  --sessions=N           realfleet's fleet size (default 12; 35 is the ADR's cap; 30 with --wave)
  --wave                 realfleet's exit wave alone (alone, it means realfleet): ~73 % of the tasks
                         done at once (--finishing=N), the rest held open, exitRate 2/s; each exit timed
                         from its task closing to its process gone, against the windows and the rate
                         (30 sessions ~4 min, 60 ~7 min and MemAvailable ≥ 16 GB)
  --runs=N               measured sweeps (sweep: default 7; realfleet: 7 in each of its 3 sweep processes)
${wrapped(
  NUMBER_OPTIONS.slice(3)
    .filter((k) => k !== 'runs')
    .map((k) => `--${k}=N`),
  100,
  '  ',
)}
                         other sizes, for quick runs while investigating (--records ≥ 10)
  -h, --help             this text

environment: BENCH_PROFILE=<dir> CPU profiles of the measured windows; BENCH_UP_NODE_ARGS more node
options for the \`sunset up\` the idle and realfleet phases start; BENCH_SWEEP_NODE_ARGS for realfleet's
sweep process; BENCH_SWEEP_WARMUP the sweeps before realfleet's measured ones (30); BENCH_UP_LOG=<file>
the idle phase's (or realfleet --wave's) log lines; REDIS_URL the Redis of the pipeline bench (default 127.0.0.1:6379, shared:
it uses keys of its own).`;

async function main(given: string[]): Promise<number> {
  const argv = joined(given);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  // --only=burst,lateness runs some of the pipeline bench's phases (floor, burst, lateness, idle)
  const only = argv
    .filter((a) => a.startsWith('--only='))
    .flatMap((a) => a.slice('--only='.length).split(','))
    .filter(Boolean);
  const asked = argv.filter((a) => !a.startsWith('-'));
  for (const a of asked) {
    if (!BENCHES.includes(a as Bench)) {
      console.error(`bench: unknown bench "${a}"\n\n${USAGE}`);
      return 2;
    }
  }
  const { n, unknown } = numbers(argv);
  if (unknown.length) {
    console.error(`bench: unknown option "${unknown[0]}" (options take a number: --idle-seconds=320)\n\n${USAGE}`);
    return 2;
  }
  const badPhase = only.find((p) => !PHASES.includes(p));
  if (badPhase) {
    console.error(`bench: --only takes ${PHASES.join(', ')}, not "${badPhase}"\n\n${USAGE}`);
    return 2;
  }
  if (only.length && asked.length && !asked.includes('pipeline')) {
    console.error(`bench: --only chooses phases of the pipeline bench, which is not among ${asked.join(', ')}\n\n${USAGE}`);
    return 2;
  }
  if (n.records !== undefined && n.records < 10) {
    console.error(`bench: --records takes 10 or more (the census fleet gives ten records an inbox message), not ${n.records}`);
    return 2;
  }
  if (n.wave && asked.length && !asked.includes('realfleet')) {
    console.error(`bench: --wave is the realfleet bench's exit wave, and realfleet is not among ${asked.join(', ')}\n\n${USAGE}`);
    return 2;
  }
  // --only alone means the pipeline bench's phases, not every bench; --wave alone, the realfleet bench's wave
  const chosen = (asked.length ? asked : only.length ? ['pipeline'] : n.wave ? ['realfleet'] : BENCHES) as Bench[];
  const started = Date.now();
  console.log(`sunset bench — ${new Date().toISOString()}`);
  console.log(machine());
  const figures: Figure[] = [];
  const broken: string[] = [];
  for (const b of chosen) {
    try {
      figures.push(...(await runOne(b, only, n)));
    } catch (err: any) {
      broken.push(b);
      console.error(`\nbench ${b} could not finish: ${err?.stack ?? err}`);
    }
  }
  console.log(`\n== summary (${((Date.now() - started) / 1000).toFixed(0)} s, load average now ${load()}) ==`);
  console.log('(one line a figure, cut to 120 columns: each whole, with its target, is printed above)');
  for (const l of summaryLines(figures)) console.log(l);
  for (const b of broken) console.log(`${b}: did not finish (see above)`);
  if (broken.length) return 2;
  return figures.some((f) => f.pass === false) ? 1 : 0;
}

// interrupted: stop what the benches started (fleets, sunset, children, bench queues), then leave
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\nbench: ${sig}, cleaning up`);
    void Cleanup.runAll().finally(() => process.exit(130));
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 2;
  },
);
