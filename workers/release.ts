// release: a task turned terminal. Runs releaseCommand (argv, placeholders filled, never a shell) when set,
// latches releasedAt, schedules the ask at releasedAt + grace. It releases a loop, never a session (D6).
import type { Job } from 'bullmq';
import { taskTerminalSchema } from '../queues/task-terminal.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { latchChain, loadChain, schedule } from '../src/pipeline/chains.js';
import { run } from '../src/run.js';
import { decided } from '../src/pipeline/events.js';
import { jobData } from './common.js';

export function fillPlaceholders(argv: readonly string[], values: Record<string, string>): string[] {
  return argv.map((w) => w.replace(/\{(taskId|sessionId|watcher)\}/g, (_, k: string) => values[k] ?? ''));
}

export function createReleaseProcessor(deps: PipelineDeps) {
  return async (job: Job, token?: string) => {
    const { taskId } = jobData(taskTerminalSchema, job);
    const c = await loadChain(deps, { kind: 'task', taskId });
    const task = c.task!;
    if (c.step?.step !== 'release') return { released: false, next: (await schedule(deps, c))?.step ?? 'open' };
    const cmd = deps.config.fleet.releaseCommand;
    if (deps.dry) {
      // the whole chain, previewed: latched in the dry run's memory, then its next step on the dry run's schedule
      const res = await latchChain(deps, c, { startedAt: new Date(deps.now()).toISOString() });
      decided(deps, 'would-release', { taskId, sessionId: task.sessionId, releaseCommand: Boolean(cmd) }, `would release task ${taskId}${cmd ? ` (running ${cmd[0]})` : ''}`);
      await schedule(deps, res.chain);
      return { wouldRelease: true };
    }
    if (cmd) {
      const argv = fillPlaceholders(cmd, { taskId, sessionId: task.sessionId ?? '', watcher: task.watcher === null ? '' : String(task.watcher) });
      const r = await run(argv, { timeoutMs: deps.config.probeTimeout });
      if (!r.ok) throw new Error(`releaseCommand failed for task ${taskId}: ${r.error} ${r.stderr.trim()}`); // retried with backoff
    }
    const res = await latchChain(deps, c, { startedAt: new Date(deps.now()).toISOString() }, job, token);
    decided(deps, 'task:released', { taskId, sessionId: task.sessionId, releasedAt: res.chain.facts.startedAt, watcher: task.watcher, releaseCommand: Boolean(cmd) }, `released task ${taskId}`);
    await schedule(deps, res.chain);
    return { released: true };
  };
}
