// exit-ask: the one message, due grace after the chain began (a task's release, a Claude Code job's settling
// done). Judged on a sweep taken after the grace ended; when it may act, the run's ask (deps.acts.ask: claimed
// once ever, delivered, latched, the first request scheduled — src/pipeline/acts.ts).
import type { Job } from 'bullmq';
import { exitAskSchema } from '../queues/exit-ask.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { endChain, endIfGone, judgeStep, kindOf, loadChain, refOf, schedule } from '../src/pipeline/chains.js';
import { deferJob, jobData } from './common.js';

export function createAskProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const c = await loadChain(deps, refOf(jobData(exitAskSchema, job)));
    const step = c.step;
    // the chain is not at its ask (asked already: one message, ever): schedule what it is at
    if (step?.step !== 'ask' || !c.sessionId) return { next: (await schedule(deps, c))?.step ?? 'open' };
    if (deps.now() < step.at) return (await endIfGone(deps, c, 'ask')) ?? deferJob(job, token, step.at);
    const k = kindOf(c.ref);
    const j = await judgeStep(deps, c, { act: 'ask', notBefore: step.at, graceEnd: step.at });
    if (j.kind === 'end') return endChain(deps, c, 'ask', j);
    const log = { ...k.logged(c.ref), sessionId: c.sessionId };
    if (j.kind === 'defer') {
      deps.log.info(
        { event: 'ask:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() },
        `${c.name}: not yet (${j.why}); looking again at ${new Date(j.at).toISOString()}`,
      );
      return deferJob(job, token, j.at, () => deps.idle?.watch(j.view, { queue: 'ask', jobId: String(job.id) }));
    }
    return deps.acts.ask(deps, { chain: c, view: j.view, log, job, token, defer: (at) => deferJob(job, token, at) });
  };
}
