// release: a task turned terminal. Runs releaseCommand (argv, placeholders filled, never a shell) when set,
// latches releasedAt, schedules the ask at releasedAt + grace. It releases a loop, never a session (D6).
import type { Job } from 'bullmq';
import { taskTerminalSchema } from '../queues/task-terminal.js';
import { advance, latch, loadTask, type PipelineDeps } from '../src/pipeline/deps.js';
import { run } from '../src/run.js';
import { jobData } from './common.js';

export function fillPlaceholders(argv: readonly string[], values: Record<string, string>): string[] {
  return argv.map((w) => w.replace(/\{(taskId|sessionId|watcher)\}/g, (_, k: string) => values[k] ?? ''));
}

export function createReleaseProcessor(deps: PipelineDeps) {
  return async (job: Job) => {
    const { taskId } = jobData(taskTerminalSchema, job);
    const task = await loadTask(deps, taskId);
    if (!task || !task.terminal) return { skipped: task ? 'not terminal' : 'missing or invalid' };
    if (!task.releasedAt) {
      if (deps.dryRun) {
        deps.log.info({ event: 'release:dry-run', taskId }, `would release task ${taskId}`);
        return { dryRun: true };
      }
      const cmd = deps.config.fleet.releaseCommand;
      if (cmd) {
        const argv = fillPlaceholders(cmd, { taskId, sessionId: task.sessionId ?? '', watcher: task.watcher === null ? '' : String(task.watcher) });
        const r = await run(argv, { timeoutMs: deps.config.probeTimeout });
        if (!r.ok) throw new Error(`releaseCommand failed for task ${taskId}: ${r.error} ${r.stderr.trim()}`); // retried with backoff
      }
      const at = new Date(deps.now()).toISOString();
      const res = await latch(deps, taskId, { releasedAt: at });
      deps.audit({ event: 'release', taskId, sessionId: task.sessionId, releasedAt: res.task.releasedAt, watcher: task.watcher, releaseCommand: Boolean(cmd) });
      deps.log.info({ event: 'task:released', taskId, sessionId: task.sessionId }, `released task ${taskId}`);
      await advance(deps, res.task);
      return { released: true };
    }
    await advance(deps, task);
    return { released: false };
  };
}
