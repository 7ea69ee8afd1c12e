// exit-ask: evidence + verdict. Gone → latch exitedAt. Protected for a passing reason → re-check later.
// Eligible → claim the ask (once ever, in stateDir), deliver the one message, latch exitAskedAt, schedule the
// first request after askWait. A processor that loses the claim (a replay racing the original after a Redis
// flush) waits until the claimant must have finished; if the claimant died before latching, it delivers the
// same message (same time) again and latches that time — so a crash never loses the ask, and a race never doubles it.
import { existsSync } from 'node:fs';
import type { Job } from 'bullmq';
import { exitAskSchema } from '../queues/exit-ask.js';
import { advance, evidenceOf, judgeTask, latch, loadTask, type PipelineDeps } from '../src/pipeline/deps.js';
import { deliverAsk } from '../src/pipeline/ask.js';
import { claimAsk } from '../src/store/ledger.js';
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
      deps.log.info({ event: 'ask:dry-run', ...log }, `would ask session ${j.view.label} (task ${taskId}) to wrap up`);
      return { dryRun: true };
    }
    const now = deps.now();
    const c = claimAsk(deps.config.stateDir, { taskId, releasedAt: task.releasedAt }, { at: new Date(now).toISOString(), pid: process.pid });
    let at = now;
    if (!c.won) {
      // another processor claimed this ask: give it time to deliver and latch, then look again
      const claimedAt = c.claim ? Date.parse(c.claim.at) : NaN;
      const settled = (Number.isFinite(claimedAt) ? claimedAt : now) + claimSettle(deps);
      if (now < settled && claimantMayLive(c.claim?.pid)) {
        deps.log.debug({ event: 'ask:claimed', ...log, claim: c.claim }, `task ${taskId}: another processor is asking; looking again after it settles`);
        return deferJob(job, token, settled);
      }
      at = Number.isFinite(claimedAt) ? claimedAt : now; // the claimant died before latching: the same ask again
    }
    const delivered = await deliverAsk(deps.config, j.view, task, at);
    const res = await latch(deps, taskId, { exitAskedAt: new Date(at).toISOString() });
    // the one that latched it audits it: a replay racing another replay writes the same file and latches nothing
    if (res.applied.exitAskedAt) deps.audit({ event: 'ask', ...(c.won ? {} : { replayed: true }), ...log, id: j.view.id, via: delivered.via, path: delivered.path, ...evidenceOf(j.view) });
    deps.log.info({ event: c.won ? 'exit:asked' : 'exit:ask-replayed', ...log, id: j.view.id, via: delivered.via }, `asked session ${j.view.label} to wrap up (task ${taskId} is ${task.state})${c.won ? '' : ', again after a crash'}`);
    await advance(deps, res.task);
    return { asked: true };
  };
}

/** How long a claimant may take between its claim and its latch: delivering (a pane may take a tmux call) and the latch. */
function claimSettle(deps: PipelineDeps): number {
  return 2 * deps.config.probeTimeout + 2_000;
}

/** A claimant in another process that no longer runs cannot still be delivering (a reused pid only makes us wait). */
function claimantMayLive(pid: number | undefined): boolean {
  if (!pid || pid === process.pid) return true;
  return existsSync(`/proc/${pid}`);
}

async function advanceOnly(deps: PipelineDeps, task: Parameters<typeof advance>[1]) {
  const plan = await advance(deps, task);
  return { advanced: plan.steps.map((s) => s.id), ended: plan.ended };
}
