// reconcile: at start and every reconcileEvery, derive every task's next step from its latched fields (and the
// exit ledger) alone and enqueue it (D7). A released task whose session is a record, gone, or absent from a
// roster that answered has ended: exitedAt is latched (a failed roster is not "absent": the chain goes on).
import type { Job } from 'bullmq';
import { readTasks } from '../src/tasks/tasks.js';
import { endedElsewhere, sessionFor, type PipelineDeps } from '../src/pipeline/deps.js';
import { schedule, stepOf } from '../src/pipeline/chains.js';

export function createReconcileProcessor(deps: PipelineDeps) {
  return async (_job?: Job) => {
    const r = await readTasks(deps.config.fleet.tasksDir);
    if (!r.ok) {
      deps.log.warn({ event: 'reconcile:tasks-failed', error: r.error }, `reconcile: ${r.error}`);
      return { error: r.error };
    }
    const open = r.tasks.map((t) => ({ t, step: stepOf(deps, t) })).filter((x) => x.step && x.step.step !== 'end');
    if (!open.length) return { tasks: r.tasks.length, advanced: 0 };
    const snap = await deps.fleet(1000);
    let advanced = 0;
    let ended = 0;
    for (const { t, step } of open) {
      if (t.releasedAt && t.sessionId && snap.roster.ok) {
        const view = sessionFor(snap, t.sessionId);
        if (!view || view.verdict === 'record' || view.verdict === 'gone') {
          await endedElsewhere(deps, t, view).catch((err) => deps.log.warn({ event: 'latch:failed', taskId: t.id, error: err.message }, `task ${t.id}: ${err.message}`));
          ended++;
          continue;
        }
      }
      await schedule(deps, t, { step });
      advanced++;
    }
    deps.log.debug({ event: 'reconcile:done', tasks: r.tasks.length, advanced, ended }, 'reconcile pass');
    return { tasks: r.tasks.length, advanced, ended };
  };
}
