// exit-ask: the one message, due grace after release. Judged on a sweep taken after the grace ended; when it
// may act: claim the ask (once ever, in stateDir), deliver it, latch exitAskedAt, schedule the first request.
// A processor that loses the claim (a replay racing the original after a Redis flush) waits until the claimant
// must have finished; if the claimant died before latching, it delivers the same message (same time) again and
// latches that time — so a crash never loses the ask, and a race never doubles it.
import { existsSync } from 'node:fs';
import type { Job } from 'bullmq';
import { exitAskSchema } from '../queues/exit-ask.js';
import { endChain, evidenceOf, look, type PipelineDeps } from '../src/pipeline/deps.js';
import { latchChain, loadChain, schedule } from '../src/pipeline/chains.js';
import { judge } from '../src/doctrine/judge.js';
import { deliverAsk } from '../src/pipeline/ask.js';
import { claimAsk } from '../src/store/ledger.js';
import { decided } from '../src/pipeline/events.js';
import { deferJob, jobData } from './common.js';

export function createAskProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const { taskId } = jobData(exitAskSchema, job);
    const { task, step } = await loadChain(deps, taskId);
    // the chain is not at its ask (asked already: one message, ever): schedule what it is at
    if (step?.step !== 'ask' || !task.sessionId) return { next: (await schedule(deps, task, { step }))?.step ?? 'open' };
    if (deps.now() < step.at) return deferJob(job, token, step.at);
    const j = judge({ act: 'ask', ...(await look(deps, task.sessionId, step.at)), taskId, now: deps.now(), recheck: deps.config.windows.recheck, graceEnd: step.at });
    if (j.kind === 'end') return endChain(deps, task, 'ask', j);
    const log = { taskId, sessionId: task.sessionId };
    if (j.kind === 'defer') {
      deps.log.debug({ event: 'ask:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() }, `task ${taskId}: not yet (${j.why})`);
      return deferJob(job, token, j.at);
    }
    if (deps.dryRun) {
      deps.audit({ event: 'ask:dry-run', ...log, ...evidenceOf(j.view) });
      deps.log.info({ event: 'ask:dry-run', ...log }, `would ask session ${j.view.label} (task ${taskId}) to wrap up`);
      return { dryRun: true };
    }
    const now = deps.now();
    const c = claimAsk(deps.config.stateDir, { taskId, releasedAt: task.releasedAt! }, { at: new Date(now).toISOString(), pid: process.pid });
    let at = now;
    if (!c.won) {
      // another processor claimed this ask: give it time to deliver and latch, then look again
      const claimedAt = c.claim ? Date.parse(c.claim.at) : NaN;
      const settled = (Number.isFinite(claimedAt) ? claimedAt : now) + 2 * deps.config.probeTimeout + 2_000;
      if (now < settled && claimantMayLive(c.claim?.pid)) return deferJob(job, token, settled);
      at = Number.isFinite(claimedAt) ? claimedAt : now; // the claimant died before latching: the same ask again
    }
    const delivered = await deliverAsk(deps.config, j.view, task, at);
    const res = await latchChain(deps, taskId, { exitAskedAt: new Date(at).toISOString() }, job, token);
    // the one that latched it audits it: a replay racing another replay writes the same file and latches nothing
    decided(deps, 'exit:asked', { ...(c.won ? {} : { replayed: true }), ...log, id: j.view.id, via: delivered.via, path: delivered.path, ...evidenceOf(j.view) }, `asked session ${j.view.label} to wrap up (task ${taskId} is ${task.state})${c.won ? '' : ', again after a crash'}`, { audit: Boolean(res.applied.exitAskedAt) });
    await schedule(deps, res.task);
    return { asked: true };
  };
}

/** A claimant in another process that no longer runs cannot still be delivering (a reused pid only makes us wait). */
function claimantMayLive(pid: number | undefined): boolean {
  if (!pid || pid === process.pid) return true;
  return existsSync(`/proc/${pid}`);
}
