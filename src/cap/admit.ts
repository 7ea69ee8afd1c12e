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
import { capLine, hourBucket, leavingPhrase, type CapCount } from './cap.js';
import { formatDuration } from '../duration.js';
import { AdmitStore, type Take } from './admit-store.js';
import { look, procStat, type Look } from './admit-look.js';

export { admitKeys, AdmitStore, type AdmitKeys, type Lease, type Take } from './admit-store.js';
export { leasesShown, look, procAncestry, shownBy, type Look, type ProcId } from './admit-look.js';

// ------------------------------------------------------------------ the command

export interface AdmitOptions {
  wait: boolean;
  /** Bounds --wait; null = wait as long as it takes. */
  timeoutMs: number | null;
  err: (line: string) => void;
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
  const store = AdmitStore.connect(config);
  let ticket: string | null = null;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await store.close();
  };

  // Signals sent to sunset itself. Waiting, they end the wait (leaving the queue); while the command runs,
  // Ctrl-C and Ctrl-\ are the command's business (the terminal sent it its own), as with system(3).
  let phase: Phase = 'checking';
  let interrupted: number | null = null;
  let stop: ((code: number) => void) | null = null;
  const stopped = new Promise<number>((resolve) => (stop = resolve));
  const onSignal = (code: number, ignoreWhileRunning: boolean) => {
    if (phase === 'running') {
      if (!ignoreWhileRunning) process.exit(code); // sunset goes; the command stays, unsignalled
      return;
    }
    interrupted ??= code; // not started yet: it never will be
    stop?.(code);
  };
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
    let first: Look;
    try {
      first = await look(config, store, { now });
    } catch (err: any) {
      o.err(say(`cannot reach Redis at ${redisWhere(config)} (${err.message}): not starting`));
      return 1;
    }
    if (!first.snap.roster.ok) {
      o.err(say(`the roster failed, so the count is unknown: not starting (${first.snap.roster.error})`));
      return 1;
    }
    let att: { look: Look; take: Take };
    try {
      att = { look: first, take: await take(first, null) };
    } catch (err: any) {
      o.err(say(`cannot reach Redis at ${redisWhere(config)} (${err.message}): not starting`));
      return 1;
    }
    if (att.take.granted) return await start(att.take.leaseId, null);

    const line = capLine(att.take.counted, config.cap, att.look.count.leaving.length, { queued: att.take.ahead, doing: o.wait ? 'waiting for a slot' : 'not starting' });
    o.err(say(line));
    audit({ event: 'admit:refused', counted: att.take.counted, ceiling: config.cap, queued: att.take.ahead, leaving: att.look.count.leaving.length, wait: o.wait, command: command[0] });
    await raiseCapReached(att.take.counted, att.look.count);
    if (!o.wait || interrupted !== null) return interrupted ?? EXIT_CAP_REACHED;

    // --wait: join the queue and wait our turn
    phase = 'waiting';
    ticket = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const deadline = o.timeoutMs === null ? Infinity : started + o.timeoutMs;
    let seq = await store.join(ticket, null, now(), beatMs);
    const beat = setInterval(() => void store.position(ticket!, now(), beatMs).catch(() => undefined), Math.max(50, Math.floor(beatMs / 4)));
    beat.unref();
    let lastCounted = att.take.counted;
    let lastPlace = -1;
    let lastPrint = now();
    let rosterFailedLast = false;
    try {
      for (;;) {
        const place = await store.position(ticket, now(), beatMs);
        if (place === null) {
          seq = await store.join(ticket, seq, now(), beatMs); // lost (a lapse, a flush): back in at our own place
          continue;
        }
        if (place === 0) {
          const l = await look(config, store, { now });
          if (!l.snap.roster.ok) {
            if (!rosterFailedLast) o.err(say(`the roster failed; not starting while it does (${l.snap.roster.error})`));
            rosterFailedLast = true;
          } else {
            rosterFailedLast = false;
            const t = await take(l, ticket);
            if (t.granted) {
              clearInterval(beat);
              ticket = null;
              o.err(say(`a slot freed after ${formatDuration(now() - started)} — starting (${t.counted}/${config.cap} with this one)`));
              return await start(t.leaseId, started);
            }
            if (t.lost) {
              seq = await store.join(ticket, seq, now(), beatMs);
              continue;
            }
            lastCounted = t.counted;
          }
        }
        if (place !== lastPlace || now() - lastPrint >= 30_000) {
          o.err(say(`waiting for a slot: ${lastCounted}/${config.cap}, ${ordinal(place + 1)} in line (${formatDuration(now() - started)})`));
          lastPlace = place;
          lastPrint = now();
        }
        if (now() >= deadline) {
          o.err(say(rosterFailedLast ? `gave up after ${formatDuration(o.timeoutMs)}: the roster is failing` : `gave up after ${formatDuration(o.timeoutMs)}: ${capLine(lastCounted, config.cap, att.look.count.leaving.length)}`));
          return rosterFailedLast ? 1 : EXIT_CAP_REACHED;
        }
        const code = await Promise.race([stopped, sleep(Math.min(pollMs, Math.max(1, deadline - now())))]);
        if (typeof code === 'number') return code;
      }
    } finally {
      clearInterval(beat);
    }
  } catch (err: any) {
    o.err(say(`failed: ${err?.message ?? err}`));
    return 1;
  } finally {
    if (ticket) await store.leave(ticket).catch(() => undefined);
    await close();
  }

  async function take(l: Look, t: string | null): Promise<Take> {
    return store.take({ now: now(), live: l.count.live, ceiling: config.cap, leaseMs: config.windows.admitLease, ticket: t, shown: l.shown });
  }

  async function raiseCapReached(counted: number, count: CapCount) {
    const at = now();
    await new Alarms(config)
      .raise('cap-reached', `cap/${hourBucket(at)}`, {
        taskId: null,
        sessionId: null,
        counted,
        live: count.live,
        ceiling: config.cap,
        leaving: count.leaving.length,
        awaitingHuman: count.awaitingHuman.length,
        message: `cap reached on ${config.host}: ${counted}/${config.cap} — a start was refused; ${leavingPhrase(count.leaving.length)}, ${count.awaitingHuman.length === 1 ? "1 lane awaiting a human holds a slot" : `${count.awaitingHuman.length} lanes awaiting a human hold slots`}`,
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
export function startInherited(argv: string[], o: { cwd: string; env?: NodeJS.ProcessEnv }): { pid: number | null; done: Promise<{ code: number; error?: string }> } {
  const [file, ...args] = argv;
  const child = spawn(file, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: 'inherit', shell: false });
  const done = new Promise<{ code: number; error?: string }>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code === 'ENOENT' ? 127 : 126, error: err.message }));
    child.once('exit', (code, signal) => resolve({ code: code ?? 128 + (signal ? (constants.signals as Record<string, number>)[signal] ?? 0 : 0) }));
  });
  return { pid: child.pid ?? null, done };
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
  return `${n}${s}`;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
