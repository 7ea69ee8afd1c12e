// What every queue shares: the `{sunset}` prefix (a Redis Cluster hash tag), names that carry the host,
// bounded retention, and a producer that validates job data with the queue's own zod schema before add().
import { Queue, type ConnectionOptions, type Job, type JobsOptions } from 'bullmq/dist/cjs/classes/index.js';
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

/** Whose chain a chain job carries: a task's (by its id), or a Claude Code job's (its short id and process start). */
export const jobRefSchema = z.object({ shortId: z.string().min(1), sessionId: z.string().min(1), start: z.string().min(1) });
export type JobRef = z.infer<typeof jobRefSchema>;
export const chainRefFields = { taskId: z.string().min(1).optional(), job: jobRefSchema.optional() };
export function oneChain(d: { taskId?: string; job?: JobRef }, ctx: z.RefinementCtx) {
  if (Boolean(d.taskId) === Boolean(d.job)) ctx.addIssue({ code: 'custom', message: 'a chain job names exactly one chain: a taskId or a job' });
}

/** BullMQ refuses ':' in custom job ids; ours use '/' and ids never hold it. */
export function jobId(...parts: Array<string | number>): string {
  return parts.map((p) => String(p).replace(/[:/]/g, '_')).join('/');
}

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
   */
  add(id: string, data: z.input<S>, opts: { delay?: number; priority?: number; dedupe?: string } = {}): Promise<Job> {
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
    return new Promise<Job>((resolve, reject) => {
      this.pending.push({ data: parsed, opts: jobOpts, resolve, reject });
      // a job due later (an ask, due when the grace ends) waits a few ms for others: a burst's releases then
      // schedule their asks in a handful of addBulk calls, not one each; a job due now goes at the next turn
      if ((jobOpts.delay ?? 0) >= DEFER_MIN_DELAY_MS) this.timer ??= setTimeout(() => this.flush(), DEFER_MS);
      else this.soon ??= setImmediate(() => this.flush());
    });
  }

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
      (jobs) => batch.forEach((b, i) => b.resolve(jobs[i])),
      (err) => batch.forEach((b) => b.reject(err)),
    );
  }
  close() {
    while (this.pending.length) this.flush(); // what was added is sent before the connection goes
    return this.queue.close();
  }
}
