// Which Redis a command uses. A Redis the user named (redisUrl, redisCluster, $REDIS_URL: privateRedis is then
// `never`) is used as named. Otherwise `sunset up` uses what answers at the default address (privateRedis `auto`),
// else runs its private redis-server (src/redis/supervise.ts); every other command finds that same server on its
// socket in stateDir, and says plainly when no `sunset up` runs it.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { redisAddress } from '../redis.js';
import { NoRedisError, findRedisServer, installLine, pingOnce, pingSocket, privatePaths, socketUrl } from './private-server.js';
import { superviseRedis } from './supervise.js';

export { NoRedisError };

/** What a command found: the private server answering on its socket, something at the default address, or neither. */
export interface Found {
  privateAnswers: boolean;
  defaultAnswers: boolean;
}

/** Which Redis to use. Pure, for tests: `named` as configured, `default` the address probed, `private` the socket; `none`: nothing to use. */
export function chooseRedis(mode: Config['privateRedis'], found: Found, forUp: boolean): 'named' | 'default' | 'private' | 'none' {
  if (mode === 'never') return 'named';
  if (found.privateAnswers) return 'private';
  if (mode === 'auto' && found.defaultAnswers) return 'default';
  return forUp ? 'private' : 'none';
}

async function look(cfg: Config, socket: string): Promise<Found> {
  const privateAnswers = (await pingSocket(socket)) === 'pong';
  // only when it would decide: `always` never uses the default address, and the private server wins
  const defaultAnswers = !privateAnswers && cfg.privateRedis === 'auto' && (await pingOnce(redisAddress(cfg.redisUrl))) !== null;
  return { privateAnswers, defaultAnswers };
}

/** For every command but `up`: the config with redisUrl on the Redis `sunset up` uses. Throws NoRedisError (exit 1) when no `up` runs it. */
export async function redisForCommand(cfg: Config): Promise<Config> {
  const r = await redisOrWhyNot(cfg);
  if (r.missing) throw r.missing;
  return r.config;
}

/**
 * redisForCommand for a command that may not need Redis at all (`sunset exit`'s refusals never do): when no `up`
 * runs the private Redis, its socket (where nothing answers) and the reason, to say if Redis is needed after all.
 */
export async function redisOrWhyNot(cfg: Config): Promise<{ config: Config; missing: NoRedisError | null }> {
  if (cfg.privateRedis === 'never') return { config: cfg, missing: null };
  const p = privatePaths(cfg.stateDir);
  const choice = chooseRedis(cfg.privateRedis, await look(cfg, p.socket), false);
  if (choice === 'default') return { config: cfg, missing: null };
  const config = { ...cfg, redisUrl: socketUrl(p.socket) };
  if (choice === 'private') return { config, missing: null };
  const missing = new NoRedisError(
    cfg.privateRedis === 'always'
      ? `sunset up is not running: its private Redis (${p.socket}) does not answer — start \`sunset up\` first`
      : `sunset up is not running: no Redis is named (redisUrl, redisCluster, $REDIS_URL), nothing answers at ${cfg.redisUrl}, and sunset's private Redis (${p.socket}) does not answer — start \`sunset up\` first`,
  );
  return { config, missing };
}

export interface UpRedis {
  config: Config;
  /** Stops supervising the private server (the last `up` using it shuts it down); nothing for any other Redis. */
  close(): Promise<void>;
}

/** For `sunset up`: the Redis it runs on, starting and supervising its private server when that is the one. */
export async function redisForUp(cfg: Config, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<UpRedis> {
  const none = async () => undefined;
  if (cfg.privateRedis === 'never') return { config: cfg, close: none };
  const p = privatePaths(cfg.stateDir);
  const found = await look(cfg, p.socket);
  if (chooseRedis(cfg.privateRedis, found, true) === 'default') {
    log.info({ event: 'redis:default', redis: cfg.redisUrl }, `no Redis is named; using the one answering at ${cfg.redisUrl}`);
    return { config: cfg, close: none };
  }
  const why = cfg.privateRedis === 'always' ? 'privateRedis is "always"' : `no Redis is named and nothing answers at ${cfg.redisUrl}`;
  const bin = findRedisServer(env);
  if (!bin && !found.privateAnswers)
    throw new NoRedisError(
      installLine(`${why}, and redis-server, which sunset up would run as its private Redis, is not on PATH`) +
        ', or name a Redis in redisUrl',
    );
  if (!found.privateAnswers)
    log.info(
      { event: 'redis:private', socket: p.socket, why },
      `${why}: sunset up runs its own redis-server (socket ${p.socket}, AOF in ${p.dir})`,
    );
  const run = await superviseRedis(p, bin ?? 'redis-server', log);
  return { config: { ...cfg, redisUrl: run.url }, close: run.close };
}
