// The real-fleet bench's sweeps, measured in a process of their own run as `sunset` runs (its shebang's node
// options, nothing else loaded): what one sweep costs sunset, not the bench's harness (a process holding a
// whole fleet's handles and a Messages API, whose garbage collections would land in the figure).
//
//   node <sunset's node options> dist/bench/sweep-child.js <config.json> <pipeline|person|cli> <runs> <calls.log>
//
// Prints one JSON line: each run's { wall, own, kids, children, calls, rosterFrom, rows, floorOwn, floorWall }. The
// floor (bench/files-floor.ts: the files the CLI reads, read plainly) is measured just before each sweep, in this
// process: a process of this VM's sometimes runs the same code at half speed for its whole life (a pure JSON.parse
// loop here: 2.8–3.2 ms in most processes, 5–6 ms in others), and a floor taken elsewhere would not share that.
import { readFileSync } from 'node:fs';
import { parseConfig } from '../src/config.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { childCount } from '../src/run.js';
import { filesFloor } from './files-floor.js';

const [file, kind, runsArg, callsLog] = process.argv.slice(2);
const config = parseConfig(JSON.parse(readFileSync(file, 'utf8')), { env: {} });
const runs = Number(runsArg) || 7;

const calls = (): number => {
  try {
    return readFileSync(callsLog, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};
/** CPU ms of this process's reaped children (/proc/self/stat cutime + cstime, 10 ms ticks). */
const kidsMs = (): number => {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(x[13]) + Number(x[14])) * 10;
};

const sweep = () =>
  gatherFleet(config, kind === 'cli' ? { roster: 'cli' } : { roster: 'files', tmux: kind === 'pipeline' ? 'if-needed' : 'all' });
// warm-up: the first sweep reads everything its caches then keep, and a running sunset has swept before — the
// sweeps whose cost counts come three a second while asks are due, in code V8 has long compiled. With 3 warm-ups the
// measured sweeps still paid for TurboFan compiling the sweep (quartiles 3.9–10.5 ms against 3.2–4.6 after 30).
// BENCH_SWEEP_WARMUP: how many (30 by default).
const warmup = Number(process.env.BENCH_SWEEP_WARMUP ?? 30);
const claudeDir = config.fleet.claudeDir;
const floor = () => {
  if (claudeDir === null) return { floorOwn: NaN, floorWall: NaN };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  filesFloor(claudeDir);
  const floorWall = performance.now() - t0;
  const u = process.cpuUsage(c0);
  return { floorOwn: (u.user + u.system) / 1000, floorWall };
};
for (let i = 0; i < warmup; i++) {
  await sweep();
  floor();
}
const out = [];
for (let r = 0; r < runs; r++) {
  const { floorOwn, floorWall } = floor();
  const calls0 = calls();
  const children0 = childCount();
  const kids0 = kidsMs();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const snap = await sweep();
  const wall = performance.now() - t0;
  const u = process.cpuUsage(c0);
  out.push({
    wall,
    own: (u.user + u.system) / 1000,
    kids: kidsMs() - kids0,
    children: childCount() - children0,
    calls: calls() - calls0,
    rosterFrom: snap.rosterFrom,
    rows: snap.sessions.length,
    floorOwn,
    floorWall,
  });
}
console.log(JSON.stringify(out));
