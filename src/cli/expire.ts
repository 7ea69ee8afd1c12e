import { createDeps, closeProducers } from '../pipeline/deps.js';
import { redisForCommand, redisOrWhyNot } from '../redis/target.js';
import { runExpireScan } from '../pipeline/expire.js';
import { formatDuration } from '../duration.js';
import { EXIT, config, plainLogger, type Command } from './common.js';

export const expireCommand: Command = {
  name: 'expire',
  summary: 'run one expire scan now (untasked sessions idle past expireIdle)',
  usage: `usage: sunset expire [--dry-run] [--verbose] [--json] [--config FILE]

Finds live sessions that no task names, roster status idle, transcript silent for at least
windows.expireIdle, unattached, inbox drained — and enqueues an exit job for each on the
rate-limited path (\`sunset up\` carries it out). Any unknown evidence spares a session.
Prints one line per session it enqueued (or would, with --dry-run) or gave up on after
maxExitRequests; --verbose also the spared (with their reasons) and those between requests.

Exit codes: 0 done, 1 the roster probe failed (nothing expires), 2 bad usage or config.`,
  options: { 'dry-run': { type: 'boolean' }, verbose: { type: 'boolean' }, json: { type: 'boolean' } },
  async run({ values }, io) {
    // the Redis `sunset up` runs on, its private one too; a dry run queues nothing, so it runs without an `up`
    const cfg = values['dry-run'] ? (await redisOrWhyNot(config(values, io))).config : await redisForCommand(config(values, io));
    // the pipeline's warnings as sentences; the roster's failure is said below, once
    const deps = createDeps(cfg, { log: plainLogger(io, 'expire', { said: ['expire:roster-failed'] }) });
    try {
      const r = await runExpireScan(deps, { dryRun: values['dry-run'] });
      if (values.json) io.out(JSON.stringify(r, null, 2));
      else {
        if (!r.ok) io.err(`sunset expire: roster failed, nothing expires: ${r.error}`);
        const shown = r.lines.filter((l) => values.verbose || (l.action !== 'spared' && l.action !== 'waiting'));
        // a scan that found nothing to do says so, rather than print nothing
        if (r.ok && !shown.length)
          io.out(
            `nothing to expire: ${r.lines.length} untasked session${r.lines.length === 1 ? '' : 's'} looked at${r.lines.length ? ' (--verbose: each, and why it waits or is spared)' : ''}`,
          );
        for (const l of shown) {
          io.out(
            `${l.action.padEnd(14)} ${l.label.padEnd(10)} silent ${formatDuration(l.silenceMs)}${l.n ? `  request ${l.n}/${cfg.maxExitRequests}` : ''}${l.reasons?.length ? `  (${l.reasons.join(', ')})` : ''}`,
          );
        }
      }
      return r.ok ? EXIT.ok : EXIT.failure;
    } finally {
      await closeProducers(deps.producers);
    }
  },
};
