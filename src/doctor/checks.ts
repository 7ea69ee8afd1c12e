// `sunset doctor`'s checks: one small function each, in one table (CHECKS), each saying what it found and,
// when something is wrong, what to do about it. `fail` = sunset cannot do its work until it is fixed; `warn` =
// it works, with less (or a choice worth a second look). A check reads; it never starts, writes or signals
// anything. A probe that fails is said as what it is, never guessed past.
import { errorMessage } from '../errors.js';
import { checkClaude, checkClaudeFiles, checkRedis, checkTasks, checkTmux } from './checks-fleet.js';
import { checkAlarms, checkHooks, checkMemory, checkService } from './checks-setup.js';
import { checkAgents } from './checks-agents.js';
import { type Check, type DoctorContext, type Finding, fail } from './finding.js';

export type { Check, DoctorContext, Finding, Status } from './finding.js';

/** The checks, in the order they print. A new check is a function (checks-fleet.ts, checks-setup.ts) and a line here. */
export const CHECKS: readonly Check[] = [
  { name: 'redis', run: checkRedis },
  { name: 'tmux', run: checkTmux },
  { name: 'claude', run: checkClaude },
  { name: 'claude-files', run: checkClaudeFiles },
  { name: 'agents', run: checkAgents },
  { name: 'tasks', run: checkTasks },
  { name: 'hooks', run: checkHooks },
  { name: 'alarms', run: checkAlarms },
  { name: 'service', run: checkService },
  { name: 'memory', run: checkMemory },
];

/** Every check, at once; one that throws is a failure that says so (a failing probe is never an ok). */
export async function runChecks(ctx: DoctorContext, checks: readonly Check[] = CHECKS): Promise<Array<Finding & { name: string }>> {
  return Promise.all(
    checks.map(async (ch) => {
      try {
        return { name: ch.name, ...(await ch.run(ctx)) };
      } catch (err) {
        return { name: ch.name, ...fail(`the check itself failed: ${errorMessage(err)}`, 'report it with `sunset --version --verbose`') };
      }
    }),
  );
}
