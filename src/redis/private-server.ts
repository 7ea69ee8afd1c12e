// sunset's private redis-server, the one `sunset up` runs when no Redis is named: its files in stateDir/redis
// (its config file, a unix socket and no TCP port, the AOF, its log), starting one, and asking whether one answers.
// Supervision (restarts, who stops it) is src/redis/supervise.ts; which Redis a command uses, src/redis/target.ts.
// The demo's throwaway TCP server is another thing: src/private-redis.ts.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { writeFileAtomicSync } from '../store/atomic-file.js';

export interface PrivatePaths {
  dir: string;
  socket: string;
  conf: string;
  log: string;
  /** Held while one `sunset up` starts the server or decides to stop it: never two servers on one socket. */
  lock: string;
}

export function privatePaths(stateDir: string): PrivatePaths {
  const dir = join(stateDir, 'redis');
  return {
    dir,
    socket: join(dir, 'redis.sock'),
    conf: join(dir, 'redis.conf'),
    log: join(dir, 'redis.log'),
    lock: join(dir, 'start.lock'),
  };
}

/** The socket as a redisUrl (src/redis.ts reads it back): unix:///…/redis.sock, percent-encoded. */
export function socketUrl(socket: string): string {
  const u = new URL('unix:///');
  u.pathname = socket;
  return u.href;
}

/** A person's error, said as one line and exit 1 (src/cli.ts): no Redis to use, and why. */
export class NoRedisError extends Error {
  readonly exitCode = 1;
}

/** Linux's sun_path holds 108 bytes with its NUL: a longer socket path cannot be bound. */
const SOCKET_PATH_MAX = 107;

/** The server's config file. Pure, for tests. Quoted as redis.conf reads quotes ("…" with \\ and \" escaped). */
export function privateConf(p: PrivatePaths): string {
  const q = (s: string) => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
    if (/[\0-\x1f\x7f]/.test(s))
      throw new NoRedisError(`stateDir ${JSON.stringify(p.dir)} holds a control character: redis-server cannot be given it`);
    return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  };
  return `# sunset's private Redis, written by \`sunset up\` at each start (an edit here is overwritten):
# a unix socket only (no TCP port), the schedule kept in its AOF. docs/operations.md#redis
port 0
unixsocket ${q(p.socket)}
unixsocketperm 700
dir ${q(p.dir)}
appendonly yes
appendfsync everysec
save ""
logfile ${q(p.log)}
daemonize no
maxmemory-policy noeviction
`;
}

/** redis-server's path when it is on PATH, else null. */
export function findRedisServer(env: NodeJS.ProcessEnv = process.env, name = 'redis-server'): string | null {
  for (const d of (env.PATH ?? '').split(delimiter)) {
    if (!d) continue;
    const f = join(d, name);
    try {
      accessSync(f, constants.X_OK);
      return f;
    } catch {
      /* not here */
    }
  }
  return null;
}

/** One line naming the package, in the preflight's words (scripts/preflight.mjs). */
export function installLine(why: string): string {
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${why}: install it with \`${sudo}apt-get install -y redis-server\` (or your system's package of the same name)`;
}

/**
 * What a server at these options says to PING: `pong`; `reply` (it answered, with an error such as NOAUTH or
 * LOADING: something is there); null (nothing answers: refused, no socket, timed out).
 */
export async function pingOnce(o: RedisOptions, timeoutMs = 1000): Promise<'pong' | 'reply' | null> {
  const c = new Redis({
    ...o,
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch {
    c.disconnect();
    return null;
  }
  try {
    return (await c.ping()) === 'PONG' ? 'pong' : 'reply';
  } catch (err) {
    return err instanceof Error && err.name === 'ReplyError' ? 'reply' : null;
  } finally {
    c.disconnect();
  }
}

export const pingSocket = (socket: string, timeoutMs?: number) => pingOnce({ path: socket }, timeoutMs);

/**
 * Start the server (the caller holds paths.lock and found nothing answering on the socket): its folder (0700), its
 * config file, no stale socket left from a crash; then redis-server in a session of its own (a Ctrl-C at the
 * terminal is for `sunset up`, which stops it with SHUTDOWN: sunset sends it no signal), until it answers PONG.
 * Throws NoRedisError when it cannot start, naming why (its log's last line).
 */
export async function startServer(p: PrivatePaths, bin: string, timeoutMs = 15_000): Promise<ChildProcess> {
  if (Buffer.byteLength(p.socket) > SOCKET_PATH_MAX)
    throw new NoRedisError(
      `the private Redis's socket ${p.socket} is ${Buffer.byteLength(p.socket)} bytes long, over the ${SOCKET_PATH_MAX} a unix socket allows: choose a shorter stateDir, or name a Redis in redisUrl`,
    );
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(p.conf, privateConf(p), { mode: 0o600 });
  rmSync(p.socket, { force: true }); // nothing answered on it: a crashed server's
  const child = spawn(bin, [p.conf], { cwd: p.dir, detached: true, stdio: 'ignore' });
  child.unref(); // a `sunset up` that stops while another still uses the server leaves it running
  let ended: string | null = null;
  child.once('error', (err) => (ended = err.message));
  child.once('exit', (code, signal) => (ended = `it exited (${signal ?? `code ${code}`})`));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (ended !== null) throw new NoRedisError(`redis-server did not start: ${ended}${lastLogLine(p.log)}`);
    if ((await pingSocket(p.socket, 500)) === 'pong') return child;
    // not stopped: it may be loading a long AOF, and whichever sunset up next looks on the socket uses it
    if (Date.now() > deadline)
      throw new NoRedisError(`redis-server did not answer on ${p.socket} within ${timeoutMs / 1000} s${lastLogLine(p.log)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * SHUTDOWN from a process that is exiting now, when no await is left to it: redis-cli, run to its end (or
 * to its timeout: a probe child's). Best effort; a server left running is used by the next sunset up.
 */
export function shutdownNow(socket: string): void {
  spawnSync('redis-cli', ['-s', socket, 'SHUTDOWN'], { stdio: 'ignore', timeout: 5_000 });
}

function lastLogLine(log: string): string {
  try {
    const last = readFileSync(log, 'utf8').trimEnd().split('\n').pop();
    return last ? `; its log (${log}) ends: ${last}` : '';
  } catch {
    return '';
  }
}
