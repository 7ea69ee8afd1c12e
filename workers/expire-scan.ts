// expire-scan: one scan per scheduler tick (every windows.expireEvery, once per host), then one reap pass
// (tmux sessions whose every pane has been dead for windows.reapAfter; DESIGN §6).
import type { Job } from 'bullmq';
import { expireScanSchema } from '../queues/expire-scan.js';
import { runExpireScan } from '../src/pipeline/expire.js';
import { runReap } from '../src/cap/reap.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { jobData } from './common.js';

export function createExpireScanProcessor(deps: PipelineDeps, afterScan?: () => Promise<unknown>) {
  return async (job: Job) => {
    const { dryRun } = jobData(expireScanSchema, job);
    const r = await runExpireScan(deps, { dryRun });
    // reap never throws and needs no roster: it runs whatever the scan found
    const reaped = await runReap(deps.config, { dryRun: dryRun || deps.dryRun, now: deps.now, log: deps.log });
    await afterScan?.();
    return {
      ok: r.ok,
      enqueued: r.lines.filter((l) => l.action === 'enqueued').length,
      reaped: reaped.lines.filter((l) => l.action === 'removed').length,
      ...(reaped.ok ? {} : { reapError: reaped.error ?? 'a removal failed' }),
    };
  };
}
