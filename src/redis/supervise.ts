// `sunset up` keeping its private redis-server (src/redis/private-server.ts) running: it starts one, or joins the
// one another `sunset up` on the same stateDir runs (`--role` split over processes); restarts it when it dies,
// with a backoff that grows to BACKOFF_MAX_MS; and the last `up` using it stops it with SHUTDOWN (which fsyncs
// the AOF), so the schedule is there when the next one starts. Each `up` holds one connection named MONITOR_NAME:
// its end says the server went, and CLIENT LIST says who else still uses it. Starting and the stop decision
// happen under one lock file, so two processes never start two servers on one socket.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { closeClient } from '../redis.js';
import { acquireLock } from '../store/file-lock.js';
import { pingSocket, shutdownNow, socketUrl, startServer, type PrivatePaths } from './private-server.js';

export const MONITOR_NAME = 'sunset-up';
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** A server that stayed up this long died of something new: its restart waits only BACKOFF_FIRST_MS again. */
const STEADY_MS = 60_000;
/** The start lock's holder waits at most startServer's 15 s for an answer; a lock older than this was a crash's. */
const LOCK_STALE_MS = 30_000;

export interface Supervised {
  /** The server's socket as a redisUrl, for every connection this process makes. */
  url: string;
  /** Stop supervising; the last `sunset up` using the server shuts it down. */
  close(): Promise<void>;
}

export async function superviseRedis(p: PrivatePaths, bin: string, log: Logger): Promise<Supervised> {
  let closing = false;
  let monitor: Redis | null = null;
  let own: ChildProcess | null = null; // the server, when this process started it
  let upSince = 0;
  let backoff = BACKOFF_FIRST_MS;
  let timer: NodeJS.Timeout | null = null;
  let restarts = 0;

  const lock = () => {
    mkdirSync(p.dir, { recursive: true, mode: 0o700 });
    return acquireLock(p.lock, LOCK_STALE_MS + 5_000, {
      owner: JSON.stringify({ pid: process.pid, at: new Date().toISOString() }),
      staleMs: LOCK_STALE_MS,
    });
  };

  // a `sunset up` that exits without its close (a second Ctrl-C, an exit forced by a timer) does not leave the
  // server it started behind; another `up` still using it starts it again
  const onExit = () => {
    if (own && own.exitCode === null && own.signalCode === null) shutdownNow(p.socket);
  };
  process.on('exit', onExit);

  /** Under the lock: join the server that answers, or start one; then hold our monitor connection to it. */
  const ensure = async (): Promise<void> => {
    const release = await lock();
    try {
      if (closing) return;
      if ((await pingSocket(p.socket)) === 'pong') {
        log.info(
          { event: 'redis:private-joined', socket: p.socket },
          `sunset's private Redis is already running on ${p.socket} (another sunset up started it): using it`,
        );
      } else {
        const child = await startServer(p, bin);
        own = child;
        const pid = child.pid;
        child.once('exit', (code, signal) => {
          if (!closing)
            log.warn(
              { event: 'redis:private-exited', pid, code, signal },
              `sunset's private redis-server (pid ${pid}) exited (${signal ?? `code ${code}`})`,
            );
        });
        log.info(
          { event: 'redis:private-started', pid, socket: p.socket, dir: p.dir, restart: restarts },
          restarts
            ? `sunset's private Redis restarted (pid ${pid}, restart ${restarts})`
            : `sunset's private Redis started: pid ${pid}, socket ${p.socket}, AOF in ${p.dir}`,
        );
      }
      monitor = await connectMonitor();
      upSince = Date.now();
    } finally {
      await release();
    }
  };

  const connectMonitor = async (): Promise<Redis> => {
    const m = new Redis({
      path: p.socket,
      connectionName: MONITOR_NAME,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
      connectTimeout: 3000,
    });
    m.on('error', () => undefined); // its end is what counts
    await m.connect();
    m.once('end', () => {
      if (monitor !== m || closing) return;
      monitor = null;
      lost();
    });
    return m;
  };

  /** The server went: start it again, sooner the longer it had run, never faster than every BACKOFF_MAX_MS once failing. */
  const lost = () => {
    if (Date.now() - upSince > STEADY_MS) backoff = BACKOFF_FIRST_MS;
    const wait = backoff;
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    restarts++;
    log.warn(
      { event: 'redis:private-lost', socket: p.socket, restartInMs: wait },
      `sunset's private Redis stopped answering on ${p.socket}: starting it again in ${wait} ms`,
    );
    timer = setTimeout(() => {
      timer = null;
      if (closing) return;
      ensure().catch((err: Error) => {
        log.error(
          { event: 'redis:private-restart-failed', error: err.message },
          `sunset's private Redis could not be started again: ${err.message}`,
        );
        if (!closing) lost();
      });
    }, wait);
  };

  await ensure();
  return {
    url: socketUrl(p.socket),
    async close() {
      closing = true;
      if (timer) clearTimeout(timer);
      const release = await lock().catch((err: Error) => {
        log.error(
          { event: 'redis:private-stop-failed', error: err.message },
          `sunset's private Redis: could not take its lock to stop it (${err.message}): not stopped here`,
        );
        return null;
      });
      if (!release) return;
      try {
        const m = monitor;
        monitor = null;
        if (!m) return;
        const others = await othersUsing(m).catch(() => 0);
        if (others > 0) {
          log.info(
            { event: 'redis:private-left', others },
            `sunset's private Redis stays up: ${others} other sunset up use${others === 1 ? 's' : ''} it`,
          );
          await closeClient(m);
          return;
        }
        await shutdown(m, own, p.socket, log);
      } finally {
        process.off('exit', onExit);
        await release();
      }
    },
  };
}

/** How many other `sunset up` processes hold a monitor connection to the server (a crashed one's closed with it). */
async function othersUsing(m: Redis): Promise<number> {
  const me = Number(await m.call('CLIENT', 'ID'));
  const list = String(await m.call('CLIENT', 'LIST', 'TYPE', 'normal'));
  return list
    .split('\n')
    .map((l) => ({ id: Number(/(?:^| )id=(\d+)/.exec(l)?.[1]), name: /(?:^| )name=(\S*)/.exec(l)?.[1] }))
    .filter((c) => c.name === MONITOR_NAME && c.id !== me).length;
}

/** SHUTDOWN (the AOF is fsynced), and wait until the server has gone; refused (an error it names), SHUTDOWN FORCE. */
async function shutdown(m: Redis, own: ChildProcess | null, socket: string, log: Logger): Promise<void> {
  const running = (c: ChildProcess | null) => c !== null && c.exitCode === null && c.signalCode === null;
  // the connection closing is the server obeying; a reply is its refusal
  const refusal = (...args: string[]) =>
    m.call('SHUTDOWN', ...args).then(
      (r) => `it answered ${String(r)}`,
      (err: Error) => (err?.name === 'ReplyError' ? err.message : null),
    );
  const refused = await refusal();
  if (refused !== null) {
    log.warn(
      { event: 'redis:private-shutdown-refused', error: refused },
      `sunset's private Redis refused SHUTDOWN (${refused}): SHUTDOWN FORCE`,
    );
    await refusal('FORCE');
  }
  m.disconnect();
  const deadline = Date.now() + 10_000;
  while ((running(own) || (await pingSocket(socket, 500)) !== null) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (running(own) || (await pingSocket(socket, 500)) !== null)
    log.error({ event: 'redis:private-still-running', socket }, `sunset's private Redis on ${socket} did not stop within 10 s`);
  else log.info({ event: 'redis:private-stopped', socket }, `sunset's private Redis stopped (its AOF keeps the schedule)`);
}
