// expire-scan: one scan per scheduler tick (every windows.expireEvery, once per host).
import type { Job } from 'bullmq';
import { expireScanSchema } from '../queues/expire-scan.js';
import { runExpireScan } from '../src/expire.js';
import type { PipelineDeps } from '../src/pipeline.js';
import { jobData } from './common.js';

export function createExpireScanProcessor(deps: PipelineDeps, afterScan?: () => Promise<unknown>) {
  return async (job: Job) => {
    const { dryRun } = jobData(expireScanSchema, job);
    const r = await runExpireScan(deps, { dryRun });
    await afterScan?.();
    return { ok: r.ok, enqueued: r.lines.filter((l) => l.action === 'enqueued').length };
  };
}
