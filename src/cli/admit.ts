import { admit } from '../cap/admit.js';
import { parseDuration } from '../duration.js';
import { EXIT, UsageError, config, type Command } from './common.js';

export const admitCommand: Command = {
  name: 'admit',
  summary: 'start a command only under the session cap (75 when at it)',
  usage: `usage: sunset admit [--wait] [--timeout DUR] [--config FILE] -- <command> [args…]

Starts <command> (argv, no shell, the terminal inherited) only while live sessions, plus
admissions not yet on the roster, are under the ceiling (config "cap"). Its exit code is
passed on; sunset forwards it no signal. Each start holds a lease in Redis, counted as live
until the roster shows the session it started or windows.admitLease passes, so two admits
at 34/35 cannot both start.

At or over the ceiling it does not start the command: one line on stderr
("cap reached: 36/35 — not starting; 4 finished sessions are being asked to exit"), a
cap-reached alarm (at most one an hour), exit 75.
  --wait          queue the start instead (first come, first served across processes) and
                  start it when a slot frees; progress on stderr
  --timeout DUR   give up waiting after DUR ("90s", "10m"): exit 75

Exit codes: the command's own; 75 cap reached; 1 roster or Redis failed (not started);
2 bad usage; 127 / 126 the command cannot be found / run.`,
  options: { wait: { type: 'boolean' }, timeout: { type: 'string' } },
  takesCommand: true,
  async run({ values, rest }, io) {
    if (!rest.length) throw new UsageError(`no command given: put it after "--"\n\n${this.usage}`);
    let timeoutMs: number | null = null;
    if (values.timeout !== undefined) {
      if (!values.wait) throw new UsageError(`--timeout bounds --wait; give both\n\n${this.usage}`);
      timeoutMs = parseDuration(values.timeout);
      if (timeoutMs === null) throw new UsageError(`--timeout takes a duration like "90s" or "10m", not ${JSON.stringify(values.timeout)}`);
    }
    const cfg = config(values, io);
    const code = await admit(cfg, rest, { wait: Boolean(values.wait), timeoutMs, err: io.err, cwd: io.cwd, env: io.env });
    return code === 75 ? EXIT.capReached : code;
  },
};
