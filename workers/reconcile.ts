// reconcile: at start and every reconcileEvery, derive every task's next step from its latched fields
// alone and enqueue it (D7). A released task whose session is a record, gone, or absent from a roster that
// answered has ended: exitedAt is latched (a failed roster is not "absent": the chain goes on, its worker waits).
import type { Job } from 'bullmq';
import { readTasks } from '../src/tasks/tasks.js';
import { advance, endedElsewhere, sessionFor, type PipelineDeps } from '../src/pipeline/deps.js';

export function createReconcileProcessor(deps: PipelineDeps) {
  return async (_job?: Job) => {
    const r = await readTasks(deps.config.fleet.tasksDir);
    if (!r.ok) {
      deps.log.warn({ event: 'reconcile:tasks-failed', error: r.error }, `reconcile: ${r.error}`);
      return { error: r.error };
    }
    const open = r.tasks.filter((t) => t.terminal && !t.exitedAt && !t.exitGaveUpAt);
    if (!open.length) return { tasks: r.tasks.length, advanced: 0 };
    const snap = await deps.fleet(1000);
    let advanced = 0;
    let skipped = 0;
    for (const t of open) {
      if (t.releasedAt && t.sessionId && snap.roster.ok) {
        const view = sessionFor(snap, t.sessionId);
        if (!view || view.verdict === 'record' || view.verdict === 'gone') {
          await endedElsewhere(deps, t, view).catch((err) => deps.log.warn({ event: 'latch:failed', taskId: t.id, error: err.message }, `task ${t.id}: ${err.message}`));
          skipped++;
          continue;
        }
      }
      const plan = await advance(deps, t);
      if (plan.steps.length) advanced++;
    }
    deps.log.debug({ event: 'reconcile:done', tasks: r.tasks.length, advanced, skipped }, 'reconcile pass');
    return { tasks: r.tasks.length, advanced, skipped };
  };
}
