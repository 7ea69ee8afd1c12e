// npm run bench  =  npm run build && node dist/bench/run.js [sweep|pipeline|footprint|realfleet]...
// Runs the benches (all of them by default; `npm run bench -- footprint` runs only that one), prints the
// machine's facts first and a summary table last.
// Exit code 0 when every figure meets its target, 1 when one misses, 2 when a bench could not run.
import { Cleanup, load, machine, verdict, type Figure } from './common.js';

const BENCHES = ['sweep', 'pipeline', 'footprint', 'realfleet'] as const;
type Bench = (typeof BENCHES)[number];

/** --key=number options, for quick runs while investigating (the defaults are the bench's sizes). */
function numbers(argv: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of argv) {
    const m = /^--([a-z-]+)=(\d+)$/.exec(a);
    if (m) out[m[1].replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = Number(m[2]);
  }
  return out;
}

async function runOne(name: Bench, only: string[], n: Record<string, number>): Promise<Figure[]> {
  if (name === 'sweep') return (await import('./sweep.js')).benchSweep({ live: n.live, records: n.records, tasks: n.tasks, runs: n.runs });
  // its own redis-server on a free port, never the shared Redis (bench/redis-footprint.ts)
  // the real Claude Code CLI on its stand-in API, its own HOME, daemon, tmux socket and redis-server
  if (name === 'realfleet') return (await import('./realfleet.js')).benchRealFleet({ sessions: n.sessions, idleSeconds: n.realIdleSeconds, runs: n.runs });
  if (name === 'footprint') return (await import('./redis-footprint.js')).benchRedisFootprint({ tasks: n.footprintTasks, batch: n.footprintBatch, exitKeep: n.exitKeep });
  return (await import('./pipeline.js')).benchPipeline({ only, burst: n.burst, trickle: n.trickle, late: n.late, idleSessions: n.idleSessions, idleSeconds: n.idleSeconds, floorTrips: n.floorTrips });
}

async function main(argv: string[]): Promise<number> {
  // --only=burst,lateness runs some of the pipeline bench's phases (floor, burst, lateness, idle)
  const only = argv.filter((a) => a.startsWith('--only=')).flatMap((a) => a.slice('--only='.length).split(',')).filter(Boolean);
  const asked = argv.filter((a) => !a.startsWith('-'));
  for (const a of asked) {
    if (!BENCHES.includes(a as Bench)) {
      console.error(
        `usage: node dist/bench/run.js [${BENCHES.join('|')}]... [--only=floor,burst,lateness,idle] ` +
          `[--live=N --records=N --tasks=N --runs=N --burst=N --trickle=N --late=N --idle-sessions=N --idle-seconds=N --floor-trips=N ` +
          `--footprint-tasks=N --footprint-batch=N --exit-keep=N --sessions=N --real-idle-seconds=N]  (unknown bench "${a}")`,
      );
      return 2;
    }
  }
  const chosen = (asked.length ? asked : BENCHES) as Bench[];
  const started = Date.now();
  console.log(`sunset bench — ${new Date().toISOString()}`);
  console.log(machine());
  const figures: Figure[] = [];
  const broken: string[] = [];
  for (const b of chosen) {
    try {
      figures.push(...(await runOne(b, only, numbers(argv))));
    } catch (err: any) {
      broken.push(b);
      console.error(`\nbench ${b} could not finish: ${err?.stack ?? err}`);
    }
  }
  console.log(`\n== summary (${((Date.now() - started) / 1000).toFixed(0)} s, load average now ${load()}) ==`);
  const rows = figures.map((f) => [f.bench, f.name, f.value, f.floor ?? '', f.target, verdict(f.pass)]);
  const head = ['bench', 'figure', 'value', 'floor', 'target', ''];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(width[i])).join(' | ').trimEnd();
  console.log(line(head));
  console.log(width.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(line(r));
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
