import { QueueEvents } from 'bullmq';
import { createDeps, closeProducers, redisLinkOf } from '../pipeline/deps.js';
import { requestPersonExit } from '../pipeline/person-exit.js';
import { PREFIX } from '../../queues/common.js';
import { REASONS, type Reason } from '../doctrine/verdict.js';
import { EXIT, config, personName, plainLogger, type Command } from './common.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { readExit, type ExitRecord } from '../store/ledger.js';
import { formatDuration } from '../duration.js';

const reasonText = (r: string) => REASONS[r as Reason] ?? r;

/**
 * What became of an exit request, in a person's words: `sunset exit --wait` prints it, and the web page
 * shows it for the exit it requested (GET /api/exit/<jobId>). `exitConfirm` is how long the worker waited.
 */
export function outcomeWords(rec: Pick<ExitRecord, 'outcome' | 'method' | 'error' | 'reasons' | 'label' | 'id' | 'sessionId'> & { ms?: number }, exitConfirm?: number): string {
  const who = rec.label ?? rec.id ?? rec.sessionId.slice(0, 8);
  const how = rec.method === 'typed-exit' ? '/exit typed into its pane' : rec.method === 'claude-stop' ? 'claude stop' : rec.method ?? 'its own exit path';
  const waited = exitConfirm ? ` (${formatDuration(exitConfirm)}, windows.exitConfirm)` : '';
  const reasons = (rec.reasons ?? []).map(reasonText).join('; ');
  switch (rec.outcome) {
    case 'exited':
      return `session ${who} exited: it left by its own exit path (${how}); its conversation can be resumed (sunset exited)`;
    case 'still-running':
      return `session ${who} is still running: it was asked to leave (${how}) and had not left when sunset stopped waiting${waited}${rec.error ? ` — ${rec.error}` : ''}. sunset does not force it: a person decides (docs/operations.md, "each exit outcome")`;
    case 'failed':
      return `session ${who} was not exited: its exit path could not be taken (${rec.error ?? 'unknown error'}); nothing was done to it`;
    case 'refused':
      return `session ${who} was not exited: re-checked just before acting, it was refused${reasons ? ` (${reasons})` : ''}; nothing was done to it`;
    case 'spared':
      return `session ${who} was spared: re-checked just before acting${reasons ? ` (${reasons})` : ''}; nothing was done to it`;
    case 'gone':
      return `session ${who} was not running any more: nothing to exit`;
    default:
      return `session ${who}: no outcome yet`;
  }
}

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

Exit codes: 0 accepted (with --wait: exited), 1 failure (roster failed; with --wait: anything but exited),
2 bad usage, an unknown id or one that names several sessions, 3 refused because protected.`,
  options: { reason: { type: 'string' }, 'override-protection': { type: 'boolean' }, wait: { type: 'boolean' }, json: { type: 'boolean' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1) {
      io.err(`sunset exit: takes exactly one ID\n\n${this.usage}`);
      return EXIT.usage;
    }
    const id = positionals[0];
    const cfg = config(values, io);
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
        print({ status: r.status, id: r.view.id, error: r.error });
        io.err(`sunset exit: not queuing: ${r.error}`);
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
      if (!values.wait) {
        print({ status: 'accepted', jobId: r.jobId, id: r.view.id });
        if (!values.json) io.out(`exit of ${r.view.label} queued (job ${r.jobId}); a running \`sunset up\` carries it out at the exit rate`);
        return EXIT.ok;
      }
      // the producers' own link: plain options for one server; in cluster mode their Cluster instance, which
      // QueueEvents duplicates (it blocks) and closes its copy of; closeProducers quits the instance after
      const link = redisLinkOf(deps.producers)!;
      const events = new QueueEvents(deps.producers.exit.name, { connection: link.connection(true), prefix: PREFIX });
      try {
        const job = await deps.producers.exit.queue.getJob(r.jobId);
        const timeout = cfg.windows.exitConfirm + cfg.exitRate.per * 3 + 2 * cfg.probeTimeout;
        const result = (await job!.waitUntilFinished(events, timeout)) as { outcome?: string; replay?: string; wouldExit?: boolean } | undefined;
        // the ledger holds what happened, with the error or the reasons; a replayed job returns only { replay }
        const rec = readExit(cfg.stateDir, r.jobId);
        const outcome = (rec?.finishedAt ? rec.outcome : undefined) ?? result?.outcome ?? result?.replay;
        const words = outcomeWords({ ...(rec ?? {}), sessionId: r.view.sessionId, label: r.view.label, outcome: outcome as ExitRecord['outcome'] }, cfg.windows.exitConfirm);
        print({ status: 'finished', jobId: r.jobId, id: r.view.id, outcome: outcome ?? null, words, ...(rec?.error ? { error: rec.error } : {}), ...(rec?.reasons ? { reasons: rec.reasons } : {}) });
        if (!values.json) io.out(words); // the answer, whatever it is; the exit code tells exited (0) from the rest (1)
        return outcome === 'exited' ? EXIT.ok : EXIT.failure;
      } catch (err: any) {
        io.err(`sunset exit: queued, but no outcome yet (${err.message}); is \`sunset up\` running on Redis at ${link.where}?`);
        return EXIT.failure;
      } finally {
        await events.close();
      }
    } finally {
      await closeProducers(deps.producers);
    }
  },
};
