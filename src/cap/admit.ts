// `sunset admit -- <command…>`: start a session only under the ceiling (DESIGN §6).
//
// Counting. live = roster rows with a live (or unknown) pid, from one sweep (countCap). An admission
// takes a lease in Redis, in one Lua script that counts and leases together, so two admits at 34/35
// cannot both start. A lease counts as live until the caller's OWN snapshot shows the session it
// started — a live roster row whose process is the started command or a descendant of it (pid and
// process start time both match) — or until windows.admitLease passes, whichever is first. A lease is
// never deleted when some snapshot shows it: an admit holding an older snapshot, which does not show
// the new row yet, must still count the lease. Sessions that leave the admit's process tree (a
// `claude --bg` that daemonises, `tmux new-session -d`) are counted by their lease until it expires:
// over-counting for a minute is the safe direction, a refused start is reversible.
//
// Waiting (--wait). A FIFO of tickets in Redis (a sorted set scored by a counter), each kept alive by
// a heartbeat; only the head may take a slot, and a start without --wait only takes a slot that no
// queued ticket is owed. A waiter that dies stops beating and drops out.
//
// Running. The command is the person's own: argv, no shell, stdio inherited, no timeout, its exit
// code passed on. sunset forwards it no signal and never signals it. This is the one child that does
// not go through run.ts, on purpose: run.ts captures output and ends a child past its timeout.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { constants, hostname } from 'node:os';
import type { Cluster, Redis } from 'ioredis';
import type { Config } from '../config.js';
import { gatherFleet, type FleetSnapshot } from '../evidence/fleet.js';
import { expireFactsReader } from '../store/expire-state.js';
import { parseStat } from '../evidence/proc.js';
import { closeClient, createRedisClient, redisWhere, type RedisTarget } from '../redis.js';
import { Alarms } from '../store/alarms.js';
import { fileAudit } from '../store/audit.js';
import { capLine, countCap, holdsSlot, hourBucket, leavingPhrase, type CapCount } from './cap.js';
import { formatDuration } from '../duration.js';
import { PREFIX } from '../../queues/common.js';

// ------------------------------------------------------------------ Redis: keys and scripts

export interface AdmitKeys {
  leases: string; // zset: lease id → expiry (ms)
  info: string; // hash: lease id → JSON { at, pid?, startMs? }
  queue: string; // zset: ticket → join order
  beats: string; // zset: ticket → heartbeat expiry (ms)
  seq: string; // counter for join order
}

/** One host's admission keys, all under the `{sunset}` hash tag (one Cluster slot, so one script may touch them all). */
export function admitKeys(host: string): AdmitKeys {
  const base = `${PREFIX}:admit@${host}`;
  return { leases: `${base}:leases`, info: `${base}:lease-info`, queue: `${base}:queue`, beats: `${base}:beats`, seq: `${base}:seq` };
}

// Drop expired leases and waiters whose heartbeat stopped. Shared by every script below.
const PRUNE = `
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, id in ipairs(old) do redis.call('ZREM', KEYS[1], id); redis.call('HDEL', KEYS[2], id) end
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[1])
for _, t in ipairs(dead) do redis.call('ZREM', KEYS[4], t); redis.call('ZREM', KEYS[3], t) end
`;

/**
 * Check and lease in one step. KEYS: leases, info, queue, beats.
 * ARGV: now, live (from the caller's snapshot), ceiling, lease id, lease expiry, ticket ('' = no --wait),
 * lease info JSON, key ttl (ms), then the ids of leases the caller's snapshot shows (not counted again).
 * Returns { granted: 1 | 0 | -1 (ticket lost), counted, ahead }.
 */
const TAKE = `${PRUNE}
local shown = {}
for i = 9, #ARGV do shown[ARGV[i]] = true end
local held = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if not shown[id] then held = held + 1 end
end
local counted = tonumber(ARGV[2]) + held
local ceiling = tonumber(ARGV[3])
local ticket = ARGV[6]
local ahead
if ticket ~= '' then
  local rank = redis.call('ZRANK', KEYS[3], ticket)
  if not rank then return {-1, counted, 0} end
  ahead = rank
  if ahead > 0 or counted >= ceiling then return {0, counted, ahead} end
else
  ahead = redis.call('ZCARD', KEYS[3])
  if counted + ahead >= ceiling then return {0, counted, ahead} end
end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[4], ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
if ticket ~= '' then redis.call('ZREM', KEYS[3], ticket); redis.call('ZREM', KEYS[4], ticket) end
return {1, counted + 1, ahead}
`;

/** KEYS: leases, info, queue, beats, seq. ARGV: now, ticket, seq ('' = next), beat expiry, key ttl. Returns the seq. */
const JOIN = `${PRUNE}
local seq = ARGV[3]
if seq == '' then seq = redis.call('INCR', KEYS[5]) end
redis.call('ZADD', KEYS[3], seq, ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
for i = 3, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
return tonumber(seq)
`;

/** KEYS: leases, info, queue, beats. ARGV: now, ticket, beat expiry (or '' to only read), key ttl. Returns the rank, or -1 when not queued. */
const POSITION = `${PRUNE}
local rank = redis.call('ZRANK', KEYS[3], ARGV[2])
if not rank then return -1 end
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[4], ARGV[4])
end
return rank
`;

/** KEYS: leases, info. ARGV: lease id, info JSON. Only while the lease is held. */
const BIND = `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]); return 1 end
return 0
`;

export interface Lease {
  id: string;
  expiresAt: number;
  at: number | null;
  /** The started command's pid and process start, once it runs. */
  pid: number | null;
  startMs: number | null;
}

export interface Take {
  granted: boolean;
  /** The ticket was not in the queue (its heartbeat lapsed, or Redis lost it): join again. */
  lost: boolean;
  /** live + leases the caller's snapshot does not show (+1 when granted). */
  counted: number;
  /** Queued tickets ahead (with a ticket), or all queued (without). */
  ahead: number;
  leaseId: string;
}

export class AdmitStore {
  readonly keys: AdmitKeys;
  constructor(
    readonly redis: Redis | Cluster,
    host: string,
  ) {
    this.keys = admitKeys(host);
  }

  /**
   * A connection that fails fast: a start must not hang on an unreachable Redis. The one server of
   * redisUrl, or the Cluster of redisCluster (every key here is under the `{sunset}` hash tag: one slot,
   * so each script and MULTI below runs on one node).
   */
  static connect(config: RedisTarget & Pick<Config, 'host'>): AdmitStore {
    const redis = createRedisClient(config, { maxRetriesPerRequest: 1, connectTimeout: 10_000, reconnectTries: 4 });
    redis.on('error', () => undefined); // reported by the command that fails
    return new AdmitStore(redis, config.host);
  }

  private get k4() {
    return [this.keys.leases, this.keys.info, this.keys.queue, this.keys.beats];
  }

  async take(o: { now: number; live: number; ceiling: number; leaseMs: number; ticket: string | null; shown: Iterable<string> }): Promise<Take> {
    const leaseId = `${o.now}-${randomBytes(6).toString('hex')}`;
    const info = JSON.stringify({ at: o.now, by: `${hostname()}:${process.pid}` });
    const ttl = String(Math.max(o.leaseMs * 2, 60_000));
    const r = (await this.redis.eval(TAKE, 4, ...this.k4, String(o.now), String(o.live), String(o.ceiling), leaseId, String(o.now + o.leaseMs), o.ticket ?? '', info, ttl, ...o.shown)) as number[];
    return { granted: r[0] === 1, lost: r[0] === -1, counted: Number(r[1]), ahead: Number(r[2]), leaseId };
  }

  /** Leases held now (not yet expired), with what is known of their commands. Read-only. */
  async leases(now: number): Promise<Lease[]> {
    const [ids, info] = await Promise.all([this.redis.zrangebyscore(this.keys.leases, `(${now}`, '+inf', 'WITHSCORES'), this.redis.hgetall(this.keys.info)]);
    const out: Lease[] = [];
    for (let i = 0; i < ids.length; i += 2) {
      const id = ids[i];
      let x: Record<string, unknown> = {};
      try {
        x = JSON.parse(info[id] ?? '{}');
      } catch {
        /* unreadable info: a lease without a pid, counted until it expires */
      }
      out.push({ id, expiresAt: Number(ids[i + 1]), at: num(x.at), pid: num(x.pid), startMs: num(x.startMs) });
    }
    return out;
  }

  /** Record the started command's pid on its lease, so a snapshot can recognise the session it became. */
  async bind(leaseId: string, pid: number, startMs: number | null, at: number): Promise<void> {
    await this.redis.eval(BIND, 2, this.keys.leases, this.keys.info, leaseId, JSON.stringify({ at, pid, startMs, by: `${hostname()}:${process.pid}` }));
  }

  /** Give a lease back (the command could not be started at all). */
  async drop(leaseId: string): Promise<void> {
    await this.redis.multi().zrem(this.keys.leases, leaseId).hdel(this.keys.info, leaseId).exec();
  }

  async join(ticket: string, seq: number | null, now: number, beatMs: number): Promise<number> {
    const ttl = String(Math.max(beatMs * 4, 60_000));
    return Number(await this.redis.eval(JOIN, 5, ...this.k4, this.keys.seq, String(now), ticket, seq === null ? '' : String(seq), String(now + beatMs), ttl));
  }

  /** The ticket's place (0 = head), renewing its heartbeat when beatMs is given; null when not queued. */
  async position(ticket: string, now: number, beatMs: number | null): Promise<number | null> {
    const ttl = String(Math.max((beatMs ?? 0) * 4, 60_000));
    const r = Number(await this.redis.eval(POSITION, 4, ...this.k4, String(now), ticket, beatMs === null ? '' : String(now + beatMs), ttl));
    return r < 0 ? null : r;
  }

  async queued(now: number): Promise<number> {
    return this.redis.zcount(this.keys.beats, `(${now}`, '+inf');
  }

  async leave(ticket: string): Promise<void> {
    await this.redis.multi().zrem(this.keys.queue, ticket).zrem(this.keys.beats, ticket).exec();
  }

  async close(): Promise<void> {
    await closeClient(this.redis);
  }
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

// ------------------------------------------------------------------ which leases a snapshot shows

export interface ProcId {
  pid: number;
  startMs: number;
}

/**
 * The leases whose session this snapshot shows: a live row whose process, or one of its ancestors, is
 * the lease's command (same pid and same process start, so a reused pid never matches). Pure.
 */
export function leasesShown(leases: Lease[], livePids: number[], ancestry: (pid: number) => ProcId[]): Set<string> {
  const shown = new Set<string>();
  const bound = leases.filter((l) => l.pid !== null && l.startMs !== null);
  if (!bound.length) return shown;
  for (const pid of livePids) {
    for (const a of ancestry(pid)) {
      const l = bound.find((x) => x.pid === a.pid && x.startMs === a.startMs);
      if (l) shown.add(l.id);
    }
  }
  return shown;
}

/** A process and its ancestors (nearest first), from /proc; stops at init or what cannot be read. */
export function procAncestry(pid: number, maxDepth = 64): ProcId[] {
  const out: ProcId[] = [];
  let cur = pid;
  for (let i = 0; i < maxDepth && cur > 1; i++) {
    const s = procStat(cur);
    if (!s) break;
    out.push({ pid: cur, startMs: s.startMs });
    cur = s.ppid;
  }
  return out;
}

function procStat(pid: number) {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------ one look: the fleet, the leases, the count

export interface Look {
  snap: FleetSnapshot;
  count: CapCount;
  leases: Lease[];
  shown: Set<string>;
}

/** The leases a snapshot shows (their sessions are on the roster, so counted already as rows). */
export function shownBy(snap: FleetSnapshot, leases: Lease[]): Set<string> {
  const pids = snap.sessions.filter((s) => holdsSlot(s) && s.pid !== null).map((s) => s.pid!);
  return leasesShown(leases, pids, procAncestry);
}

/** One sweep (no RSS unless asked: the count is what matters) and the leases it does not show. */
export async function look(config: Config, store: AdmitStore, o: { now?: () => number; rss?: boolean } = {}): Promise<Look> {
  const snap = await gatherFleet(config, { rss: o.rss ?? false, expireFacts: expireFactsReader(config.stateDir) });
  const count = countCap(snap, config.cap);
  const leases = await store.leases((o.now ?? Date.now)());
  return { snap, count, leases, shown: shownBy(snap, leases) };
}

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
