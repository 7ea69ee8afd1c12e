// session-exit: the rate-limited exit worker, the only caller of sessionExit() (D2). It re-checks the
// verdict on fresh evidence just before acting (a person may have attached meanwhile), records in the
// ledger that it is calling, calls, waits up to exitConfirm for the process to end, latches exitedAt.
// A replayed job whose record says the call was made only confirms.
import type { Job } from 'bullmq';
import { sessionExitSchema, type SessionExitJob } from '../queues/session-exit.js';
import { evidenceOf, latch, sessionFor, type PipelineDeps } from '../src/pipeline/deps.js';
import { claimExit, readClaim, readExit, writeExit, type ExitRecord } from '../src/store/ledger.js';
import { sessionExit as realSessionExit, waitForEnd, type ExitOutcome, type ExitTarget } from '../src/pipeline/session-exit.js';
import type { FleetSnapshot, SessionView } from '../src/evidence/fleet.js';
import type { Config } from '../src/config.js';
import type { ExitContext } from '../src/agents/types.js';
import { readRoster, type RosterResult } from '../src/evidence/roster.js';
import { judge } from '../src/doctrine/judge.js';
import { decided } from '../src/pipeline/events.js';
import { exitRefOf, kindOf } from '../src/pipeline/chains.js';
import { deferJob, jobData } from './common.js';
import { errorMessage } from '../src/errors.js';
import { exitPathOf } from '../src/agents/index.js';
import { keepTranscript } from '../src/store/kept.js';

export function createExitProcessor(
  deps: PipelineDeps,
  exit: (t: ExitTarget, c: Config, o?: Omit<ExitContext, 'config'>) => Promise<ExitOutcome> = realSessionExit,
) {
  const stateDir = deps.config.stateDir;
  // a roster the exit path reads after its call (an interactive session's successor): the CLI's word, read by the
  // same shared sweeps as the re-checks of every exit of the moment, not by a `claude agents` call of its own each
  const roster = async (): Promise<RosterResult> => {
    const snap = await deps.fleet(0, { roster: 'cli', tmux: 'if-needed' });
    if (!snap.roster.ok) return { ok: false, error: snap.roster.error };
    if (snap.rosterFrom !== 'cli') return readRoster(deps.config.fleet.rosterCommand, deps.config.probeTimeout);
    return { ok: true, rows: snap.sessions.map((s) => s.row), problems: [] };
  };
  return async (job: Job, token?: string) => {
    const data = jobData(sessionExitSchema, job);
    // the chain it belongs to, whose next step its finish moves on (a person's exit has none)
    const ref = exitRefOf(data);
    const jobId = String(job.id);
    const prior = readExit(stateDir, jobId);
    if (prior?.finishedAt) return { replay: prior.outcome };
    const taskId = ref ? kindOf(ref).taskId(ref) : null;
    const base: ExitRecord = prior ?? {
      jobId,
      reason: data.reason,
      sessionId: data.sessionId,
      ...(taskId ? { taskId } : {}),
      ...('n' in data ? { n: data.n } : {}),
      ...(ref && data.reason === 'chain' ? { chain: kindOf(ref).name(ref) } : {}),
    };
    const log = { jobId, reason: data.reason, sessionId: data.sessionId, taskId: base.taskId };

    const claimed = readClaim(stateDir, jobId);
    if (claimed) return confirmOnly(data, base, claimed);

    // the ADR's re-check on fresh evidence (a sweep started after this job did), just before acting: a person may
    // have attached meanwhile. It reads Claude Code's files where they can be read, as the schedule's steps do
    // (the CLI reads the same files; its word checks them at start and every reconcile): a `claude agents` call
    // per moment of a wave cost seconds of wall and ~1 s of CPU each (docs/benchmarks.md, the exit wave). Only
    // "gone" on the files is asked of the CLI before it is taken: an ended session's chain is closed on its word.
    // A request is carried out when the evidence allows (a passing protection waits), so "three requests"
    // always means three requests delivered; a person's exit is refused, not kept waiting.
    let snap = await deps.fleet(0);
    let j = recheck(data, ref, snap);
    if (snap.roster.ok && j.kind === 'end' && j.gone && snap.rosterFrom === 'files') {
      snap = await deps.fleet(0, { roster: 'cli' });
      j = recheck(data, ref, snap);
    }
    if (!snap.roster.ok) {
      // missing evidence protects (D5) and passes: the request waits for a roster that answers, like any
      // passing protection. (Thrown, it failed after 3 attempts and counted as a request never delivered.)
      deps.log.warn(
        { event: 'exit:deferred', ...log, why: 'roster probe failed', error: snap.roster.error },
        `exit request ${jobId} waits: the roster probe failed`,
      );
      return deferJob(job, token, deps.now() + deps.config.windows.recheck);
    }
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
    // the session's own exit path (a dry run: what it would do, src/pipeline/dry-run.ts)
    return deps.acts.exit(deps, { ref, view: j.view, log }, () => call(data, base, j.view, log));
  };

  /** The verdict on one sweep, for this exit (a person's may carry an override). */
  function recheck(data: SessionExitJob, ref: ReturnType<typeof exitRefOf>, snap: FleetSnapshot) {
    return judge({
      act: data.reason === 'person' ? 'person' : 'exit',
      ...(ref ? kindOf(ref).judgeScope(ref) : {}),
      view: snap.roster.ok ? sessionFor(snap, data.sessionId) : null,
      rosterOk: snap.roster.ok,
      ...(data.reason === 'person' ? { override: data.override } : {}),
      now: deps.now(),
      recheck: deps.config.windows.recheck,
      silence: deps.config.windows.silence,
    });
  }

  /** Take the session's exit path: claimed once in the ledger, called, confirmed, its chain's exitedAt latched. */
  async function call(data: SessionExitJob, base: ExitRecord, view: SessionView, log: Record<string, unknown>) {
    const jobId = base.jobId;
    const target: ExitTarget = {
      id: view.id,
      sessionId: view.sessionId,
      kind: view.kind as 'interactive' | 'background',
      ...(view.agent ? { agent: view.agent } : {}),
      pid: view.pid!,
      startedAt: view.row.startedAt,
      paneId: view.evidence.pane?.paneId ?? null,
    };
    const calling: ExitRecord & Record<string, unknown> = {
      ...base,
      ...(base.taskId ? {} : view.taskId ? { taskId: view.taskId } : {}),
      // the session's whole id, whatever named it (a task may name it by its short id): resume and its kept copy go by it
      sessionId: view.sessionId,
      id: view.id,
      label: view.label,
      name: view.name,
      kind: view.kind,
      ...(view.agent ? { agent: view.agent, transcript: view.evidence.transcript ?? null } : {}),
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
    decided(
      deps,
      'exit:calling',
      {
        ...log,
        id: view.id,
        kind: view.kind,
        ...(data.reason === 'person' ? { by: data.by, why: data.why, override: data.override } : {}),
        ...evidenceOf(view),
      },
      `asking session ${view.label} to leave by its own exit path (${exitPathOf(view)?.how ?? 'none known'})`,
    );
    let outcome: ExitOutcome;
    try {
      outcome = await exit(target, deps.config, { roster });
    } catch (err) {
      outcome = {
        method: exitPathOf(view)?.method ?? 'claude-stop',
        called: false,
        exited: false,
        ms: 0,
        error: errorMessage(err),
      };
    }
    if (outcome.exited) await latchExited(data, view);
    const result = outcome.exited ? 'exited' : outcome.called ? 'still-running' : 'failed';
    return finish(data, calling, result, view, {
      method: outcome.method,
      ms: outcome.ms,
      ...(outcome.error ? { error: outcome.error } : {}),
    } as Partial<ExitRecord>);
  }

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

  /** It left: a copy of its transcript, so it stays resumable after Claude Code's own cleanup (src/store/kept.ts). */
  async function keep(rec: ExitRecord) {
    // another agent CLI's transcript is its own to keep (resume.keep copies Claude Code's: docs/agents/README.md)
    const agent = (rec as ExitRecord & { agent?: string }).agent ?? null;
    if (exitPathOf({ kind: rec.kind ?? 'background', agent })?.keepsTranscript !== true) return;
    const k = await keepTranscript(deps.config, rec.sessionId, deps.now());
    const who = rec.label ?? rec.sessionId;
    if (k.pruned.length)
      deps.log.info({ event: 'resume:let-go', sessionIds: k.pruned }, `let ${k.pruned.length} kept transcript copies go (resume.keepDays)`);
    if (k.kept)
      decided(
        deps,
        'resume:kept',
        { jobId: rec.jobId, sessionId: rec.sessionId, bytes: k.meta.bytes, gzBytes: k.meta.gzBytes, path: k.path },
        `kept a copy of session ${who}'s transcript (${k.meta.bytes} bytes, ${k.meta.gzBytes} compressed): it stays resumable`,
      );
    else if (deps.config.resume.keep)
      decided(
        deps,
        'resume:not-kept',
        { jobId: rec.jobId, sessionId: rec.sessionId, why: k.why },
        `no copy of session ${who}'s transcript kept: ${k.why}`,
        {
          level: 'warn',
        },
      );
  }

  async function latchExited(data: SessionExitJob, view: SessionView | undefined) {
    const ref = exitRefOf(data);
    if (ref) await kindOf(ref).markExited(deps, ref, view);
    // a person's exit of a session whose task is finished ends that task's chain
    else if (view?.taskId && view.evidence.task?.terminal)
      await latch(deps, view.taskId, { exitedAt: new Date(deps.now()).toISOString() }).catch(() => undefined);
  }

  async function finish(
    data: SessionExitJob,
    rec: ExitRecord,
    outcome: NonNullable<ExitRecord['outcome']>,
    view: SessionView | undefined,
    extra: Partial<ExitRecord> = {},
  ) {
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
    decided(
      deps,
      `exit:${outcome}`,
      {
        jobId: rec.jobId,
        reason: rec.reason,
        taskId: rec.taskId,
        sessionId: rec.sessionId,
        ...(view ? { id: view.id } : {}),
        // the agent CLI beside Claude Code that runs it (its own quit command was typed): absent for Claude Code
        ...agentOf(rec, view),
        ...extra,
        ...(outcome === 'spared' || outcome === 'refused' ? evidenceOf(view) : {}),
      },
      words[outcome],
    );
    if (outcome === 'exited') await keep(rec);
    // the chain's next step is timed from this finish: it moves on now (request n+1 or the give-up, retryWait on)
    const ref = exitRefOf(data);
    if (ref && outcome !== 'exited' && outcome !== 'gone')
      await kindOf(ref).afterExit(deps, ref, { finishedAt: done.finishedAt!, view, stillRunning: outcome === 'still-running' });
    return { outcome };
  }
}

/** The agent CLI of an exit's session, for its log line: from the record (written when it was called), else its view. */
function agentOf(rec: ExitRecord, view: SessionView | undefined): { agent?: string } {
  const agent = (rec as ExitRecord & { agent?: unknown }).agent ?? view?.agent;
  return typeof agent === 'string' ? { agent } : {};
}
