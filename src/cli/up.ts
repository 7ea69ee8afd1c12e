import { ROLES, type Role } from '../pipeline/roles.js';
import { createLogger } from '../log.js';
import { EXIT, UsageError, config, sayFailure, type Command } from './common.js';
import { redisWhere } from '../redis.js';
import { redisForUp } from '../redis/target.js';
import { catchStopSignals, secondsLeft, STOP_BOUND_MS } from '../stop-signals.js';

/** Of the stop's bound, what is kept to log the stop and exit… */
const STOP_MARGIN_MS = 1500;
/** …and what one part waiting on its jobs leaves the parts closed after it (the queues, their Redis connections). */
const STOP_REST_MS = 2000;

export const upCommand: Command = {
  name: 'up',
  summary: 'run the supervisor: producers, workers and the web (or some of them)',
  usage: `usage: sunset up [--role producers|workers|web]... [--dry-run] [--config FILE]

Runs the exit pipeline (ADR-0010): release → grace → one message → at most three exit
requests → a person. --role (repeatable) runs only some parts, to split them over processes:
  producers  the task watcher and the reconcile / expire schedulers
  workers    one worker per queue (release, ask, retry, the rate-limited exit worker, ...)
  web        Bull Board, the fleet and decisions pages, the JSON API
With no Redis named (redisUrl, redisCluster, $REDIS_URL) and none answering at 127.0.0.1:6379, it
runs a redis-server of its own (config privateRedis): a unix socket and its AOF in stateDir/redis,
restarted if it dies, stopped when the last sunset up using it stops; the other commands find it.
--dry-run takes every step the real run would (release, ask, a request, expire) on a
schedule of its own and logs each as would-… (audited in stateDir/dry-run.audit.jsonl); it
writes nothing the real run reads, and its schedule is removed when it stops. It takes the
likely outcome of an exit request (the session leaves), so a chain ends at its first request.
Logs are JSON lines on stderr. Interrupted or terminated, it closes every part once
and exits 0 within 10 s, whatever Redis does; a second interrupt says how long is left. An exit
job still confirming then is taken up by the next start (its call is in the exit ledger).`,
  options: { role: { type: 'string', multiple: true }, 'dry-run': { type: 'boolean' } },
  async run({ values }, io) {
    const roles = (values.role ?? []) as string[];
    for (const r of roles)
      if (!ROLES.includes(r as Role)) throw new UsageError(`--role takes producers, workers or web, not "${r}"\n\n${this.usage}`);
    const named = config(values, io);
    const log = createLogger(named.log.level);
    // Interrupted or terminated from here on — while its Redis starts too — it stops within STOP_BOUND_MS whatever
    // Redis does (src/stop-signals.ts), and exits 0
    const stop = catchStopSignals({
      on: (e) =>
        e.first && !e.cleaning
          ? log.info({ event: 'up:stopping', signal: e.signal }, `sunset stopping (within ${STOP_BOUND_MS / 1000} s)`)
          : log.warn(
              { event: 'up:still-stopping', signal: e.signal, leftMs: e.leftMs },
              `sunset is still stopping, ${secondsLeft(e.leftMs)}: it closes every part it can rather than leave them half-closed`,
            ),
      atBound: () => {
        log.warn({ event: 'up:stop-bound' }, `sunset stopped at the ${STOP_BOUND_MS / 1000} s bound with parts still closing`);
        process.exit(EXIT.ok);
      },
    });
    let startWeb: typeof import('../web/server.js').startWeb | undefined;
    if (!roles.length || roles.includes('web')) {
      const web = await import('../web/server.js');
      web.assertWebConfig(named); // refuse a non-loopback bind without a token before starting anything
      startWeb = web.startWeb;
    }
    if (stop.code !== null) {
      log.info({ event: 'up:stopped' }, 'sunset stopped'); // before anything started
      return EXIT.ok;
    }
    // no Redis named and none at the default address: its own redis-server, supervised until it stops
    const redis = await redisForUp(named, log, io.env);
    const cfg = redis.config;
    log.info(
      {
        event: 'up:starting',
        host: cfg.host,
        redis: redisWhere(cfg),
        roles: roles.length ? roles : ROLES,
        dryRun: Boolean(values['dry-run']),
      },
      'sunset starting',
    );
    if (stop.code !== null) {
      // stopped while its Redis started: nothing else has started
      await redis.close();
      log.info({ event: 'up:stopped' }, 'sunset stopped');
      return EXIT.ok;
    }
    const { startSunset } = await import('../pipeline/up.js');
    const running = await startSunset(cfg, { roles: roles as Role[], dryRun: values['dry-run'], log, startWeb }).catch(async (err) => {
      await redis.close();
      // a start that failed (the web's port taken, …) has closed its other parts, or left them closing on a Redis that
      // does not answer: said, then the process ends — a worker's reconnect timer would keep it running for nothing
      process.exit(sayFailure('up', err, io));
    });
    if (stop.code === null) {
      // said as log lines like the rest of stderr (the web's URL: web:listening), so that a reader of JSON lines is never handed plain text
      if (running.web?.ephemeral)
        log.info(
          { event: 'up:dry-run-token', token: running.web.token },
          'a dry run writes no web token into stateDir; for its POSTs use this one, for this run only',
        );
      if (values['dry-run'])
        log.warn(
          { event: 'up:dry-run' },
          'DRY RUN — every step is taken on a schedule of its own and logged as would-…; nothing is released, asked, requested or exited, and nothing the real run reads is written',
        );
      log.info({ event: 'up:running', host: cfg.host }, 'sunset running');
      await stop.signalled;
    }
    // Every part closes within what is left of the bound, less a margin to say so and exit. An exit job still
    // confirming when the budget runs out is left: its lock lapses and the next start takes it up again, stalled;
    // its call is in the exit ledger, so the replay only confirms (docs/operations.md, "Stopping").
    const budget = Math.max(0, stop.leftMs() - STOP_MARGIN_MS);
    const left = await running.close(Math.max(0, budget - STOP_REST_MS), budget);
    // its own redis-server last (SHUTDOWN, which also syncs the AOF); a forced exit runs the same on its way out
    await redis.close();
    log.info(
      { event: 'up:stopped', ...(left.length ? { left } : {}) },
      left.length ? `sunset stopped; left closing: ${left.join(', ')}` : 'sunset stopped',
    );
    // every part has closed, or been left closing (a worker waiting on a Redis that does not answer): end now. What
    // may still hold the event loop (a client's reconnect timer, a probe child past its use) holds nothing to keep,
    // and waiting on it made a plain SIGTERM take seconds; the logs are written synchronously, so none is lost
    process.exit(EXIT.ok);
  },
};
