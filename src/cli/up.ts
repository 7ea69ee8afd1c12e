import { startSunset, ROLES, type Role } from '../pipeline/up.js';
import { createLogger } from '../log.js';
import { EXIT, UsageError, config, type Command } from './common.js';
import { redisWhere } from '../redis.js';

export const upCommand: Command = {
  name: 'up',
  summary: 'run the supervisor: producers, workers and the web (or some of them)',
  usage: `usage: sunset up [--role producers|workers|web]... [--dry-run] [--config FILE]

Runs the exit pipeline (ADR-0010): release → grace → one message → at most three exit
requests → a person. --role (repeatable) runs only some parts, to split them over processes:
  producers  the task watcher and the reconcile / expire schedulers
  workers    one worker per queue (release, ask, retry, the rate-limited exit worker, ...)
  web        Bull Board, the fleet and decisions pages, the JSON API
--dry-run takes every step the real run would (release, ask, a request, expire) on a
schedule of its own and logs each as would-… (audited in stateDir/dry-run.audit.jsonl); it
writes nothing the real run reads, and its schedule is removed when it stops. It takes the
likely outcome of an exit request (the session leaves), so a chain ends at its first request.
Logs are JSON lines on stderr. Interrupted or terminated, it closes every part once (an exit job
still confirming is given its exitConfirm); a second interrupt stops it at once.`,
  options: { role: { type: 'string', multiple: true }, 'dry-run': { type: 'boolean' } },
  async run({ values }, io) {
    const roles = (values.role ?? []) as string[];
    for (const r of roles) if (!ROLES.includes(r as Role)) throw new UsageError(`--role takes producers, workers or web, not "${r}"\n\n${this.usage}`);
    const cfg = config(values, io);
    const log = createLogger(cfg.log.level);
    let startWeb;
    if (!roles.length || roles.includes('web')) {
      const web = await import('../web/server.js');
      web.assertWebConfig(cfg); // refuse a non-loopback bind without a token before starting anything
      startWeb = web.startWeb;
    }
    log.info({ event: 'up:starting', host: cfg.host, redis: redisWhere(cfg), roles: roles.length ? roles : ROLES, dryRun: Boolean(values['dry-run']) }, 'sunset starting');
    const running = await startSunset(cfg, { roles: roles as Role[], dryRun: values['dry-run'], log, startWeb });
    // said as log lines like the rest of stderr (the web's URL: web:listening), so that a reader of JSON lines is never handed plain text
    if (running.web && running.web.ephemeral) log.info({ event: 'up:dry-run-token', token: running.web.token }, 'a dry run writes no web token into stateDir; for its POSTs use this one, for this run only');
    if (values['dry-run']) log.warn({ event: 'up:dry-run' }, 'DRY RUN — every step is taken on a schedule of its own and logged as would-…; nothing is released, asked, requested or exited, and nothing the real run reads is written');
    log.info({ event: 'up:running', host: cfg.host }, 'sunset running');
    await new Promise<void>((resolve) => {
      let stopping = false;
      const stop = (sig: string, code: number) => {
        if (stopping) {
          // a second signal: the person does not want to wait for the exit jobs to finish confirming
          log.warn({ event: 'up:forced', signal: sig }, 'sunset stopping now (second signal)');
          process.exit(code);
        }
        stopping = true;
        log.info({ event: 'up:stopping', signal: sig }, 'sunset stopping (a second interrupt stops it at once)');
        running.close().then(resolve, resolve);
      };
      // on, not once: with a probe child in flight, execa's signal-exit re-raises a signal that no other
      // listener is left to handle, which killed sunset halfway through this shutdown (the chaos suite)
      process.on('SIGINT', () => stop('interrupt', 130));
      process.on('SIGTERM', () => stop('terminate', 143));
    });
    log.info({ event: 'up:stopped' }, 'sunset stopped');
    return EXIT.ok;
  },
};
