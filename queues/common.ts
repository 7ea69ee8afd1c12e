// What every queue shares: the `{sunset}` prefix (a Redis Cluster hash tag), names that carry the host,
// bounded retention, and a producer that validates job data with the queue's own zod schema before add().
import { Job, Queue, type ConnectionOptions, type JobsOptions } from 'bullmq/dist/cjs/classes/index.js';
import { z } from 'zod';
import { QUEUE_PREFIX, queueName } from '../src/config.js';

export const PREFIX = QUEUE_PREFIX;

/** Chain jobs may go once done: the task file's latched fields are the memory (D7). */
export const CHAIN_RETENTION: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 86400, count: 5000 },
};

/** Exit jobs are kept (bounded by age) so that a replayed request is recognised. */
export const EXIT_RETENTION: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2000 },
  // the exit ledger in stateDir, not Redis, is what makes a replay confirm-only: 2,000 kept is plenty for
  // Bull Board and keeps Redis near 1 KB per tracked task (bench/redis-footprint.ts)
  removeOnComplete: { age: 7 * 86400, count: 2000 },
  removeOnFail: { age: 30 * 86400, count: 2000 },
};

/**
 * Whose chain a chain job carries: a task's (by its id), a Claude Code job's (its short id and process start), or
 * one of a kind added later (src/pipeline/chain-kinds/): its kind, the key its facts are kept under, its session.
 */
export const jobRefSchema = z.object({ shortId: z.string().min(1), sessionId: z.string().min(1), start: z.string().min(1) });
export type JobRef = z.infer<typeof jobRefSchema>;
export const kindRefSchema = z.object({ kind: z.string().min(1), key: z.string().min(1), sessionId: z.string().min(1) });
export type KindRef = z.infer<typeof kindRefSchema>;
export const chainRefFields = { taskId: z.string().min(1).optional(), job: jobRefSchema.optional(), chain: kindRefSchema.optional() };
/** What names a chain in a chain job's data. */
export type ChainJobData = { taskId?: string; job?: JobRef; chain?: KindRef };
export function oneChain(d: ChainJobData, ctx: z.RefinementCtx) {
  if ([d.taskId, d.job, d.chain].filter(Boolean).length !== 1)
    ctx.addIssue({ code: 'custom', message: 'a chain job names exactly one chain: a taskId, a job or a chain' });
}

/** BullMQ refuses ':' in custom job ids; ours use '/' and ids never hold it. */
export function jobId(...parts: Array<string | number>): string {
  return parts.map((p) => String(p).replace(/[:/]/g, '_')).join('/');
}

/** BullMQ's error codes (its ErrorCode enum) for a job that is gone, and one not in the state a call expected. */
const BULLMQ_JOB_NOT_EXIST = -1;
const BULLMQ_JOB_NOT_IN_STATE = -3;

/** The most adds sent to Redis in one go (one MULTI): a larger burst goes in several. */
const MAX_BATCH = 500;
/** A job due at least this far ahead may wait DEFER_MS for others to go with it. */
const DEFER_MIN_DELAY_MS = 1000;
const DEFER_MS = 5;

export interface QueueDef<S extends z.ZodType> {
  base: string;
  schema: S;
  retention: JobsOptions;
}

export class Producer<S extends z.ZodType> {
  readonly queue: Queue;
  constructor(
    readonly def: QueueDef<S>,
    host: string,
    connection: ConnectionOptions,
  ) {
    this.queue = new Queue(queueName(def.base, host), { connection, prefix: PREFIX, defaultJobOptions: def.retention });
    // a Redis outage is reported by the call that fails, or by `sunset up`'s own listener — never as a stack per reconnect
    this.queue.on('error', () => undefined);
  }
  get name() {
    return this.queue.name;
  }
  /**
   * Validate, then add under a deterministic id: a replay or a second producer adds nothing twice.
   * `dedupe`: while a job added under this key is waiting or working, an add under it returns that job instead (its id tells).
   * The adds of one turn of the event loop go to Redis together (addBulk: one round trip, not one each — a burst
   * of tasks turning terminal adds a thousand at once); each caller gets its own job, or the batch's error.
   * `requeue`: a job under this id that has finished (completed or failed, still kept by the retention) goes back to
   * the queue first (requeueFinished) — without it the add finds the id taken and adds nothing.
   */
  add(id: string, data: z.input<S>, opts: { delay?: number; priority?: number; dedupe?: string; requeue?: boolean } = {}): Promise<Job> {
    let parsed: unknown;
    try {
      parsed = this.def.schema.parse(data);
    } catch (err) {
      return Promise.reject(err);
    }
    // field by field, not by spreads (V8 makes a literal that spreads after a field a slow dictionary object)
    const jobOpts: JobsOptions = { jobId: id };
    if (opts.delay && opts.delay > 0) jobOpts.delay = Math.ceil(opts.delay);
    if (opts.priority) jobOpts.priority = opts.priority;
    if (opts.dedupe) jobOpts.deduplication = { id: opts.dedupe };
    if (!opts.requeue) return this.enqueue(parsed, jobOpts);
    const p = this.requeueFinished(id).then(() => this.enqueue(parsed, jobOpts));
    this.requeueing.add(p);
    const done = () => this.requeueing.delete(p);
    p.then(done, done);
    return p;
  }

  /**
   * A finished job under this id (completed or failed) back to the queue, to run again now: BullMQ's own reprocess
   * (Job.retry), one Lua call that moves the job to wait only if it is still in that finished set. Of two callers
   * at once (two reconciles, reconcile and a worker), one moves it and the other finds it gone from the set and
   * leaves it; a waiting, delayed or active job is never touched. It keeps its data (its id names it) and its
   * priority, its attempts start again, and it is due now: a chain worker that takes a job before its step's time
   * defers it to that time itself. A job removed meanwhile (its retention) is simply added again by the add after.
   */
  private async requeueFinished(id: string): Promise<void> {
    const state = await this.queue.getJobState(id);
    if (state !== 'completed' && state !== 'failed') return;
    const job = await Job.fromId(this.queue, id);
    try {
      await job?.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch (err) {
      // not in that set any more (another caller moved it, or it was removed): what it is now is not ours to change
      const code = (err as { code?: unknown }).code;
      if (code !== BULLMQ_JOB_NOT_EXIST && code !== BULLMQ_JOB_NOT_IN_STATE) throw err;
    }
  }

  private enqueue(parsed: unknown, jobOpts: JobsOptions): Promise<Job> {
    return new Promise<Job>((resolve, reject) => {
      this.pending.push({ data: parsed, opts: jobOpts, resolve, reject });
      // a job due later (an ask, due when the grace ends) waits a few ms for others: a burst's releases then
      // schedule their asks in a handful of addBulk calls, not one each; a job due now goes at the next turn
      if ((jobOpts.delay ?? 0) >= DEFER_MIN_DELAY_MS) this.timer ??= setTimeout(() => this.flush(), DEFER_MS);
      else this.soon ??= setImmediate(() => this.flush());
    });
  }

  private readonly requeueing = new Set<Promise<unknown>>();
  private pending: Array<{ data: unknown; opts: JobsOptions; resolve: (j: Job) => void; reject: (e: unknown) => void }> = [];
  private soon: NodeJS.Immediate | null = null;
  private timer: NodeJS.Timeout | null = null;

  private flush() {
    if (this.soon) clearImmediate(this.soon);
    if (this.timer) clearTimeout(this.timer);
    this.soon = this.timer = null;
    const batch = this.pending.splice(0, MAX_BATCH);
    if (this.pending.length) this.soon = setImmediate(() => this.flush());
    if (batch.length === 0) return;
    if (batch.length === 1) {
      const [b] = batch;
      this.queue.add(this.def.base, b.data, b.opts).then(b.resolve, b.reject);
      return;
    }
    this.queue.addBulk(batch.map((b) => ({ name: this.def.base, data: b.data, opts: b.opts }))).then(
      (jobs) => {
        for (const [i, b] of batch.entries()) b.resolve(jobs[i]);
      },
      (err) => {
        for (const b of batch) b.reject(err);
      },
    );
  }
  async close() {
    // an add still looking for a finished job under its id goes with the others (its own error is its caller's)
    await Promise.allSettled([...this.requeueing]);
    while (this.pending.length) this.flush(); // what was added is sent before the connection goes
    return this.queue.close();
  }
}
