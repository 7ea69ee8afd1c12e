// release: a task turned terminal. The run's release (deps.acts.release: runs releaseCommand — argv,
// placeholders filled, never a shell — when set, latches releasedAt, schedules the ask at releasedAt + grace).
// It releases a loop, never a session (D6).
import type { Job } from 'bullmq';
import { taskTerminalSchema } from '../queues/task-terminal.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { loadChain, refOf, schedule } from '../src/pipeline/chains.js';
import { jobData } from './common.js';

export function createReleaseProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const c = await loadChain(deps, refOf(jobData(taskTerminalSchema, job)));
    if (c.step?.step !== 'release') return { released: false, next: (await schedule(deps, c))?.step ?? 'open' };
    return deps.acts.release(deps, { chain: c, job, token });
  };
}
