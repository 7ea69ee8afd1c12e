// `sunset exit --job JOBID` and `--cancel JOBID`: a request already queued, followed or taken back by its job
// id. Apart from exit.ts, which makes the request: these only read the queue and the ledger (and remove a job).
import { createDeps, closeProducers } from '../pipeline/deps.js';
import { EXIT, personName, plainLogger, type Io } from './common.js';
import { readExit } from '../store/ledger.js';
import { decided } from '../pipeline/events.js';
import type { Config } from '../config.js';
import { errorMessage } from '../errors.js';
import { sayFinished, waitForOutcome, type ExitDeps, type Who } from './exit-outcome.js';

/** `sunset exit --job JOBID [--wait]`: where a queued exit request is, and what became of it. */
export async function followJob(cfg: Config, jobId: string, wait: boolean, json: boolean, io: Io): Promise<number> {
  return withExitJob(cfg, jobId, json, io, async (deps, job, print) => {
    const rec = readExit(cfg.stateDir, jobId);
    if (!job && !rec) {
      print({ status: 'unknown-job', jobId });
      io.err(
        `sunset exit: no exit job ${JSON.stringify(jobId)} in the queue or the exit ledger (never queued, taken back with --cancel, or finished long ago and trimmed)`,
      );
      return EXIT.usage;
    }
    const sessionId = rec?.sessionId ?? (job?.data as { sessionId?: string } | undefined)?.sessionId ?? '';
    // a request not yet carried out has no ledger record: the roster names its session as every other line does
    const row = rec
      ? undefined
      : await deps.fleet(0).then(
          (snap) => snap.sessions.find((v) => v.sessionId === sessionId && v.pid !== null),
          () => undefined,
        );
    const who: Who = { sessionId, label: rec?.label ?? rec?.id ?? row?.label ?? sessionId.slice(0, 8), id: rec?.id ?? row?.id ?? null };
    const state = job ? await job.getState() : 'completed';
    if (wait && state !== 'completed' && state !== 'failed') return await waitForOutcome(deps, cfg, jobId, who, print, io, json);
    if (rec?.finishedAt || state === 'completed' || state === 'failed') {
      const outcome = rec?.finishedAt ? rec.outcome : ((job?.returnvalue as { outcome?: string } | undefined)?.outcome ?? undefined);
      return sayFinished(cfg, jobId, who, outcome, rec, { state }, print, io, json);
    }
    const where =
      state === 'active'
        ? 'being carried out now (the session is being asked to leave, or sunset waits for it to)'
        : `${state}: waiting for a running \`sunset up\` to carry it out at the exit rate`;
    print({ status: 'queued', jobId, state, sessionId });
    if (!json) io.out(`exit job ${jobId} (session ${who.label}) is ${where}`);
    return EXIT.ok;
  });
}

type ExitJob = NonNullable<Awaited<ReturnType<ExitDeps['producers']['exit']['queue']['getJob']>>>;

/** One-shot producers, the job (or undefined), a --json printer; Redis that does not answer is said and is exit 1. */
async function withExitJob(
  cfg: Config,
  jobId: string,
  json: boolean,
  io: Io,
  fn: (deps: ExitDeps, job: ExitJob | undefined, print: (o: object) => unknown) => Promise<number>,
): Promise<number> {
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
export async function cancelJob(cfg: Config, jobId: string, json: boolean, io: Io): Promise<number> {
  return withExitJob(cfg, jobId, json, io, async (deps, job, print) => {
    if (!job) {
      print({ status: 'unknown-job', jobId });
      io.err(`sunset exit: no exit job ${JSON.stringify(jobId)} in the queue (never queued, already taken back, or finished and trimmed)`);
      return EXIT.usage;
    }
    const data = job.data as { reason?: string; sessionId?: string };
    if (data.reason !== 'person') {
      print({ status: 'not-cancelled', jobId, why: 'not-a-person-request' });
      io.err(
        `sunset exit: job ${jobId} is sunset's own step (${data.reason}), not a person's request: it is not taken back from here (a task's chain ends when its task is reopened; pin the session to keep it)`,
      );
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
    } catch (err) {
      print({ status: 'not-cancelled', jobId, state: 'active' });
      io.err(`sunset exit: job ${jobId} could not be taken back (${errorMessage(err)}): a worker has it`);
      return EXIT.failure;
    }
    decided(
      deps,
      'exit:person-cancelled',
      { jobId, sessionId: data.sessionId, by: personName() },
      `exit job ${jobId} taken back by ${personName()}`,
    );
    print({ status: 'cancelled', jobId, sessionId: data.sessionId });
    if (!json) io.out(`exit job ${jobId} taken back: nothing was done to its session`);
    return EXIT.ok;
  });
}
