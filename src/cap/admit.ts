// `sunset admit -- <command…>`: start a session only under the ceiling (DESIGN §6). This file is the
// command's flow: look, take a lease (or wait in line for one), start the command, bind the lease to it.
// How leases count and how the queue works: admit-store.ts; what a look counts: admit-look.ts.
//
// Running. The command is the person's own: argv, no shell, stdio inherited, no timeout, its exit
// code passed on. sunset forwards it no signal and never signals it. This is the one child that does
// not go through run.ts, on purpose: run.ts captures output and ends a child past its timeout.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, hostname } from 'node:os';
import type { Config } from '../config.js';
import { redisWhere } from '../redis.js';
import { Alarms } from '../store/alarms.js';
import { fileAudit } from '../store/audit.js';
import { hourBucket, leavingPhrase, type CapCount } from './cap.js';
import { memoryRoom, memoryUnknown, refusal, refusalJson, refusalLine, type Refusal } from './memory.js';
import { formatDuration } from '../duration.js';
import { formatBytes } from '../report/report.js';
import { AdmitStore, type Take } from './admit-store.js';
import { look, procStat, type Look } from './admit-look.js';
import { secondsLeft, STOP_BOUND_MS } from '../stop-signals.js';
import { errorMessage } from '../errors.js';
import { noUpLine, UP_BACK_LINE, upRunning, type UpRunning } from './up-running.js';

export { admitKeys, AdmitStore, type AdmitKeys, type Lease, type Take } from './admit-store.js';
export { leasesShown, look, memoryOf, procAncestry, shownBy, type Look, type ProcId } from './admit-look.js';

// ------------------------------------------------------------------ the command

export interface AdmitOptions {
  wait: boolean;
  /** Bounds --wait; null = wait as long as it takes. */
  timeoutMs: number | null;
  err: (line: string) => void;
  /** --json: when the command is not started, one object on `out` saying why (the terminal is the command's once it runs). */
  json?: boolean;
  out?: (line: string) => void;
  cwd: string;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** How often the head of the queue looks at the fleet while waiting. */
  pollMs?: number;
  /** A waiter's heartbeat lifetime: a waiter silent this long drops out of the queue. */
  beatMs?: number;
}

export const EXIT_CAP_REACHED = 75;
const say = (line: string) => `sunset admit: ${line}`;

type Phase = 'checking' | 'waiting' | 'running';

export async function admit(config: Config, command: string[], o: AdmitOptions): Promise<number> {
  const now = o.now ?? Date.now;
  const pollMs = o.pollMs ?? 500;
  const beatMs = o.beatMs ?? 5000;
  const audit = fileAudit(config.stateDir, now);
  const tell = (why: Record<string, unknown>) => {
    if (o.json) o.out?.(JSON.stringify({ started: false, command: command[0], ...why }, null, 2));
  };
  const store = AdmitStore.connect(config);
  let ticket: string | null = null;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await store.close();
  };

  // Signals sent to sunset itself. Before the command runs, they end admit: it never starts the command, and
  // leaves the queue; a second one is told it is still leaving (nothing is left half done), and the whole is
  // bounded (STOP_BOUND_MS, then it exits whatever Redis does). While the command runs, Ctrl-C and Ctrl-\ are
  // the command's business (the terminal sent it its own), as with system(3).
  let phase: Phase = 'checking';
  let interrupted: number | null = null;
  let bound = Infinity;
  let stop: ((code: number) => void) | null = null;
  const stopped = new Promise<number>((resolve) => (stop = resolve));
  const onSignal = (code: number, ignoreWhileRunning: boolean) => {
    if (phase === 'running') {
      if (!ignoreWhileRunning) process.exit(code); // sunset goes; the command stays, unsignalled
      return;
    }
    const leaving = phase === 'waiting' ? 'leaving the queue' : 'stopping';
    if (interrupted === null) {
      interrupted = code; // not started yet: it never will be
      bound = Date.now() + STOP_BOUND_MS;
      setTimeout(() => process.exit(code), STOP_BOUND_MS).unref();
      o.err(say(`interrupted: ${leaving}; ${JSON.stringify(command[0])} was not started`));
      stop?.(code);
    } else o.err(say(`still ${leaving}, ${secondsLeft(bound - Date.now())}; ${JSON.stringify(command[0])} will not start`));
  };
  /** `p`, unless a signal comes first (null): a roster slower than a person's patience does not hold a Ctrl-C. */
  const unlessStopped = <T>(p: Promise<T>): Promise<T | null> => Promise.race([p, stopped.then(() => null)]);
  const onInt = () => onSignal(130, true);
  const onQuit = () => onSignal(131, true);
  const onTerm = () => onSignal(143, false);
  const onHup = () => onSignal(129, false);
  process.on('SIGINT', onInt);
  process.on('SIGQUIT', onQuit);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);

  try {
    const started = now();
    let first: Look | null;
    try {
      first = await unlessStopped(look(config, store, { now }));
      if (!first) return interrupted!;
    } catch (err) {
      return failed(`cannot reach Redis at ${redisWhere(config)} (${errorMessage(err)})`);
    }
    if (!first.snap.roster.ok) return failed(`the roster failed, so the count is unknown (${first.snap.roster.error})`);
    const unknownMemory = memoryUnknown(first.memory);
    if (unknownMemory) return failed(`${unknownMemory} (memoryFloorMB null admits by count alone)`);
    let att: { look: Look; take: Take };
    try {
      att = { look: first, take: await take(first, null) };
    } catch (err) {
      return failed(`cannot reach Redis at ${redisWhere(config)} (${errorMessage(err)})`);
    }
    if (att.take.granted) return await start(att.take.leaseId, null);

    let refused = refusedBy(att.take, att.look, att.take.ahead);
    o.err(
      say(refusalLine(refused, o.wait ? (refused.by.includes('count') ? 'waiting for a slot' : 'waiting for memory') : 'not starting')),
    );
    audit({
      event: 'admit:refused',
      refusedBy: refused.by,
      counted: att.take.counted,
      ceiling: config.cap,
      queued: att.take.ahead,
      leaving: att.look.count.leaving.length,
      ...(refused.memory ? { availableBytes: refused.memory.availableBytes, shortBytes: refused.memory.shortBytes } : {}),
      wait: o.wait,
      command: command[0],
    });
    await raiseCapReached(refused, att.look.count);
    if (!o.wait || interrupted !== null) {
      if (interrupted === null) tell({ reason: 'refused', ...refusalJson(refused) });
      return interrupted ?? EXIT_CAP_REACHED;
    }

    // --wait: join the queue and wait our turn; with no `up` running, nothing frees a slot by itself: say so
    phase = 'waiting';
    let up: UpRunning = await upRunning(config);
    if (up === 'not-running') o.err(say(noUpLine(config, refused.by)));
    ticket = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const deadline = o.timeoutMs === null ? Infinity : started + o.timeoutMs;
    let seq = await store.join(ticket, null, now(), beatMs);
    const beat = setInterval(
      () => void store.position(ticket!, now(), beatMs).catch(() => undefined),
      Math.max(50, Math.floor(beatMs / 4)),
    );
    beat.unref();
    let lastPlace = -1;
    let lastPrint = now();
    /** Why the last look at the head could not judge (the roster failed, MemAvailable unknown), else null. */
    let unknownLast: string | null = null;
    try {
      for (;;) {
        const place = await store.position(ticket, now(), beatMs);
        if (place === null) {
          seq = await store.join(ticket, seq, now(), beatMs); // lost (a lapse, a flush): back in at our own place
          continue;
        }
        if (place === 0) {
          const l = await unlessStopped(look(config, store, { now }));
          if (!l) return interrupted!;
          const why = !l.snap.roster.ok ? `the roster failed (${l.snap.roster.error})` : memoryUnknown(l.memory);
          if (why) {
            if (unknownLast === null) o.err(say(`${why}; not starting while it does`));
            unknownLast = why;
          } else {
            unknownLast = null;
            const t = await take(l, ticket);
            if (t.granted) {
              clearInterval(beat);
              ticket = null;
              const freed = refused.by.includes('count') ? 'a slot freed' : 'memory freed';
              o.err(say(`${freed} after ${formatDuration(now() - started)} — starting (${t.counted}/${config.cap} with this one)`));
              return await start(t.leaseId, started);
            }
            if (t.lost) {
              seq = await store.join(ticket, seq, now(), beatMs);
              continue;
            }
            refused = refusedBy(t, l, 0);
          }
        }
        if (up === 'not-running' && now() - lastPrint >= 30_000 && (await upRunning(config)) === 'running') {
          up = 'running';
          o.err(say(UP_BACK_LINE));
        }
        if (place !== lastPlace || now() - lastPrint >= 30_000) {
          o.err(say(`${waitingFor(refused)}, ${ordinal(place + 1)} in line (${formatDuration(now() - started)})`));
          lastPlace = place;
          lastPrint = now();
        }
        if (now() >= deadline) {
          o.err(say(`gave up after ${formatDuration(o.timeoutMs)}: ${unknownLast ?? refusalLine(refused)}`));
          tell(unknownLast ? { reason: 'failed', error: unknownLast } : { reason: 'timeout', ...refusalJson(refused) });
          return unknownLast ? 1 : EXIT_CAP_REACHED;
        }
        const code = await Promise.race([stopped, sleep(Math.min(pollMs, Math.max(1, deadline - now())))]);
        if (typeof code === 'number') return code;
      }
    } finally {
      clearInterval(beat);
    }
  } catch (err) {
    o.err(say(`failed: ${errorMessage(err)}`));
    return 1;
  } finally {
    if (ticket) await store.leave(ticket).catch(() => undefined);
    await close();
    // stopped before the command: a look still under way (a roster slower than a person's patience) would hold the
    // process to its probeTimeout; end now (execa's cleanup ends that probe child, as its timeout would)
    if (interrupted !== null) process.exit(interrupted);
  }

  /** Not started because something could not be judged: said on stderr (and --json), exit 1. */
  function failed(why: string): number {
    o.err(say(`${why}: not starting`));
    tell({ reason: 'failed', error: why });
    return 1;
  }

  async function take(l: Look, t: string | null): Promise<Take> {
    return store.take({
      now: now(),
      live: l.count.live,
      ceiling: config.cap,
      leaseMs: config.windows.admitLease,
      ticket: t,
      shown: l.shown,
      memoryRoom: memoryRoom(l.memory),
    });
  }

  /** Which limits refused a take (`queued`: the starts it waits behind; 0 for the head of the line). */
  function refusedBy(t: Take, l: Look, queued: number): Refusal {
    const r = refusal({ counted: t.counted, held: t.held, queued }, config.cap, l.count.leaving.length, l.memory);
    return r.by.length ? r : { ...r, by: ['count'] }; // behind others in line: their turn first
  }

  async function raiseCapReached(r: Refusal, count: CapCount) {
    const at = now();
    const counted = r.count.counted;
    await new Alarms(config)
      .raise('cap-reached', `cap/${hourBucket(at)}`, {
        taskId: null,
        sessionId: null,
        refusedBy: r.by,
        counted,
        live: count.live,
        ceiling: config.cap,
        leaving: count.leaving.length,
        awaitingHuman: count.awaitingHuman.length,
        ...(r.memory ? { availableBytes: r.memory.availableBytes, floorBytes: r.memory.floorBytes, shortBytes: r.memory.shortBytes } : {}),
        message: `${
          r.by.includes('memory')
            ? refusalLine(r, 'a start was refused')
            : `cap reached: ${counted}/${config.cap} — a start was refused; ${leavingPhrase(count.leaving.length)}`
        }, ${count.awaitingHuman.length === 1 ? '1 lane awaiting a human holds a slot' : `${count.awaitingHuman.length} lanes awaiting a human hold slots`}`,
      })
      .catch((err: Error) => o.err(say(`could not record the cap-reached alarm: ${err.message}`)));
  }

  /** Start the command holding lease `leaseId`; resolve with its exit code. */
  async function start(leaseId: string, waitedSince: number | null): Promise<number> {
    if (interrupted !== null) {
      await store.drop(leaseId).catch(() => undefined);
      return interrupted;
    }
    phase = 'running';
    audit({ event: 'admit:started', leaseId, command: command[0], ...(waitedSince !== null ? { waitedMs: now() - waitedSince } : {}) });
    const child = startInherited(command, { cwd: o.cwd, env: o.env });
    if (child.pid === null) {
      const failed = await child.done;
      await store.drop(leaseId).catch(() => undefined);
      await close();
      o.err(say(`cannot start ${JSON.stringify(command[0])}: ${failed.error}`));
      return failed.code;
    }
    await store.bind(leaseId, child.pid, procStat(child.pid)?.startMs ?? null, now()).catch(() => undefined);
    await close(); // nothing more to say to Redis: the lease runs out by itself
    return (await child.done).code;
  }
}

/** Start argv with the terminal inherited: no shell, no timeout, nothing forwarded. Pure spawn; never signals. */
export function startInherited(
  argv: string[],
  o: { cwd: string; env?: NodeJS.ProcessEnv },
): { pid: number | null; done: Promise<{ code: number; error?: string }> } {
  const [file, ...args] = argv;
  const child = spawn(file, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: 'inherit', shell: false });
  const done = new Promise<{ code: number; error?: string }>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code === 'ENOENT' ? 127 : 126, error: err.message }));
    child.once('exit', (code, signal) =>
      resolve({ code: code ?? 128 + (signal ? ((constants.signals as Record<string, number>)[signal] ?? 0) : 0) }),
    );
  });
  return { pid: child.pid ?? null, done };
}

/** "waiting for a slot: 35/35" or "waiting for memory: 448 MB under memoryFloorMB" (or both). */
function waitingFor(r: Refusal): string {
  const parts: string[] = [];
  if (r.by.includes('count')) parts.push(`${r.count.counted}/${r.count.ceiling}`);
  if (r.by.includes('memory') && r.memory) parts.push(`${formatBytes(r.memory.shortBytes)} under memoryFloorMB`);
  return `waiting for ${r.by.includes('count') ? 'a slot' : 'memory'}: ${parts.join(', ')}`;
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th');
  return `${n}${s}`;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
