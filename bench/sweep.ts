// Bench: one full sweep (gatherFleet: every probe + the verdict for every row) on a big fleet —
// ≥ 300 live processes, 2,000 pid-less records, 10,000 task files, transcripts and inbox folders —
// against the floor measured in the same run: the same I/O done plainly, without sunset's logic.
//
//   node dist/bench/run.js sweep          (after npm run build)
//
// Target: median sweep ≤ 1 s and ≤ 3× the floor; at most 2 child processes per sweep (the roster, and one tmux
// call where an interactive session runs: the census fleet has none).
import { mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { parseConfig, type Config } from '../src/config.js';
import { gatherFleet, type FleetSnapshot } from '../src/evidence/fleet.js';
import { childCount, run } from '../src/run.js';
import { readRoster } from '../src/evidence/roster.js';
import { listPanes } from '../src/evidence/tmux.js';
import { readProcTable } from '../src/evidence/proc.js';
import { readTasks } from '../src/tasks/tasks.js';
import { TestFleet, slugOf, type Agent } from '../sim/fleet/fleet.js';
import { uniqueHost } from '../test/support/sunset.js';
import { Cleanup, load, median, ms, profiled, quantile, timed, type Figure } from './common.js';

export interface SweepOptions {
  live?: number;
  records?: number;
  tasks?: number;
  runs?: number;
}

const H = 3_600_000;
const ago = (msec: number): string => new Date(Date.now() - msec).toISOString();

/** Some prose, so a task file is the size of a real one (~1 KB), not a bare skeleton. */
const NOTES =
  'Implement the change described in the issue, run the tests, write the close-out. ' +
  'Context: the previous attempt stalled on a flaky integration test; rerun it twice before ' +
  'deciding. Keep the public interface; document anything that moved. ';

/** Builds the fleet: light processes, records, tasks, transcripts, inboxes. Returns what the floor needs to know. */
/** The census fleet: `live` light sessions, `records` records, `tasks` task files (also the idle bench's fleet). */
export async function buildFleet(fleet: TestFleet, o: Required<Omit<SweepOptions, 'runs'>>) {
  const live = await fleet.spawnLight(o.live, { transcriptAgeMs: 2 * H });
  const records = fleet.addRecords(o.records);

  // Transcripts for the records too (a real projects folder keeps every old session's), over 20 project folders.
  const old = new Date(Date.now() - 30 * H);
  records.forEach((r, i) => {
    const dir = join(fleet.projectsDir, slugOf(join(fleet.root, 'work', `project-${i % 20}`)));
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${r.sessionId}.jsonl`);
    writeFileSync(file, `${JSON.stringify({ type: 'start', sessionId: r.sessionId })}\n`);
    utimesSync(file, old, old);
  });

  // Inboxes: a few live sessions with a waiting message, a few with only sunset's own ask, a few empty folders.
  for (const a of live.slice(0, 10)) fleet.addInboxMessage(a);
  live.slice(10, 20).forEach((a) => {
    const dir = join(fleet.inboxDir, a.sessionId);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `sunset-exit-ask-t-x-${a.id}.json`), '{}\n');
  });
  for (const a of live.slice(20, 30)) mkdirSync(join(fleet.inboxDir, a.sessionId), { recursive: true });
  for (const r of records.slice(0, 10)) fleet.addInboxMessage(r);

  // 10,000 task files. Each live session gets a history of terminal tasks; its latest one is
  // terminal (most), awaiting-human or active. The bulk are records' finished tasks, fully latched,
  // and some name sessions no roster knows any more.
  let n = 0;
  const id = () => `task-${String(n++).padStart(5, '0')}`;
  const terminal = ['done', 'done', 'done', 'abandoned', 'parked'];
  const base = (sessionId: string, i: number) => ({
    title: `Task ${i}: ${NOTES.slice(0, 40)}`,
    notes: NOTES.repeat(3),
    createdAt: ago(40 * H + i * 1000),
    sessionId,
    watcher: 100000 + i,
  });
  const latched = (i: number, exited: boolean) => {
    const t: Record<string, unknown> = { releasedAt: ago(30 * H), exitAskedAt: ago(29 * H) };
    const req = i % 4;
    if (req) Object.assign(t, { exitRequests: req, exitRequestedAt: ago(28 * H) });
    if (exited) t.exitedAt = ago(27 * H);
    else if (req === 3) t.exitGaveUpAt = ago(27 * H);
    return t;
  };
  const liveTasks = Math.min(o.tasks, o.live * 7);
  // live sessions: 6 older terminal tasks each, then the one that drives it
  for (let k = 0; k < liveTasks; k++) {
    const a = live[k % live.length];
    const i = n;
    const latest = k >= liveTasks - live.length;
    let fields: Record<string, unknown>;
    if (!latest) fields = { state: terminal[i % terminal.length], stateChangedAt: ago(20 * H + k), ...latched(i, false) };
    else {
      const pick = k % 10;
      if (pick < 7)
        fields = { state: 'done', stateChangedAt: ago(2 * H), releasedAt: ago(2 * H) }; // due for the ask
      else if (pick < 8)
        fields = { state: 'done', stateChangedAt: ago(60_000), releasedAt: ago(60_000) }; // in grace
      else if (pick < 9) fields = { state: 'awaiting-human', stateChangedAt: ago(3 * H), awaitingHumanSince: ago(3 * H) };
      else fields = { state: 'active', stateChangedAt: ago(10 * 60_000) };
    }
    fleet.writeTask({ id: id(), ...base(a.sessionId, i), ...fields });
  }
  const rest = o.tasks - liveTasks;
  for (let k = 0; k < rest; k++) {
    const i = n;
    const ghost = k % 10 === 9; // names a session no roster lists any more
    const sessionId = ghost ? randomUUID() : records[k % records.length].sessionId;
    const st = k % 50 === 0 ? 'awaiting-human' : k % 50 === 1 ? 'active' : terminal[k % terminal.length];
    const fields =
      st === 'awaiting-human' || st === 'active' ? { state: st } : { state: st, stateChangedAt: ago(30 * H), ...latched(i, k % 3 === 0) };
    // one in four uses the older alias, as the Driver's older task tool wrote them
    const t: Record<string, unknown> = { id: id(), ...base(sessionId, i), ...fields };
    if (k % 4 === 1) {
      t.driverSessionId = sessionId;
      delete t.sessionId;
    }
    fleet.writeTask(t as { id: string });
  }
  // A few broken files (they must protect exactly the sessions they name, and be searched for ids).
  for (let k = 0; k < 5; k++) fleet.writeTaskRaw(`broken-${k}.json`, `{ "id": "broken-${k}", "sessionId": "${records[k].sessionId}", oops`);
  for (let k = 0; k < 5; k++) fleet.writeTask({ id: `badshape-${k}`, state: 42 as unknown as string, sessionId: records[k + 5].sessionId });

  return { live, records };
}

/** This process's CPU (user + system) and that of its waited-for children (the roster, tmux), in ms. */
function cpuNow(): { own: number; children: number } {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ');
  // fields 14-17: utime, stime, cutime, cstime (clock ticks of 10 ms)
  return { own: (Number(v[11]) + Number(v[12])) * 10, children: (Number(v[13]) + Number(v[14])) * 10 };
}

async function cpuTimed<T>(fn: () => Promise<T>): Promise<{ ms: number; own: number; children: number; value: T }> {
  const c0 = process.cpuUsage();
  const k0 = cpuNow().children;
  const r = await timed(fn);
  const c = process.cpuUsage(c0);
  return { ms: r.ms, own: (c.user + c.system) / 1000, children: cpuNow().children - k0, value: r.value };
}

/** The floor: the same reads sunset's sweep does, done plainly, concurrently with the roster call. */
async function floor(config: Config, live: Agent[]): Promise<{ total: number; parts: Record<string, number> }> {
  const parts: Record<string, number> = {};
  const part = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const r = await timed(fn);
    parts[name] = r.ms;
    return r.value;
  };
  const yieldNow = () => new Promise<void>((r) => setImmediate(r));
  const f = config.fleet;
  const t = await timed(() =>
    Promise.all([
      part('roster', () => run(f.rosterCommand, { timeoutMs: config.probeTimeout })),
      part('tasks', async () => {
        let bytes = 0;
        const names = readdirSync(f.tasksDir);
        for (let i = 0; i < names.length; i++) {
          if (i % 128 === 0) await yieldNow();
          bytes += readFileSync(join(f.tasksDir, names[i])).length;
        }
        return bytes;
      }),
      part('proc', async () => {
        let bytes = 0;
        const names = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
        for (let i = 0; i < names.length; i++) {
          if (i % 128 === 0) await yieldNow();
          try {
            bytes += readFileSync(`/proc/${names[i]}/stat`).length + readFileSync(`/proc/${names[i]}/cmdline`).length;
          } catch {
            /* ended meanwhile */
          }
        }
        return bytes;
      }),
      part('transcripts', async () => {
        let k = 0;
        for (const p of readdirSync(f.projectsDir)) {
          for (const n of readdirSync(join(f.projectsDir, p))) {
            if (k++ % 128 === 0) await yieldNow();
            statSync(join(f.projectsDir, p, n));
          }
        }
        return k;
      }),
      part('inboxes', async () => {
        await Promise.all(live.map((a) => readdir(join(f.inboxDir, a.sessionId)).catch(() => [])));
      }),
    ]),
  );
  return { total: t.ms, parts };
}

/** Each of the sweep's probes alone, to see where the time goes. */
async function phases(config: Config): Promise<Record<string, number>> {
  const f = config.fleet;
  const out: Record<string, number> = {};
  out.roster = (await timed(() => readRoster(f.rosterCommand, config.probeTimeout))).ms;
  out.tmux = (await timed(() => listPanes(f.tmuxSocket, config.probeTimeout))).ms;
  out.proc = (await timed(() => readProcTable())).ms;
  out.tasks = (await timed(() => readTasks(f.tasksDir))).ms;
  out['sweep without RSS'] = (await timed(() => gatherFleet(config, { rss: false }))).ms;
  return out;
}

function verdictCounts(s: FleetSnapshot): string {
  const c: Record<string, number> = {};
  for (const v of s.sessions) c[v.verdict] = (c[v.verdict] ?? 0) + 1;
  return Object.entries(c)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

export async function benchSweep(opts: SweepOptions = {}): Promise<Figure[]> {
  const o = { live: opts.live ?? 300, records: opts.records ?? 2000, tasks: opts.tasks ?? 10_000 };
  const runs = opts.runs ?? 7;
  const cleanup = new Cleanup();
  try {
    console.log(`\n== sweep: ${o.live} live processes, ${o.records} records, ${o.tasks} task files, ${runs} runs ==`);
    const t0 = Date.now();
    const fleet = await TestFleet.create();
    cleanup.add('fleet.destroy()', () => fleet.destroy());
    const { live } = await buildFleet(fleet, o);
    const config = parseConfig(fleet.config({ host: uniqueHost(), probeTimeout: 30_000 }), { env: {} });
    const procs = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
    const transcripts = readdirSync(fleet.projectsDir).reduce((k, p) => k + readdirSync(join(fleet.projectsDir, p)).length, 0);
    console.log(
      `fleet built in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${procs} processes in /proc, ${transcripts} transcripts, load ${load()}`,
    );

    // warm-up (page cache, JIT), and a check that the sweep sees what was built
    const warm = await gatherFleet(config);
    if (!warm.roster.ok) throw new Error(`sweep bench: the roster failed: ${warm.roster.error}`);
    const liveRows = warm.sessions.filter((s) => s.live).length;
    console.log(
      `rows ${warm.sessions.length} (${liveRows} live), tasks ${warm.tasks.length} + ${warm.invalidTasks.length} invalid; verdicts: ${verdictCounts(warm)}`,
    );
    if (liveRows < o.live) throw new Error(`sweep bench: only ${liveRows}/${o.live} live rows`);
    await floor(config, live);

    // interleaved, so a burst of load elsewhere on the box weighs on both alike
    const sweeps: number[] = [];
    const floors: number[] = [];
    const sweepCpu: Array<{ own: number; children: number }> = [];
    const floorCpu: Array<{ own: number; children: number }> = [];
    const children: number[] = [];
    const floorParts: Array<Record<string, number>> = [];
    for (let i = 0; i < runs; i++) {
      const c0 = childCount();
      const s = await cpuTimed(() => gatherFleet(config));
      children.push(childCount() - c0);
      sweeps.push(s.ms);
      sweepCpu.push(s);
      const fl = await cpuTimed(() => floor(config, live));
      floors.push(fl.value.total);
      floorParts.push(fl.value.parts);
      floorCpu.push(fl);
    }
    if (process.env.BENCH_PROFILE)
      await profiled('sweep', async () => {
        for (let i = 0; i < 3; i++) await gatherFleet(config);
      });
    const ph: Array<Record<string, number>> = [];
    for (let i = 0; i < 3; i++) ph.push(await phases(config));

    const med = median(sweeps);
    const p90 = quantile(sweeps, 0.9);
    const fl = median(floors);
    const ratio = med / fl;
    const kids = Math.max(...children);
    const pass = med <= 1000 && ratio <= 3 && children.every((c) => c >= 1 && c <= 2);
    const pmed = (rows: Array<Record<string, number>>) =>
      Object.keys(rows[0])
        .map((k) => `${k} ${ms(median(rows.map((r) => r[k])))}`)
        .join(', ');
    console.log(`sweeps (ms): ${sweeps.map(ms).join(' ')}`);
    console.log(`floors (ms): ${floors.map(ms).join(' ')}`);
    console.log(`floor parts, medians (concurrent, ms): ${pmed(floorParts)}`);
    console.log(`sweep probes alone, medians (ms): ${pmed(ph)}`);
    const cpuLine = (rows: Array<{ own: number; children: number }>) =>
      `${ms(median(rows.map((r) => r.own)))} ms own + ${ms(median(rows.map((r) => r.children)))} ms in children`;
    const ownRatio = median(sweepCpu.map((r) => r.own + r.children)) / median(floorCpu.map((r) => r.own + r.children));
    console.log(
      `CPU per sweep (median): ${cpuLine(sweepCpu)}; per floor: ${cpuLine(floorCpu)}; CPU ratio ${ownRatio.toFixed(2)}× (load-independent)`,
    );
    console.log(
      `sweep: median ${ms(med)} ms (p90 ${ms(p90)}) — floor ${ms(fl)} ms — ratio ${ratio.toFixed(2)}× — children/sweep ${kids} — target ≤ 1000 ms and ≤ 3×: ${pass ? 'PASS' : 'FAIL'}   [load ${load()}]`,
    );
    const figures: Figure[] = [
      {
        bench: 'sweep',
        name: 'sweep median (p90)',
        value: `${ms(med)} ms (p90 ${ms(p90)})`,
        floor: `${ms(fl)} ms, ratio ${ratio.toFixed(2)}×`,
        target: '≤ 1000 ms and ≤ 3× floor',
        pass: med <= 1000 && ratio <= 3,
      },
      // the census fleet's sessions are all background: tmux is not asked (it is only where an interactive session runs)
      {
        bench: 'sweep',
        name: 'children per sweep',
        value: String(kids),
        target: '≤ 2 (roster; tmux where an interactive session runs)',
        pass: children.every((c) => c >= 1 && c <= 2),
      },
    ];
    return figures;
  } finally {
    await cleanup.run();
  }
}
