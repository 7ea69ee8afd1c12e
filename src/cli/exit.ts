import { QueueEvents } from 'bullmq/dist/cjs/classes/index.js';
import { createDeps, closeProducers, redisLinkOf } from '../pipeline/deps.js';
import { requestPersonExit } from '../pipeline/person-exit.js';
import { PREFIX } from '../../queues/common.js';
import { REASONS, type Reason } from '../doctrine/verdict.js';
import { EXIT, config, personName, plainLogger, type Command } from './common.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { readExit, type ExitRecord } from '../store/ledger.js';
import { formatDuration } from '../duration.js';
import { decided } from '../pipeline/events.js';
import type { Config } from '../config.js';
import type { Io } from './common.js';

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

A second request for a session whose request is still waiting or being carried out joins it
(the same job: one exit call, not two).

       sunset exit --job JOBID [--wait] [--json]     what became of a queued request (or wait for it)
       sunset exit --cancel JOBID [--json]           take back a request that is still waiting

Exit codes: 0 accepted (with --wait: exited; --job: finished exited, or not finished yet; --cancel:
taken back), 1 failure (roster failed; with --wait: anything but exited; --cancel: already being carried
out or finished), 2 bad usage, an unknown id or job, or an id that names several sessions, 3 refused:
protected, or a record or gone session (nothing to exit, and no override reaches it).`,
  options: { reason: { type: 'string' }, 'override-protection': { type: 'boolean' }, wait: { type: 'boolean' }, json: { type: 'boolean' }, job: { type: 'string' }, cancel: { type: 'string' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (values.job !== undefined || values.cancel !== undefined) {
      if (positionals.length || (values.job !== undefined && values.cancel !== undefined) || values.reason !== undefined || values['override-protection'] || (values.cancel !== undefined && values.wait)) {
        io.err(`sunset exit: --job JOBID [--wait] or --cancel JOBID, alone\n\n${this.usage}`);
        return EXIT.usage;
      }
      return values.job !== undefined ? followJob(config(values, io), values.job, Boolean(values.wait), Boolean(values.json), io) : cancelJob(config(values, io), values.cancel!, Boolean(values.json), io);
    }
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
      const queued = r.joined ? `already requested: this joins job ${r.jobId}` : `job ${r.jobId}`;
      if (!values.wait) {
        print({ status: 'accepted', jobId: r.jobId, id: r.view.id, ...(r.joined ? { joined: true } : {}) });
        if (!values.json) io.out(`exit of ${r.view.label} queued (${queued}); a running \`sunset up\` carries it out at the exit rate (sunset exit --job ${r.jobId} follows it; --cancel takes it back while it waits)`);
        return EXIT.ok;
      }
      // progress on stderr: stdout stays the answer (what became of it), as scripts read it
      if (!values.json) io.err(`exit of ${r.view.label} queued (${queued}); waiting up to ${formatDuration(waitMs(cfg))} for its outcome (windows.exitConfirm + 3 × exitRate.per + 2 × probeTimeout)`);
      return await waitForOutcome(deps, cfg, r.jobId, { sessionId: r.view.sessionId, label: r.view.label, id: r.view.id }, (o) => print({ ...o, ...(r.joined ? { joined: true } : {}) }), io, Boolean(values.json));
    } finally {
      await closeProducers(deps.producers);
    }
  },
};

type Who = { sessionId: string; label: string; id: string | null };

/** How long --wait waits: the exit's own confirmation, a few exit-rate slots, and the re-check's probes. */
const waitMs = (cfg: Config) => cfg.windows.exitConfirm + cfg.exitRate.per * 3 + 2 * cfg.probeTimeout;

/** Wait for an exit job to finish and say its outcome (the ledger's words). A wait that times out leaves the job queued, and says so. */
async function waitForOutcome(deps: ReturnType<typeof createDeps>, cfg: Config, jobId: string, who: Who, print: (o: object) => unknown, io: Io, json: boolean): Promise<number> {
  // the producers' own link: plain options for one server; in cluster mode their Cluster instance, which
  // QueueEvents duplicates (it blocks) and closes its copy of; closeProducers quits the instance after
  const link = redisLinkOf(deps.producers)!;
  const events = new QueueEvents(deps.producers.exit.name, { connection: link.connection(true), prefix: PREFIX });
  const timeout = waitMs(cfg);
  try {
    const job = await deps.producers.exit.queue.getJob(jobId);
    if (!job) throw new Error('the job is not in the queue');
    let result: { outcome?: string; replay?: string } | undefined;
    try {
      result = (await job.waitUntilFinished(events, timeout)) as typeof result;
    } catch (err: any) {
      if (/timed out|no finish notification/i.test(String(err?.message))) {
        print({ status: 'waiting', jobId, id: who.id, waitedMs: timeout });
        io.err(`sunset exit: no outcome within ${formatDuration(timeout)}: job ${jobId} stays queued, and a running \`sunset up\` on Redis at ${link.where} carries it out (is one running? sunset exit --job ${jobId} asks again; --cancel ${jobId} takes it back while it waits)`);
        return EXIT.failure;
      }
      // a job that failed (its processor threw) has no outcome of its own: the ledger may still say what happened
    }
    // the ledger holds what happened, with the error or the reasons; a replayed job returns only { replay }
    const rec = readExit(cfg.stateDir, jobId);
    const outcome = (rec?.finishedAt ? rec.outcome : undefined) ?? result?.outcome ?? result?.replay;
    return sayFinished(cfg, jobId, who, outcome, rec, {}, print, io, json);
  } catch (err: any) {
    io.err(`sunset exit: no outcome for job ${jobId} (${err?.message ?? err}); is \`sunset up\` running on Redis at ${link.where}?`);
    return EXIT.failure;
  } finally {
    await events.close();
  }
}

/** A finished exit job, said once: the ledger's words on stdout (or the JSON); exit 0 only for exited. */
function sayFinished(cfg: Config, jobId: string, who: Who, outcome: string | undefined, rec: ExitRecord | null | undefined, extra: object, print: (o: object) => unknown, io: Io, json: boolean): number {
  const words = outcomeWords({ ...(rec ?? {}), sessionId: who.sessionId, label: who.label, outcome: outcome as ExitRecord['outcome'] }, cfg.windows.exitConfirm);
  print({ status: 'finished', jobId, id: who.id, ...extra, outcome: outcome ?? null, words, ...(rec?.error ? { error: rec.error } : {}), ...(rec?.reasons ? { reasons: rec.reasons } : {}) });
  if (!json) io.out(words); // the answer, whatever it is; the exit code tells exited (0) from the rest (1)
  return outcome === 'exited' ? EXIT.ok : EXIT.failure;
}

/** `sunset exit --job JOBID [--wait]`: where a queued exit request is, and what became of it. */
async function followJob(cfg: Config, jobId: string, wait: boolean, json: boolean, io: Io): Promise<number> {
  return withExitJob(cfg, jobId, json, io, async (deps, job, print) => {
    const rec = readExit(cfg.stateDir, jobId);
    if (!job && !rec) {
      print({ status: 'unknown-job', jobId });
      io.err(`sunset exit: no exit job ${JSON.stringify(jobId)} in the queue or the exit ledger (never queued, taken back with --cancel, or finished long ago and trimmed)`);
      return EXIT.usage;
    }
    const sessionId = rec?.sessionId ?? (job?.data as { sessionId?: string } | undefined)?.sessionId ?? '';
    // a request not yet carried out has no ledger record: the roster names its session as every other line does
    const row = rec ? undefined : await deps.fleet(0).then((snap) => snap.sessions.find((v) => v.sessionId === sessionId && v.pid !== null), () => undefined);
    const who: Who = { sessionId, label: rec?.label ?? rec?.id ?? row?.label ?? sessionId.slice(0, 8), id: rec?.id ?? row?.id ?? null };
    const state = job ? await job.getState() : 'completed';
    if (wait && state !== 'completed' && state !== 'failed') return await waitForOutcome(deps, cfg, jobId, who, print, io, json);
    if (rec?.finishedAt || state === 'completed' || state === 'failed') {
      const outcome = rec?.finishedAt ? rec.outcome : ((job?.returnvalue as { outcome?: string } | undefined)?.outcome ?? undefined);
      return sayFinished(cfg, jobId, who, outcome, rec, { state }, print, io, json);
    }
    const where = state === 'active' ? 'being carried out now (the session is being asked to leave, or sunset waits for it to)' : `${state}: waiting for a running \`sunset up\` to carry it out at the exit rate`;
    print({ status: 'queued', jobId, state, sessionId });
    if (!json) io.out(`exit job ${jobId} (session ${who.label}) is ${where}`);
    return EXIT.ok;
  });
}

type ExitDeps = ReturnType<typeof createDeps>;
type ExitJob = NonNullable<Awaited<ReturnType<ExitDeps['producers']['exit']['queue']['getJob']>>>;

/** One-shot producers, the job (or undefined), a --json printer; Redis that does not answer is said and is exit 1. */
async function withExitJob(cfg: Config, jobId: string, json: boolean, io: Io, fn: (deps: ExitDeps, job: ExitJob | undefined, print: (o: object) => unknown) => Promise<number>): Promise<number> {
  const deps = createDeps(cfg, { log: plainLogger(io, 'exit', { level: 'warn' }), oneShot: true });
  const print = (o: object) => json && io.out(JSON.stringify(o, null, 2));
  try {
    const job = await deps.producers.exit.queue.getJob(jobId).catch((err: Error) => err);
    if (job instanceof Error) {
      io.err(`sunset exit: cannot reach Redis (${job.message})`);
      return EXIT.failure;
    }
    return await fn(deps, job ?? undefined, print);
  } finally {
    await closeProducers(deps.producers);
  }
}

/** `sunset exit --cancel JOBID`: take back a request that is still waiting (never one being carried out). */
async function cancelJob(cfg: Config, jobId: string, json: boolean, io: Io): Promise<number> {
  return withExitJob(cfg, jobId, json, io, async (deps, job, print) => {
    if (!job) {
      print({ status: 'unknown-job', jobId });
      io.err(`sunset exit: no exit job ${JSON.stringify(jobId)} in the queue (never queued, already taken back, or finished and trimmed)`);
      return EXIT.usage;
    }
    const data = job.data as { reason?: string; sessionId?: string };
    if (data.reason !== 'person') {
      print({ status: 'not-cancelled', jobId, why: 'not-a-person-request' });
      io.err(`sunset exit: job ${jobId} is sunset's own step (${data.reason}), not a person's request: it is not taken back from here (a task's chain ends when its task is reopened; pin the session to keep it)`);
      return EXIT.failure;
    }
    const state = await job.getState();
    if (!['waiting', 'delayed', 'prioritized', 'waiting-children'].includes(state)) {
      print({ status: 'not-cancelled', jobId, state });
      io.err(`sunset exit: job ${jobId} is ${state === 'active' ? 'being carried out now' : state}: too late to take back`);
      return EXIT.failure;
    }
    try {
      await job.remove(); // BullMQ refuses to remove a job a worker has just locked: then it is too late
    } catch (err: any) {
      print({ status: 'not-cancelled', jobId, state: 'active' });
      io.err(`sunset exit: job ${jobId} could not be taken back (${err?.message ?? err}): a worker has it`);
      return EXIT.failure;
    }
    decided(deps, 'exit:person-cancelled', { jobId, sessionId: data.sessionId, by: personName() }, `exit job ${jobId} taken back by ${personName()}`);
    print({ status: 'cancelled', jobId, sessionId: data.sessionId });
    if (!json) io.out(`exit job ${jobId} taken back: nothing was done to its session`);
    return EXIT.ok;
  });
}
