// The admission lease store (DESIGN §6): one host's leases and its queue of waiters in Redis, every check
// and change in one Lua script, so two admits at 34/35 cannot both start.
//
// Counting. live = roster rows with a live (or unknown) pid, from one sweep (countCap). An admission
// takes a lease in the same script that counts, so counting and leasing are one step. A lease counts as
// live until the caller's OWN snapshot shows the session it started (admit-look.ts: a live roster row
// whose process is the started command or a descendant of it, pid and process start time both matching)
// or until windows.admitLease passes, whichever is first. A lease is never deleted when some snapshot
// shows it: an admit holding an older snapshot, which does not show the new row yet, must still count
// the lease. Sessions that leave the admit's process tree (a `claude --bg` that daemonises, `tmux
// new-session -d`) are counted by their lease until it expires: over-counting for a minute is the safe
// direction, a refused start is reversible.
//
// Waiting (--wait). A FIFO of tickets (a sorted set scored by a counter), each kept alive by a heartbeat;
// only the head may take a slot, and a start without --wait only takes a slot that no queued ticket is
// owed. A waiter that dies stops beating and drops out.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Cluster, Redis } from 'ioredis';
import type { Config } from '../config.js';
import { closeClient, createRedisClient, type RedisTarget } from '../redis.js';
import { PREFIX } from '../../queues/common.js';

// ------------------------------------------------------------------ keys and scripts

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
 * lease info JSON, key ttl (ms), memory room ('' = no limit: the starts memory admits, memory.ts), then the
 * ids of leases the caller's snapshot shows (not counted again).
 * Returns { granted: 1 | 0 | -1 (ticket lost), counted, ahead, held (leases not shown: starts in flight) }.
 */
const TAKE = `${PRUNE}
local shown = {}
for i = 10, #ARGV do shown[ARGV[i]] = true end
local held = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if not shown[id] then held = held + 1 end
end
local counted = tonumber(ARGV[2]) + held
local ceiling = tonumber(ARGV[3])
local ticket = ARGV[6]
local room = tonumber(ARGV[9])
local ahead
if ticket ~= '' then
  local rank = redis.call('ZRANK', KEYS[3], ticket)
  if not rank then return {-1, counted, 0, held} end
  ahead = rank
  if ahead > 0 or counted >= ceiling or (room and held >= room) then return {0, counted, ahead, held} end
else
  ahead = redis.call('ZCARD', KEYS[3])
  if counted + ahead >= ceiling or (room and held + ahead >= room) then return {0, counted, ahead, held} end
end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[4], ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
if ticket ~= '' then redis.call('ZREM', KEYS[3], ticket); redis.call('ZREM', KEYS[4], ticket) end
return {1, counted + 1, ahead, held}
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
  /** Leases the caller's snapshot does not show: starts in flight, not yet on the roster (before this one). */
  held: number;
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

  async take(o: {
    now: number;
    live: number;
    ceiling: number;
    leaseMs: number;
    ticket: string | null;
    shown: Iterable<string>;
    /** How many starts memory admits (memoryRoom); null or absent = no memory limit. */
    memoryRoom?: number | null;
  }): Promise<Take> {
    const leaseId = `${o.now}-${randomBytes(6).toString('hex')}`;
    const info = JSON.stringify({ at: o.now, by: `${hostname()}:${process.pid}` });
    const ttl = String(Math.max(o.leaseMs * 2, 60_000));
    const r = (await this.redis.eval(
      TAKE,
      4,
      ...this.k4,
      String(o.now),
      String(o.live),
      String(o.ceiling),
      leaseId,
      String(o.now + o.leaseMs),
      o.ticket ?? '',
      info,
      ttl,
      o.memoryRoom === null || o.memoryRoom === undefined ? '' : String(o.memoryRoom),
      ...o.shown,
    )) as number[];
    return { granted: r[0] === 1, lost: r[0] === -1, counted: Number(r[1]), ahead: Number(r[2]), held: Number(r[3] ?? 0), leaseId };
  }

  /** Leases held now (not yet expired), with what is known of their commands. Read-only. */
  async leases(now: number): Promise<Lease[]> {
    const [ids, info] = await Promise.all([
      this.redis.zrangebyscore(this.keys.leases, `(${now}`, '+inf', 'WITHSCORES'),
      this.redis.hgetall(this.keys.info),
    ]);
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
    await this.redis.eval(
      BIND,
      2,
      this.keys.leases,
      this.keys.info,
      leaseId,
      JSON.stringify({ at, pid, startMs, by: `${hostname()}:${process.pid}` }),
    );
  }

  /** Give a lease back (the command could not be started at all). */
  async drop(leaseId: string): Promise<void> {
    await this.redis.multi().zrem(this.keys.leases, leaseId).hdel(this.keys.info, leaseId).exec();
  }

  async join(ticket: string, seq: number | null, now: number, beatMs: number): Promise<number> {
    const ttl = String(Math.max(beatMs * 4, 60_000));
    return Number(
      await this.redis.eval(
        JOIN,
        5,
        ...this.k4,
        this.keys.seq,
        String(now),
        ticket,
        seq === null ? '' : String(seq),
        String(now + beatMs),
        ttl,
      ),
    );
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
