// Waiting for a queued exit job and saying what became of it, once: the request's --wait and --job --wait
// both end here. Apart from exit.ts: the request, and following a job by its id, share it.
import { QueueEvents } from 'bullmq/dist/cjs/classes/index.js';
import { redisLinkOf, type createDeps } from '../pipeline/deps.js';
import { PREFIX } from '../../queues/common.js';
import { EXIT, type Io } from './common.js';
import { readExit, type ExitRecord } from '../store/ledger.js';
import { formatDuration } from '../duration.js';
import type { Config } from '../config.js';
import { errorMessage } from '../errors.js';
import { outcomeWords } from './exit-words.js';

export type ExitDeps = ReturnType<typeof createDeps>;

export type Who = { sessionId: string; label: string; id: string | null };

/** How long --wait waits: the exit's own confirmation, a few exit-rate slots, and the re-check's probes. */
export const waitMs = (cfg: Config) => cfg.windows.exitConfirm + cfg.exitRate.per * 3 + 2 * cfg.probeTimeout;

/** Wait for an exit job to finish and say its outcome (the ledger's words). A wait that times out leaves the job queued, and says so. */
export async function waitForOutcome(
  deps: ExitDeps,
  cfg: Config,
  jobId: string,
  who: Who,
  print: (o: object) => unknown,
  io: Io,
  json: boolean,
): Promise<number> {
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
    } catch (err) {
      if (/timed out|no finish notification/i.test(String(errorMessage(err)))) {
        print({ status: 'waiting', jobId, id: who.id, waitedMs: timeout });
        io.err(
          `sunset exit: no outcome within ${formatDuration(timeout)}: job ${jobId} stays queued, and a running \`sunset up\` on Redis at ${link.where} carries it out (is one running? sunset exit --job ${jobId} asks again; --cancel ${jobId} takes it back while it waits)`,
        );
        return EXIT.failure;
      }
      // a job that failed (its processor threw) has no outcome of its own: the ledger may still say what happened
    }
    // the ledger holds what happened, with the error or the reasons; a replayed job returns only { replay }
    const rec = readExit(cfg.stateDir, jobId);
    const outcome = (rec?.finishedAt ? rec.outcome : undefined) ?? result?.outcome ?? result?.replay;
    return sayFinished(cfg, jobId, who, outcome, rec, {}, print, io, json);
  } catch (err) {
    io.err(`sunset exit: no outcome for job ${jobId} (${errorMessage(err)}); is \`sunset up\` running on Redis at ${link.where}?`);
    return EXIT.failure;
  } finally {
    await events.close();
  }
}

/** A finished exit job, said once: the ledger's words on stdout (or the JSON); exit 0 only for exited. */
export function sayFinished(
  cfg: Config,
  jobId: string,
  who: Who,
  outcome: string | undefined,
  rec: ExitRecord | null | undefined,
  extra: object,
  print: (o: object) => unknown,
  io: Io,
  json: boolean,
): number {
  const words = outcomeWords(
    { ...(rec ?? {}), sessionId: who.sessionId, label: who.label, outcome: outcome as ExitRecord['outcome'] },
    cfg.windows.exitConfirm,
  );
  print({
    status: 'finished',
    jobId,
    id: who.id,
    ...extra,
    outcome: outcome ?? null,
    words,
    ...(rec?.error ? { error: rec.error } : {}),
    ...(rec?.reasons ? { reasons: rec.reasons } : {}),
  });
  if (!json) io.out(words); // the answer, whatever it is; the exit code tells exited (0) from the rest (1)
  return outcome === 'exited' ? EXIT.ok : EXIT.failure;
}
