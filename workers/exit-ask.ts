// exit-ask: evidence + verdict. Gone → latch exitedAt. Protected for a passing reason → re-check later.
// Eligible → deliver the one message, latch exitAskedAt, schedule the first request after askWait.
import type { Job } from 'bullmq';
import { exitAskSchema } from '../queues/exit-ask.js';
import { advance, evidenceOf, judgeTask, latch, loadTask, type PipelineDeps } from '../src/pipeline.js';
import { deliverAsk } from '../src/ask.js';
import { deferJob, jobData } from './common.js';

export function createAskProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const { taskId } = jobData(exitAskSchema, job);
    const task = await loadTask(deps, taskId);
    if (!task) return { skipped: 'missing or invalid' };
    if (!task.terminal || task.exitedAt || task.exitGaveUpAt || !task.releasedAt) return advanceOnly(deps, task);
    if (task.exitAskedAt) return advanceOnly(deps, task); // asked already: one message, ever
    const j = await judgeTask(deps, task);
    const log = { taskId, sessionId: task.sessionId };
    if (j.kind === 'ended') {
      deps.audit({ event: 'chain:ended', ...log, step: 'ask', why: j.why, ...evidenceOf(j.view) });
      deps.log.info({ event: 'chain:ended', ...log, why: j.why }, `task ${taskId}: chain ends before the ask (${j.why})`);
      return { ended: j.why };
    }
    if (j.kind === 'later') {
      deps.log.debug({ event: 'ask:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() }, `task ${taskId}: not yet (${j.why})`);
      return deferJob(job, token, j.at);
    }
    if (deps.dryRun) {
      deps.audit({ event: 'ask:dry-run', ...log, ...evidenceOf(j.view) });
      deps.log.info({ event: 'ask:dry-run', ...log }, `would ask session ${j.view.id} (task ${taskId}) to wrap up`);
      return { dryRun: true };
    }
    const now = deps.now();
    const delivered = await deliverAsk(deps.config, j.view, task, now);
    const res = await latch(deps, taskId, { exitAskedAt: new Date(now).toISOString() });
    deps.audit({ event: 'ask', ...log, id: j.view.id, via: delivered.via, path: delivered.path, ...evidenceOf(j.view) });
    deps.log.info({ event: 'exit:asked', ...log, id: j.view.id, via: delivered.via }, `asked session ${j.view.id} to wrap up (task ${taskId} is ${task.state})`);
    await advance(deps, res.task);
    return { asked: true };
  };
}

async function advanceOnly(deps: PipelineDeps, task: Parameters<typeof advance>[1]) {
  const plan = await advance(deps, task);
  return { advanced: plan.steps.map((s) => s.id), ended: plan.ended };
}
