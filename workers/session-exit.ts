// session-exit: the rate-limited exit worker, the only caller of sessionExit() (D2). It re-checks the
// verdict on fresh evidence just before acting (a person may have attached meanwhile), records in the
// ledger that it is calling, calls, waits up to exitConfirm for the process to end, latches exitedAt.
// A replayed job whose record says the call was made only confirms.
import type { Job } from 'bullmq';
import { sessionExitSchema, type SessionExitJob } from '../queues/session-exit.js';
import { evidenceOf, latch, sessionFor, type PipelineDeps } from '../src/pipeline/deps.js';
import { claimExit, readClaim, readExit, writeExit, type ExitRecord } from '../src/store/ledger.js';
import { sessionExit as realSessionExit, waitForEnd, type ExitOutcome, type ExitTarget } from '../src/pipeline/session-exit.js';
import { updateExpireFacts } from '../src/store/expire-state.js';
import type { SessionView } from '../src/evidence/fleet.js';
import type { Config } from '../src/config.js';
import { judge } from '../src/doctrine/judge.js';
import { decided } from '../src/pipeline/events.js';
import { chainKey, loadChain, schedule, stepJob, type ChainRef } from '../src/pipeline/chains.js';
import { jobKey, latchJobChain } from '../src/store/job-state.js';
import { wakeScanAt } from '../src/pipeline/expire.js';
import { deferJob, jobData } from './common.js';


/** The chain an exit job belongs to, whose next step its finish schedules (a person's exit has none; expire's is scan-driven). */
function chainRefOf(d: SessionExitJob): ChainRef | null {
  if (d.reason === 'request') return { kind: 'task', taskId: d.taskId };
  if (d.reason === 'job') return { kind: 'job', shortId: d.shortId, sessionId: d.sessionId, start: d.start };
  return null;
}

export function createExitProcessor(deps: PipelineDeps, exit: (t: ExitTarget, c: Config) => Promise<ExitOutcome> = realSessionExit) {
  const stateDir = deps.config.stateDir;
  return async (job: Job, token?: string) => {
    const data = jobData(sessionExitSchema, job);
    const jobId = String(job.id);
    const prior = readExit(stateDir, jobId);
    if (prior?.finishedAt) return { replay: prior.outcome };
    const base: ExitRecord = prior ?? {
      jobId,
      reason: data.reason,
      sessionId: data.sessionId,
      ...(data.reason === 'request' ? { taskId: data.taskId, n: data.n } : {}),
      ...(data.reason === 'expire' || data.reason === 'job' ? { n: data.n } : {}),
    };
    const log = { jobId, reason: data.reason, sessionId: data.sessionId, taskId: base.taskId };

    const claimed = readClaim(stateDir, jobId);
    if (claimed) return confirmOnly(data, base, claimed);

    const snap = await deps.fleet(0, { roster: 'cli' }); // the ADR's re-check, on the CLI's own word
    if (!snap.roster.ok) {
      // missing evidence protects (D5) and passes: the request waits for a roster that answers, like any
      // passing protection. (Thrown, it failed after 3 attempts and counted as a request never delivered.)
      deps.log.warn({ event: 'exit:deferred', ...log, why: 'roster probe failed', error: snap.roster.error }, `exit request ${jobId} waits: the roster probe failed`);
      return deferJob(job, token, deps.now() + deps.config.windows.recheck);
    }
    // the ADR's re-check on fresh evidence, just before acting: a person may have attached meanwhile.
    // A request is carried out when the evidence allows (a passing protection waits), so "three requests"
    // always means three requests delivered; a person's exit is refused, not kept waiting.
    const j = judge({
      act: data.reason === 'person' ? 'person' : 'exit',
      untasked: data.reason === 'expire' || data.reason === 'job',
      ...(data.reason === 'job' ? { jobKey: jobKey(data.shortId, data.start) } : {}),
      view: sessionFor(snap, data.sessionId),
      rosterOk: true,
      ...(data.reason === 'request' ? { taskId: data.taskId } : {}),
      ...(data.reason === 'person' ? { override: data.override } : {}),
      now: deps.now(),
      recheck: deps.config.windows.recheck,
      silence: deps.config.windows.silence,
    });
    if (j.kind === 'end' && j.gone) {
      // not running any more (its row gone, a record, its process ended): nothing to call, and the chain has ended
      await latchExited(data, j.view);
      return finish(data, base, 'gone', j.view, j.view ? {} : { error: 'absent from the roster' });
    }
    if (j.kind === 'defer') {
      deps.log.debug({ event: 'exit:deferred', ...log, why: j.why }, `exit ${jobId} waits: ${j.why}`);
      return deferJob(job, token, j.at, () => deps.idle?.watch(j.view, { queue: 'exit', jobId }));
    }
    if (j.kind === 'end') return finish(data, base, data.reason === 'person' ? 'refused' : 'spared', j.view, { reasons: j.why.split(',') });
    const view = j.view;
    if (deps.dry) {
      // it would call the session's own exit path; the dry run takes the likely outcome: it leaves
      decided(deps, 'would-exit', { ...log, id: view.id, kind: view.kind, ...evidenceOf(view) }, `would ask session ${view.label} to leave by its own exit path (${view.kind === 'interactive' ? '/exit typed into its pane' : 'claude stop'})`);
      const ref = chainRefOf(data);
      const at = new Date(deps.now()).toISOString();
      if (ref) deps.dry.latch(chainKey(ref), { exitedAt: at, lastExitFinishedAt: at });
      else if (data.reason === 'expire') deps.dry.latch(`expire/${data.expireKey}`, { exitedAt: at, lastExitFinishedAt: at });
      return { wouldExit: true };
    }
    const target: ExitTarget = {
      id: view.id,
      sessionId: view.sessionId,
      kind: view.kind as 'interactive' | 'background',
      pid: view.pid!,
      startedAt: view.row.startedAt,
      paneId: view.evidence.pane?.paneId ?? null,
    };
    const calling: ExitRecord & Record<string, unknown> = {
      ...base,
      ...(base.taskId ? {} : view.taskId ? { taskId: view.taskId } : {}),
      id: view.id,
      label: view.label,
      name: view.name,
      kind: view.kind,
      cwd: view.row.cwd,
      pid: view.pid,
      startedAt: view.row.startedAt,
      rssBytes: view.rssBytes,
      calledAt: new Date(deps.now()).toISOString(),
      ...(data.reason === 'person' ? { by: data.by, why: data.why, override: data.override } : {}),
    };
    if (!claimExit(stateDir, jobId, { pid: target.pid, startedAt: target.startedAt, at: calling.calledAt! })) {
      return confirmOnly(data, base, readClaim(stateDir, jobId)); // another processor of this same job is calling
    }
    writeExit(stateDir, calling);
    decided(deps, 'exit:calling', { ...log, id: view.id, kind: view.kind, ...(data.reason === 'person' ? { by: data.by, why: data.why, override: data.override } : {}), ...evidenceOf(view) }, `asking session ${view.label} to leave by its own exit path (${view.kind === 'interactive' ? '/exit typed into its pane' : 'claude stop'})`);
    let outcome: ExitOutcome;
    try {
      outcome = await exit(target, deps.config);
    } catch (err: any) {
      outcome = { method: view.kind === 'interactive' ? 'typed-exit' : 'claude-stop', called: false, exited: false, ms: 0, error: err?.message ?? String(err) };
    }
    if (outcome.exited) await latchExited(data, view);
    const result = outcome.exited ? 'exited' : outcome.called ? 'still-running' : 'failed';
    return finish(data, calling, result, view, { method: outcome.method, ms: outcome.ms, ...(outcome.error ? { error: outcome.error } : {}) } as Partial<ExitRecord>);
  };

  /** The call was made (by a crashed run, or a concurrent one): only confirm, never call again. */
  async function confirmOnly(data: SessionExitJob, base: ExitRecord, claim: { pid: number; startedAt: string | null } | null) {
    const exited = claim ? await waitForEnd(claim.pid, claim.startedAt, deps.now() + deps.config.windows.exitConfirm) : false;
    // a crash after the call, before the latch: the replay that sees the process gone latches exitedAt
    // (else the task keeps no exitedAt: its session is a record by now, which ends the chain unlatched)
    if (exited) await latchExited(data, undefined);
    const rec = readExit(stateDir, base.jobId);
    if (rec?.finishedAt) return { outcome: rec.outcome, replay: true };
    return finish(data, rec ?? base, exited ? 'exited' : 'still-running', undefined, { replay: true } as Partial<ExitRecord>);
  }

  async function latchExited(data: SessionExitJob, view: SessionView | undefined) {
    const at = new Date(deps.now()).toISOString();
    if (data.reason === 'request') await latch(deps, data.taskId, { exitedAt: at }).catch((err) => deps.log.warn({ event: 'latch:failed', taskId: data.taskId, error: err.message }));
    else if (data.reason === 'expire') updateExpireFacts(stateDir, data.expireKey, { exitedAt: at });
    else if (data.reason === 'job') latchJobChain(stateDir, { shortId: data.shortId, sessionId: data.sessionId, start: data.start }, { exitedAt: at });
    else if (view?.taskId && view.evidence.task?.terminal) await latch(deps, view.taskId, { exitedAt: at }).catch(() => undefined);
  }

  async function finish(data: SessionExitJob, rec: ExitRecord, outcome: NonNullable<ExitRecord['outcome']>, view: SessionView | undefined, extra: Partial<ExitRecord> = {}) {
    const done: ExitRecord = { ...rec, ...extra, outcome, finishedAt: new Date(deps.now()).toISOString() };
    writeExit(stateDir, done);
    const who = view?.label ?? rec.label ?? rec.sessionId;
    const x = extra as Record<string, unknown>;
    const words: Record<typeof outcome, string> = {
      exited: `session ${who} left by its own exit path (${x.method ?? 'confirmed'}${x.ms !== undefined ? `, ${x.ms} ms` : ''})`,
      'still-running': `session ${who} did not leave within exitConfirm${x.error ? `: ${x.error}` : ''}`,
      failed: `the exit path of session ${who} could not be taken: ${x.error ?? 'unknown error'}`,
      spared: `not exiting session ${who}: ${(x.reasons as string[] | undefined)?.join(',') ?? ''}`,
      refused: `a person's exit of session ${who} was refused: ${(x.reasons as string[] | undefined)?.join(',') ?? ''}`,
      gone: `session ${who} is not running any more: nothing to call`,
    };
    decided(deps, `exit:${outcome}`, { jobId: rec.jobId, reason: rec.reason, taskId: rec.taskId, sessionId: rec.sessionId, ...(view ? { id: view.id } : {}), ...extra, ...(outcome === 'spared' || outcome === 'refused' ? evidenceOf(view) : {}) }, words[outcome]);
    // the chain's next step is timed from this finish: schedule it now (request n+1 or the give-up, retryWait on)
    const ref = chainRefOf(data);
    if (ref && outcome !== 'exited' && outcome !== 'gone') {
      const c = await loadChain(deps, ref).catch(() => null);
      if (c) await schedule(deps, c);
      // still running after its exit path was taken: when it does leave (or next goes idle), its next step is looked at then
      const next = c && outcome === 'still-running' ? stepJob(deps, c) : null;
      if (next && next.queue !== 'terminal') deps.idle?.watch(view, { queue: next.queue, jobId: next.jobId }, 'confirm');
    }
    if (rec.reason === 'expire' && outcome !== 'exited' && outcome !== 'gone') await wakeScanAt(deps, Date.parse(done.finishedAt!) + deps.config.windows.retryWait);
    return { outcome };
  }
}
