// exit-ask: the one message, due grace after the chain began (a task's release, a Claude Code job's settling
// done). Judged on a sweep taken after the grace ended; when it may act: claim the ask (once ever, in stateDir),
// deliver it, latch the ask, schedule the first request. A processor that loses the claim (a replay racing the
// original after a Redis flush) waits until the claimant must have finished; if the claimant died before
// latching, it delivers the same message (same time) again and latches that time — so a crash never loses the
// ask, and a race never doubles it.
import { existsSync } from 'node:fs';
import type { Job } from 'bullmq';
import { exitAskSchema } from '../queues/exit-ask.js';
import { evidenceOf, look, type PipelineDeps } from '../src/pipeline/deps.js';
import { endChain, endIfGone, latchChain, loadChain, refOf, schedule } from '../src/pipeline/chains.js';
import { judge } from '../src/doctrine/judge.js';
import { askInTranscript, askText, deliverAsk, type Delivered } from '../src/pipeline/ask.js';
import { askDelivered, claimAsk, markAskDelivered, releaseAskClaim } from '../src/store/ledger.js';
import { decided } from '../src/pipeline/events.js';
import { jobKey } from '../src/store/job-state.js';
import { deferJob, jobData } from './common.js';

export function createAskProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const ref = refOf(jobData(exitAskSchema, job));
    const c = await loadChain(deps, ref);
    const step = c.step;
    // the chain is not at its ask (asked already: one message, ever): schedule what it is at
    if (step?.step !== 'ask' || !c.sessionId) return { next: (await schedule(deps, c))?.step ?? 'open' };
    if (deps.now() < step.at) return (await endIfGone(deps, c, 'ask')) ?? deferJob(job, token, step.at);
    const j = judge({
      act: 'ask',
      ...(await look(deps, c.sessionId, step.at)),
      ...(ref.kind === 'task' ? { taskId: ref.taskId } : { untasked: true, jobKey: jobKey(ref.shortId, ref.start) }),
      now: deps.now(),
      recheck: deps.config.windows.recheck,
      silence: deps.config.windows.silence,
      graceEnd: step.at,
    });
    if (j.kind === 'end') return endChain(deps, c, 'ask', j);
    const log = ref.kind === 'task' ? { taskId: ref.taskId, sessionId: c.sessionId } : { job: ref.shortId, sessionId: c.sessionId };
    if (j.kind === 'defer') {
      deps.log.info({ event: 'ask:deferred', ...log, why: j.why, until: new Date(j.at).toISOString() }, `${c.name}: not yet (${j.why}); looking again at ${new Date(j.at).toISOString()}`);
      return deferJob(job, token, j.at, () => deps.idle?.watch(j.view, { queue: 'ask', jobId: String(job.id) }));
    }
    if (deps.dry) {
      const via = deps.config.fleet.askVia === 'auto' ? (j.view.evidence.socket ? 'socket' : 'inbox') : deps.config.fleet.askVia;
      const res = await latchChain(deps, c, { askedAt: new Date(deps.now()).toISOString() });
      decided(deps, 'would-ask', { ...log, id: j.view.id, via, ...evidenceOf(j.view) }, `would ask session ${j.view.label} (${c.name}) to wrap up, via ${via}`);
      await schedule(deps, res.chain);
      return { wouldAsk: true };
    }
    const now = deps.now();
    const claimKey = { taskId: ref.kind === 'task' ? ref.taskId : `job-${ref.shortId}-${ref.start}`, releasedAt: c.facts.startedAt ?? '0' };
    const cl = claimAsk(deps.config.stateDir, claimKey, { at: new Date(now).toISOString(), pid: process.pid });
    let at = now;
    if (!cl.won) {
      // another processor claimed this ask: give it time to deliver and latch, then look again
      const claimedAt = cl.claim ? Date.parse(cl.claim.at) : NaN;
      const settled = (Number.isFinite(claimedAt) ? claimedAt : now) + 2 * deps.config.probeTimeout + 2_000;
      if (now < settled && claimantMayLive(cl.claim?.pid)) return deferJob(job, token, settled);
      at = Number.isFinite(claimedAt) ? claimedAt : now; // the claimant died before latching: the same ask again
    }
    // a message over a socket or typed into a pane cannot be taken back: once marked delivered, a replay after a
    // crash only latches (the inbox file is the same file written again)
    // (a claimant that died between the send and the mark: the session's transcript says whether it arrived)
    const already = cl.won ? null : (askDelivered(deps.config.stateDir, claimKey) ?? (await askInTranscript(j.view, askText(c.what, deps.config.windows.askWait))));
    const delivered: Delivered = already ? { ok: true, via: already.via as Delivered['via'] } : await deliverAsk(deps.config, j.view, c.what, at);
    if (!delivered.ok) {
      // nothing was sent: the claim goes back and the ask waits, never counted as made
      releaseAskClaim(deps.config.stateDir, claimKey);
      deps.log.warn({ event: 'ask:not-delivered', ...log, via: delivered.via, why: delivered.why }, `${c.name}: the ask could not be delivered (${delivered.via}: ${delivered.why}); trying again at the next recheck`);
      return deferJob(job, token, deps.now() + deps.config.windows.recheck);
    }
    if (!already && delivered.via !== 'inbox') markAskDelivered(deps.config.stateDir, claimKey, { at: new Date(at).toISOString(), via: delivered.via });
    // the chaos suite's and the real-client tests' crash point: sunset dies between the ask and its latch
    if (process.env.SUNSET_CRASH_AT === 'ask:delivered') process.exit(137);
    const res = await latchChain(deps, c, { askedAt: new Date(at).toISOString() }, job, token);
    // the one that latched it audits it: a replay racing another replay writes the same file and latches nothing
    decided(deps, 'exit:asked', { ...(cl.won ? {} : { replayed: true }), ...log, id: j.view.id, via: delivered.via, ...(delivered.ok ? { path: delivered.path } : {}), ...evidenceOf(j.view) }, `asked session ${j.view.label} to wrap up (${c.name} is ${c.what.state}, via ${delivered.via})${cl.won ? '' : ', again after a crash'}`, { audit: Boolean(res.applied.askedAt) });
    await schedule(deps, res.chain);
    return { asked: true };
  };
}

/** A claimant in another process that no longer runs cannot still be delivering (a reused pid only makes us wait). */
function claimantMayLive(pid: number | undefined): boolean {
  if (!pid || pid === process.pid) return true;
  return existsSync(`/proc/${pid}`);
}
