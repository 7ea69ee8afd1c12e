// reconcile: at start and every reconcileEvery, derive every chain's next step from its latched fields (and the
// exit ledger) alone and enqueue it (D7): every finished task's here, and each other kind's by its adapter's
// `reconcile` (src/pipeline/chain-kinds/: a finished Claude Code job's chain begins there, its latches in stateDir). A
// released task whose session is a record, gone, or absent from a roster that answered has ended: exitedAt is
// latched (a failed roster is not "absent": the chain goes on and its own worker waits). A step the session's
// verdict would end at once (superseded, protected by an open task, a person deciding) gets no job.
import type { Job } from 'bullmq';
import { readTasks } from '../src/tasks/tasks.js';
import { endedElsewhere, sessionFor, type PipelineDeps } from '../src/pipeline/deps.js';
import { schedule } from '../src/pipeline/chains.js';
import { chainOfTask } from '../src/pipeline/chain-kinds/task.js';
import { CHAIN_KINDS } from '../src/pipeline/chain-kinds/index.js';
import { syncPins } from '../src/pipeline/pins.js';
import { judge, type Act } from '../src/doctrine/judge.js';
import { taskChainOpen } from '../src/doctrine/verdict.js';
import type { ChainStep } from '../src/doctrine/chain.js';
import type { FleetSnapshot } from '../src/evidence/fleet.js';
import type { Task } from '../src/tasks/tasks.js';

/** The act each chain step's worker judges. */
const ACT: Record<Exclude<ChainStep['step'], 'release' | 'end'>, Act> = {
  ask: 'ask',
  request: 'request',
  'give-up': 'give-up',
  confirm: 'exit',
};

export function createReconcileProcessor(deps: PipelineDeps) {
  // A pass that sweeps takes its tasks from the sweep: one read of the folder, not two (on 10,000 tasks the second
  // read was a third of the pass). It sweeps first when the last pass had open chains or jobs are watched; else it
  // reads the folder and sweeps only when a chain is open (a fleet at rest with every chain ended calls no roster).
  let sweptLast = false;
  return async (_job?: Job) => {
    // the kinds whose chains a pass begins or schedules again from the sweep (a finished Claude Code job's, …)
    const passes = Object.values(CHAIN_KINDS).flatMap((k) => (k.reconcile?.wanted(deps.config) ? [k.reconcile] : []));
    const pins = deps.config.fleet.claudeDir !== null && deps.config.fleet.pinProtected;
    const everyPass = passes.length > 0 || pins; // a pass that sweeps whatever its tasks say
    const sweep = (maxAge = 1000) => deps.fleet(maxAge, { roster: 'cli', tmux: 'if-needed' });
    let snap: FleetSnapshot | null = null;
    let tasks: Task[];
    // the sweep its chains are judged on started after their tasks were read: one shared from a moment before
    // may have read a task `active` that the folder now says is `done` (its chain then skipped for a whole pass)
    let readAt: number | null = null;
    if (everyPass || sweptLast) {
      snap = await sweep();
      if (snap.probeErrors.tasks) return tasksFailed(snap.probeErrors.tasks);
      tasks = snap.tasks;
    } else {
      readAt = deps.now();
      const r = await readTasks(deps.config.fleet.tasksDir);
      if (!r.ok) return tasksFailed(r.error);
      tasks = r.tasks;
    }
    // an ended chain (exited, given up) has no next step: not even built (a fleet's history is most of its tasks)
    const open = tasks
      .filter((t) => t.terminal && taskChainOpen(t))
      .map((t) => chainOfTask(deps, t))
      .filter((c) => c.step && c.step.step !== 'end');
    sweptLast = open.length > 0;
    if (!open.length && !everyPass) return { tasks: tasks.length, advanced: 0 };
    snap ??= await sweep(readAt === null ? 1000 : Math.min(1000, Math.max(0, deps.now() - readAt)));
    let advanced = 0;
    let ended = 0;
    let idle = 0;
    // the steps' jobs are added together (one addBulk a batch, not a round trip each), and awaited at the end
    const adds: Array<Promise<unknown>> = [];
    for (const c of open) {
      const t = c.task!;
      const view = t.sessionId && snap.roster.ok ? sessionFor(snap, t.sessionId) : null;
      // a live session the CLI does not list while Claude Code's files do not read (claude-code-unreadable): not ended
      const unlisted = !view && t.sessionId !== null && Boolean(snap.claudeFiles?.unreadable?.unlisted.includes(t.sessionId));
      if (t.releasedAt && t.sessionId && snap.roster.ok && !unlisted) {
        if (!view || view.verdict === 'record' || view.verdict === 'gone') {
          await endedElsewhere(deps, t, view).catch((err) =>
            deps.log.warn({ event: 'latch:failed', taskId: t.id, error: err.message }, `task ${t.id}: ${err.message}`),
          );
          ended++;
          continue;
        }
      }
      // a step its own worker would end at once (a later task supersedes it, an open task protects the session,
      // a person decides): no job for it — the next pass looks again. (Else every pass woke such chains for nothing,
      // each exit job a sweep of its own.)
      const act = c.step && c.step.step !== 'release' && c.step.step !== 'end' ? ACT[c.step.step] : null;
      if (act && view) {
        const j = judge({ act, view, rosterOk: true, taskId: t.id, now: deps.now(), recheck: deps.config.windows.recheck });
        if (j.kind === 'end' && !j.gone) {
          idle++;
          continue;
        }
      }
      adds.push(schedule(deps, c));
      advanced++;
    }
    await Promise.all(adds);
    // the other kinds' chains, each by its adapter
    let begun = 0;
    if (snap.roster.ok) for (const p of passes) begun += await p.pass(deps, snap);
    // one doctrine for both reapers: the sessions a person is waiting on are pinned against Claude Code's own
    const pinned = snap.roster.ok ? await syncPins(deps, snap) : null;
    if (pinned && !pinned.ok) deps.log.warn({ event: 'pins:failed', error: pinned.error }, `pins: ${pinned.error}`);
    deps.log.debug({ event: 'reconcile:done', tasks: tasks.length, advanced, ended, idle, begun }, 'reconcile pass');
    return { tasks: tasks.length, advanced, ended, idle, begun };
  };

  function tasksFailed(error: string) {
    deps.log.warn({ event: 'reconcile:tasks-failed', error }, `reconcile: ${error}`);
    return { error };
  }
}
