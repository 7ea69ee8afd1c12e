// exit-retry: request n of a chain's exit (1..max), or — n = max + 1 — the give-up. Due when the doctrine says
// (askWait after the ask; retryWait after exit job n-1 finished, never while it confirms). When it may act, the
// run's request (latched first, then its exit job enqueued: reconcile heals a crash in between) or give-up
// (three requests made and the session still alive: one session-will-not-exit alarm, then the give-up latched).
import type { Job } from 'bullmq';
import { exitRetrySchema } from '../queues/exit-retry.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { endChain, endIfGone, judgeStep, kindOf, loadChain, refOf, schedule } from '../src/pipeline/chains.js';
import { deferJob, jobData } from './common.js';

export function createRetryProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const data = jobData(exitRetrySchema, job);
    const n = data.n;
    const giveUp = n > deps.config.maxExitRequests;
    const c = await loadChain(deps, refOf(data));
    const step = c.step;
    const mine = giveUp ? step?.step === 'give-up' : step?.step === 'request' && step.n === n;
    // a stale or early job: the latched fields say where the chain is
    if (!mine || !c.sessionId || !step || !('at' in step))
      return { skipped: `the chain is at ${step?.step ?? 'open'}`, next: (await schedule(deps, c))?.step };
    if (deps.now() < step.at) return (await endIfGone(deps, c, giveUp ? 'give-up' : `request ${n}`)) ?? deferJob(job, token, step.at);
    const k = kindOf(c.ref);
    const j = await judgeStep(deps, c, { act: giveUp ? 'give-up' : 'request' });
    if (j.kind === 'end') return endChain(deps, c, giveUp ? 'give-up' : `request ${n}`, j);
    const log = { ...k.logged(c.ref), sessionId: c.sessionId, n };
    if (j.kind === 'defer') {
      deps.log.info(
        { event: giveUp ? 'give-up:deferred' : 'request:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() },
        `${c.name}: not yet (${j.why}); looking again at ${new Date(j.at).toISOString()}`,
      );
      return deferJob(job, token, j.at, () => deps.idle?.watch(j.view, { queue: 'retry', jobId: String(job.id) }));
    }
    const act = { chain: c, view: j.view, log, job, token, defer: (at: number) => deferJob(job, token, at) };
    return giveUp ? deps.acts.giveUp(deps, act) : deps.acts.request(deps, act, n);
  };
}
