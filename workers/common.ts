// What every worker shares: validate job data first (bad data is unrecoverable, never retried), and
// defer a job to a later time under the same id (move to delayed) for a passing protection.
import { DelayedError, UnrecoverableError, type Job } from 'bullmq/dist/cjs/classes/index.js';
import type { z } from 'zod';

export function jobData<S extends z.ZodType>(schema: S, job: Job): z.output<S> {
  const r = schema.safeParse(job.data);
  if (!r.success)
    throw new UnrecoverableError(
      `bad job data for ${job.id}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}

/**
 * Re-run this same job at `at`. Must be the processor's last act: it throws DelayedError. `then` runs once the
 * job is delayed (asking the session for an idle notice, which promotes it: src/pipeline/idle-notices.ts).
 */
export async function deferJob(job: Job, token: string | undefined, at: number, then?: () => void): Promise<never> {
  await job.moveToDelayed(Math.ceil(at), token);
  then?.();
  throw new DelayedError();
}
