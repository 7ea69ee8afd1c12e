// exit-retry: request n of a task's exit (1..max), or — n = max + 1 — the give-up check.
// Request n is due askWait after the ask (n = 1) or retryWait after exit job n-1 *finished*; never while
// it is still confirming. A request is latched first, then its exit job is enqueued (reconcile heals a
// crash in between). Three requests made and the session still alive → exitGaveUpAt + one alarm.
import type { Job } from 'bullmq';
import { exitRetrySchema } from '../queues/exit-retry.js';
import { requestExitId } from '../queues/session-exit.js';
import { advance, evidenceOf, judgeTask, latch, loadTask, type PipelineDeps } from '../src/pipeline/deps.js';
import { readExit } from '../src/store/ledger.js';
import { deferJob, jobData } from './common.js';

export function createRetryProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const { taskId, n } = jobData(exitRetrySchema, job);
    const max = deps.config.maxExitRequests;
    const task = await loadTask(deps, taskId);
    if (!task) return { skipped: 'missing or invalid' };
    if (!task.terminal || task.exitedAt || task.exitGaveUpAt || !task.exitAskedAt || !task.sessionId) return { ended: 'chain ended or not at this step', plan: (await advance(deps, task)).ended };
    if (task.exitRequests !== n - 1 || n > max + 1) {
      await advance(deps, task); // a stale or early job: the latched fields say where the chain is
      return { skipped: `exitRequests is ${task.exitRequests}, this job is for step ${n}` };
    }
    // When is this step due?
    const now = deps.now();
    let due: number;
    if (n === 1) due = Date.parse(task.exitAskedAt) + deps.config.windows.askWait;
    else {
      const prevId = requestExitId(taskId, task.sessionId, n - 1);
      const prev = readExit(deps.config.stateDir, prevId);
      if (prev?.finishedAt) due = Date.parse(prev.finishedAt) + deps.config.windows.retryWait;
      else {
        const prevJob = await deps.producers.exit.queue.getJob(prevId);
        const state = prevJob ? await prevJob.getState() : 'missing';
        if (state === 'failed' && prevJob?.finishedOn) due = prevJob.finishedOn + deps.config.windows.retryWait;
        else {
          if (state === 'missing' || state === 'unknown') await advance(deps, task); // re-enqueues exit job n-1
          return deferJob(job, token, now + Math.min(deps.config.windows.exitConfirm, deps.config.windows.retryWait) + 50);
        }
      }
    }
    if (now < due) return deferJob(job, token, due);

    const j = await judgeTask(deps, task);
    const log = { taskId, sessionId: task.sessionId, n };
    if (j.kind === 'ended') {
      deps.audit({ event: 'chain:ended', ...log, step: n > max ? 'give-up' : 'request', why: j.why, ...evidenceOf(j.view) });
      deps.log.info({ event: 'chain:ended', ...log, why: j.why }, `task ${taskId}: chain ends (${j.why})`);
      return { ended: j.why };
    }
    if (j.kind === 'later') return deferJob(job, token, j.at);
    if (deps.dryRun) {
      deps.log.info({ event: 'retry:dry-run', ...log }, n > max ? `would give up on session ${j.view.label}` : `would request exit #${n} of session ${j.view.label}`);
      return { dryRun: true };
    }
    const at = new Date(now).toISOString();
    if (n > max) {
      // the alarm first (raised once per task, ever), then the latch: a crash in between replays this job,
      // which finds the alarm raised and latches; the other order lost the alarm for good (the latch ends the chain)
      await deps.alarms.raise('session-will-not-exit', `task/${taskId}`, {
        taskId,
        sessionId: task.sessionId,
        id: j.view.id,
        pid: j.view.pid,
        rssBytes: j.view.rssBytes,
        message: `session ${j.view.label} (task ${taskId}) was asked once and requested to exit ${max} times and is still running; a person decides now`,
      });
      const res = await latch(deps, taskId, { exitGaveUpAt: at });
      deps.audit({ event: 'give-up', ...log, id: j.view.id, ...evidenceOf(j.view) });
      deps.log.warn({ event: 'exit:gave-up', ...log, id: j.view.id }, `gave up on session ${j.view.label} after ${max} requests`);
      return { gaveUp: Boolean(res.task.exitGaveUpAt) };
    }
    const res = await latch(deps, taskId, { exitRequests: n, exitRequestedAt: at });
    deps.audit({ event: 'request', ...log, id: j.view.id, ...evidenceOf(j.view) });
    deps.log.info({ event: 'exit:requested', ...log, id: j.view.id }, `exit request ${n}/${max} for session ${j.view.label}`);
    await advance(deps, res.task, { rssBytes: j.view.rssBytes }); // enqueues exit job n (largest first under memory pressure) and the next retry
    return { requested: n };
  };
}
