// exit-retry: request n of a chain's exit (1..max), or — n = max + 1 — the give-up. Due when the doctrine says
// (askWait after the ask; retryWait after exit job n-1 finished, never while it confirms). A request is latched
// first, then its exit job enqueued (reconcile heals a crash in between). Three requests made and the session
// still alive → one session-will-not-exit alarm, then the give-up latched.
import type { Job } from 'bullmq';
import { exitRetrySchema } from '../queues/exit-retry.js';
import { evidenceOf, look, type PipelineDeps } from '../src/pipeline/deps.js';
import { endChain, endIfGone, latchChain, loadChain, refOf, schedule } from '../src/pipeline/chains.js';
import { judge } from '../src/doctrine/judge.js';
import { decided } from '../src/pipeline/events.js';
import { jobKey } from '../src/store/job-state.js';
import { deferJob, jobData } from './common.js';

export function createRetryProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const data = jobData(exitRetrySchema, job);
    const ref = refOf(data);
    const n = data.n;
    const max = deps.config.maxExitRequests;
    const giveUp = n > max;
    const c = await loadChain(deps, ref);
    const step = c.step;
    const mine = giveUp ? step?.step === 'give-up' : step?.step === 'request' && step.n === n;
    // a stale or early job: the latched fields say where the chain is
    if (!mine || !c.sessionId || !step || !('at' in step)) return { skipped: `the chain is at ${step?.step ?? 'open'}`, next: (await schedule(deps, c))?.step };
    if (deps.now() < step.at) return (await endIfGone(deps, c, giveUp ? 'give-up' : `request ${n}`)) ?? deferJob(job, token, step.at);
    const j = judge({
      act: giveUp ? 'give-up' : 'request',
      ...(await look(deps, c.sessionId)),
      ...(ref.kind === 'task' ? { taskId: ref.taskId } : { untasked: true, jobKey: jobKey(ref.shortId, ref.start) }),
      now: deps.now(),
      recheck: deps.config.windows.recheck,
      silence: deps.config.windows.silence,
    });
    if (j.kind === 'end') return endChain(deps, c, giveUp ? 'give-up' : `request ${n}`, j);
    const log = { ...(ref.kind === 'task' ? { taskId: ref.taskId } : { job: ref.shortId }), sessionId: c.sessionId, n };
    if (j.kind === 'defer') {
      deps.log.info({ event: giveUp ? 'give-up:deferred' : 'request:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() }, `${c.name}: not yet (${j.why}); looking again at ${new Date(j.at).toISOString()}`);
      return deferJob(job, token, j.at, () => deps.idle?.watch(j.view, { queue: 'retry', jobId: String(job.id) }));
    }
    if (deps.dry) {
      const at = new Date(deps.now()).toISOString();
      const res = await latchChain(deps, c, giveUp ? { gaveUpAt: at } : { requests: n, lastRequestAt: at });
      decided(deps, giveUp ? 'would-give-up' : 'would-request', { ...log, id: j.view.id, ...evidenceOf(j.view) }, giveUp ? `would give up on session ${j.view.label} and raise one session-will-not-exit alarm` : `would request exit ${n}/${max} of session ${j.view.label}`);
      await schedule(deps, res.chain);
      return giveUp ? { wouldGiveUp: true } : { wouldRequest: n };
    }
    const at = new Date(deps.now()).toISOString();
    if (giveUp) {
      // the alarm first (raised once per chain, ever), then the latch: a crash in between replays this job,
      // which finds the alarm raised and latches; the other order lost the alarm for good (the latch ends the chain)
      await deps.alarms.raise('session-will-not-exit', ref.kind === 'task' ? `task/${ref.taskId}` : `job/${jobKey(ref.shortId, ref.start)}`, {
        taskId: ref.kind === 'task' ? ref.taskId : null,
        sessionId: c.sessionId,
        id: j.view.id,
        pid: j.view.pid,
        rssBytes: j.view.rssBytes,
        message: `session ${j.view.label} (${c.name}) was asked once and requested to exit ${max} times and is still running; a person decides now`,
      });
      const res = await latchChain(deps, c, { gaveUpAt: at }, job, token);
      decided(deps, 'exit:gave-up', { ...log, id: j.view.id, ...evidenceOf(j.view) }, `gave up on session ${j.view.label} after ${max} requests`, { level: 'warn' });
      return { gaveUp: Boolean(res.chain.facts.gaveUpAt) };
    }
    const res = await latchChain(deps, c, { requests: n, lastRequestAt: at }, job, token);
    decided(deps, 'exit:requested', { ...log, id: j.view.id, ...evidenceOf(j.view) }, `exit request ${n}/${max} for session ${j.view.label}`);
    await schedule(deps, res.chain, { rssBytes: j.view.rssBytes }); // enqueues exit job n (largest first under memory pressure)
    return { requested: n };
  };
}
