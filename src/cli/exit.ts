// `sunset exit ID`: a person's exit request for one session, on the same rate-limited road as the web's
// (requestPersonExit); --wait waits for its outcome (exit-outcome.ts); --job and --cancel are exit-jobs.ts.
import { createDeps, closeProducers } from '../pipeline/deps.js';
import { redisForCommand, redisOrWhyNot } from '../redis/target.js';
import { requestPersonExit } from '../pipeline/person-exit.js';
import { REASONS, type Reason } from '../doctrine/verdict.js';
import { EXIT, config, personName, plainLogger, type Command } from './common.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { formatDuration } from '../duration.js';
import { cancelJob, followJob } from './exit-jobs.js';
import { waitForOutcome, waitMs } from './exit-outcome.js';

export const exitCommand: Command = {
  name: 'exit',
  summary: "a person's exit request for one session, on the same rate-limited path",
  usage: `usage: sunset exit ID [--reason TEXT] [--override-protection] [--wait] [--json] [--config FILE]

Asks the session ID (its short id, its sessionId, a unique prefix of either, or its
name) to leave by its own exit path, through the
rate-limited exit queue that a running \`sunset up\` works. A protected session is refused
(exit 3, naming the reasons) unless --override-protection: a person's decision, audited
with who and --reason. A record, a gone session, or an interactive session in no tmux
pane cannot be exited by any override. --wait waits for the outcome.

With --wait it prints what became of it: exited, still running (asked, it did not leave within
windows.exitConfirm: sunset never forces), refused or failed (nothing was done to it), or gone.

A second request for a session whose request is still waiting or being carried out joins it
(the same job: one exit call, not two).

       sunset exit --job JOBID [--wait] [--json]     what became of a queued request (or wait for it)
       sunset exit --cancel JOBID [--json]           take back a request that is still waiting

Exit codes: 0 accepted (with --wait: exited; --job: finished exited, or not finished yet; --cancel:
taken back), 1 failure (roster failed; with --wait: anything but exited; --cancel: already being carried
out or finished), 2 bad usage, an unknown id or job, or an id that names several sessions, 3 refused:
protected, or a record or gone session (nothing to exit, and no override reaches it).`,
  options: {
    reason: { type: 'string' },
    'override-protection': { type: 'boolean' },
    wait: { type: 'boolean' },
    json: { type: 'boolean' },
    job: { type: 'string' },
    cancel: { type: 'string' },
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (values.job !== undefined || values.cancel !== undefined) {
      if (
        positionals.length ||
        (values.job !== undefined && values.cancel !== undefined) ||
        values.reason !== undefined ||
        values['override-protection'] ||
        (values.cancel !== undefined && values.wait)
      ) {
        io.err(`sunset exit: --job JOBID [--wait] or --cancel JOBID, alone\n\n${this.usage}`);
        return EXIT.usage;
      }
      const target = await redisForCommand(config(values, io));
      return values.job !== undefined
        ? followJob(target, values.job, Boolean(values.wait), Boolean(values.json), io)
        : cancelJob(target, values.cancel!, Boolean(values.json), io);
    }
    if (positionals.length !== 1) {
      io.err(`sunset exit: takes exactly one ID\n\n${this.usage}`);
      return EXIT.usage;
    }
    const id = positionals[0];
    // the Redis `sunset up` runs on, its private one too; a refusal needs no Redis, so a missing `up` is said
    // only when a request would be queued
    const { config: cfg, missing } = await redisOrWhyNot(config(values, io));
    const log = plainLogger(io, 'exit', { level: cfg.log.level === 'info' ? 'warn' : cfg.log.level });
    const deps = createDeps(cfg, { log, oneShot: true }); // a Redis that is not there is said at once, not waited out
    const by = personName();
    try {
      // a one-shot command: a Redis that is not there is said at once, not waited out as `sunset up` does
      const r = await requestPersonExit(deps, id, { why: values.reason ?? '', by, override: Boolean(values['override-protection']) });
      const print = (o: object) => values.json && io.out(JSON.stringify(o, null, 2));
      if (r.status === 'needs-reason') {
        print({ status: r.status });
        io.err(`sunset exit: --override-protection is a person's decision and is audited: say why with --reason TEXT`);
        return EXIT.usage;
      }
      if (r.status === 'roster-failed') {
        print({ status: r.status, error: r.error });
        io.err(`sunset exit: not acting: ${r.error}`);
        return EXIT.failure;
      }
      if (r.status === 'unknown-id') {
        print({ status: r.status });
        io.err(`sunset exit: no session is named ${JSON.stringify(id)} (by short id, sessionId, a prefix of either, or name)`);
        return EXIT.usage;
      }
      if (r.status === 'ambiguous') {
        print({ status: r.status, matches: r.matches.map((m) => ({ id: m.id, sessionId: m.sessionId, name: m.name })) });
        io.err(`sunset exit: ${ambiguousMessage(id, r.matches)}`);
        return EXIT.usage;
      }
      if (r.status === 'not-queued') {
        const error = missing?.message ?? r.error;
        print({ status: r.status, id: r.view.id, error });
        io.err(`sunset exit: not queuing: ${error}`);
        return EXIT.failure;
      }
      if (r.status === 'refused' && (r.view.verdict === 'record' || r.view.verdict === 'gone')) {
        print({ status: r.status, id: r.view.id, verdict: r.view.verdict, reasons: r.reasons, overridable: r.overridable });
        io.err(
          r.view.verdict === 'record'
            ? `sunset exit: ${r.view.label} is a roster record (no process): nothing to exit`
            : `sunset exit: ${r.view.label} has gone (its process has ended): nothing to exit`,
        );
        return EXIT.protected;
      }
      if (r.status === 'refused') {
        print({ status: r.status, id: r.view.id, verdict: r.view.verdict, reasons: r.reasons, overridable: r.overridable });
        io.err(
          `sunset exit: refused: session ${r.view.label} is ${r.view.verdict}${r.reasons.length ? `:\n${r.reasons.map((x) => `  ${x}: ${REASONS[x as Reason] ?? x}`).join('\n')}` : ''}` +
            (r.view.notes.length ? `\n${r.view.notes.map((n) => `  ${n}`).join('\n')}` : '') +
            (r.overridable ? `\n(--override-protection, with --reason, makes it a person's decision)` : `\n(no override can reach it)`),
        );
        return EXIT.protected;
      }
      const queued = r.joined ? `already requested: this joins job ${r.jobId}` : `job ${r.jobId}`;
      if (!values.wait) {
        print({ status: 'accepted', jobId: r.jobId, id: r.view.id, ...(r.joined ? { joined: true } : {}) });
        if (!values.json)
          io.out(
            `exit of ${r.view.label} queued (${queued}); a running \`sunset up\` carries it out at the exit rate (sunset exit --job ${r.jobId} follows it; --cancel takes it back while it waits)`,
          );
        return EXIT.ok;
      }
      // progress on stderr: stdout stays the answer (what became of it), as scripts read it
      if (!values.json)
        io.err(
          `exit of ${r.view.label} queued (${queued}); waiting up to ${formatDuration(waitMs(cfg))} for its outcome (windows.exitConfirm + 3 × exitRate.per + 2 × probeTimeout)`,
        );
      return await waitForOutcome(
        deps,
        cfg,
        r.jobId,
        { sessionId: r.view.sessionId, label: r.view.label, id: r.view.id },
        (o) => print({ ...o, ...(r.joined ? { joined: true } : {}) }),
        io,
        Boolean(values.json),
      );
    } finally {
      await closeProducers(deps.producers);
    }
  },
};
