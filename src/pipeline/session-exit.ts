// How a session leaves: the single implementation (ADR-0010 consequence 3, doctrine D1). It finds the session's
// exit path (src/agents/: background → `<claude> stop <id>`; interactive → `/exit` typed into its pane, then
// Enter) and takes it; the path waits up to exitConfirm for the process to end. No signal, anywhere: there is no
// stronger instrument. Only the exit worker calls this (D2); everything else enqueues an exit job.
import type { Config } from '../config.js';
import { exitPathOf } from '../agents/index.js';
import type { ExitContext, ExitOutcome, ExitTarget } from '../agents/types.js';

export type { ExitMethod, ExitOutcome, ExitTarget } from '../agents/types.js';
export { alive, waitForEnd } from '../agents/process-end.js';

export async function sessionExit(target: ExitTarget, config: Config, opts: Omit<ExitContext, 'config'> = {}): Promise<ExitOutcome> {
  const path = exitPathOf(target);
  // unreachable from the worker (its verdict protects such a session: kind-unknown); refused, never guessed
  if (!path) throw new Error(`no exit path for a ${target.kind} session of ${target.agent ?? 'claude-code'}: sunset has none for it`);
  return path.leave({ config, ...opts }, target);
}
