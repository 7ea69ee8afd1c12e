// A person's exit request (CLI `sunset exit`, web POST /api/exit/:id): judged on fresh evidence, refused
// when protected unless overridden (an audited decision), then enqueued on the same rate-limited path.
import type { PipelineDeps } from './deps.js';
import { evidenceOf, exitPriorityNow, redisLinkOf } from './deps.js';
import type { SessionView } from '../evidence/fleet.js';
import { personExitId } from '../../queues/session-exit.js';

/** The dedupe key of a session's person exit request (one at a time: queues/common.ts add's dedupe). */
export const personDedupeKey = (sessionId: string) => `person-exit:${sessionId}`;
import { UNREACHABLE } from '../doctrine/verdict.js';
import { holdsProcess, resolveSession } from '../doctrine/identity.js';
import { judge } from '../doctrine/judge.js';
import { decided } from './events.js';
import { errorMessage } from '../errors.js';

export type PersonExitResult =
  /** joined: a request for this session was already waiting or being carried out; jobId is that one's (one exit call, not two). */
  | { status: 'accepted'; jobId: string; view: SessionView; joined?: boolean }
  | { status: 'unknown-id' }
  | { status: 'ambiguous'; matches: SessionView[] }
  | { status: 'roster-failed'; error: string }
  | { status: 'needs-reason' }
  | { status: 'refused'; view: SessionView; reasons: string[]; overridable: boolean }
  | { status: 'not-queued'; view: SessionView; error: string };

/** Judged on fresh evidence first (refusals never need Redis); an exit it would queue that Redis does not take is `not-queued`, with the cause. */
export async function requestPersonExit(
  deps: PipelineDeps,
  id: string,
  o: { why: string; by: string; override: boolean },
): Promise<PersonExitResult> {
  const snap = await deps.fleet(0, { roster: 'cli' });
  if (!snap.roster.ok) return { status: 'roster-failed', error: snap.roster.error };
  const found = resolveSession(snap.sessions, id, holdsProcess);
  if (found.kind === 'none') return { status: 'unknown-id' };
  if (found.kind === 'ambiguous') return { status: 'ambiguous', matches: found.matches };
  const view = found.row;
  // the same judgement the exit worker makes again just before it acts
  const j = judge({ act: 'person', view, rosterOk: true, override: o.override, now: deps.now(), recheck: 0 });
  if (j.kind !== 'act') {
    const reasons = view.verdict === 'record' || view.verdict === 'gone' ? [view.verdict] : j.why.split(',');
    const overridable = view.verdict === 'protected' && !view.reasons.some((r) => UNREACHABLE.has(r));
    return { status: 'refused', view, reasons, overridable };
  }
  // overriding a protection is a person's decision: it is audited with why, so it must say why
  if (view.verdict === 'protected' && !o.why.trim()) return { status: 'needs-reason' };
  o = { ...o, why: o.why.trim() || '(no reason given)' };
  const at = deps.now();
  const jobId = personExitId(view.sessionId, at);
  let job: { id?: string } | undefined;
  try {
    // Redis must answer now: an add made while it is away waits in the client's queue and is carried out when
    // it comes back, minutes later, long after the person was told nothing (the web's answer would hang)
    await answersNow(deps.producers.exit.queue, 2000);
    // one person request per session at a time: a second one while the first waits or works joins it
    job = await deps.producers.exit.add(
      jobId,
      { reason: 'person', sessionId: view.sessionId, by: o.by, why: o.why, override: o.override, at: new Date(at).toISOString() },
      { priority: exitPriorityNow(deps, view.rssBytes), dedupe: personDedupeKey(view.sessionId) },
    );
  } catch (err) {
    return {
      status: 'not-queued',
      view,
      error: `cannot reach Redis at ${redisLinkOf(deps.producers)?.where ?? deps.config.redisUrl} (${errorMessage(err)})`,
    };
  }
  const queued = job?.id ?? jobId;
  if (queued !== jobId) {
    decided(
      deps,
      'exit:person-joined',
      { sessionId: view.sessionId, id: view.id, jobId: queued, by: o.by, why: o.why },
      `exit of ${view.label} requested by ${o.by}: already requested (job ${queued}), joined it`,
    );
    return { status: 'accepted', jobId: queued, view, joined: true };
  }
  decided(
    deps,
    'exit:person-request',
    { sessionId: view.sessionId, id: view.id, taskId: view.taskId, by: o.by, why: o.why, override: o.override, ...evidenceOf(view) },
    `exit of ${view.label} requested by ${o.by}`,
  );
  return { status: 'accepted', jobId, view };
}

/** Resolve when Redis answers one small command within ms; reject (with why) otherwise. */
async function answersNow(queue: { isPaused(): Promise<boolean> }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: not queued`)), ms);
  });
  try {
    await Promise.race([queue.isPaused(), late]);
  } finally {
    clearTimeout(timer);
  }
}
