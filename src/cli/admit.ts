import { admit } from '../cap/admit.js';
import { parseDuration } from '../duration.js';
import { EXIT, UsageError, config, type Command } from './common.js';
import { redisForCommand } from '../redis/target.js';

export const admitCommand: Command = {
  name: 'admit',
  summary: 'start a command only under the session cap and above the memory floor (75 when not)',
  usage: `usage: sunset admit [--wait] [--timeout DUR] [--json] [--config FILE] -- <command> [args…]

Starts <command> (argv, no shell, the terminal inherited) only while live sessions, plus
admissions not yet on the roster, are under the ceiling (config "cap"). Its exit code is
passed on; sunset forwards it no signal. Each start holds a lease in Redis, counted as live
until the roster shows the session it started or windows.admitLease passes, so two admits
at 34/35 cannot both start.

At or over the ceiling it does not start the command: one line on stderr
("cap reached: 36/35 — not starting; 4 finished sessions are being asked to exit"), a
cap-reached alarm (at most one an hour), exit 75.

Memory too (memoryFloorMB; null = count alone): it does not start the command when
MemAvailable (read from config "meminfoPath", default /proc/meminfo), less a typical session
of this fleet (the median RSS of its live sessions; admit.sessionMB, default 500, while none
can be measured) for this start and each one in flight, would fall below memoryFloorMB. The
line says which limit refused (count, memory or both) and by how much; exit 75 either way.
MemAvailable that cannot be read, with a floor set, is exit 1 (not started).

  --wait          queue the start instead (first come, first served across processes) and
                  start it once both limits allow it (it waits for whichever refused to
                  clear); progress on stderr (and, once, that \`sunset up\` is not running
                  when it is not: nothing then frees a slot by itself)
  --timeout DUR   give up waiting after DUR ("90s", "10m"): exit 75
  --json          when the command is not started, one JSON object on stdout saying why:
                  { started: false, reason: "refused" | "timeout" | "failed", refusedBy:
                  ["count" | "memory"], count: {…, slotsShort}, memory: {…, shortBytes} | null }

Exit codes: the command's own; 75 cap or memory floor reached; 1 roster, Redis or
MemAvailable failed (not started); 2 bad usage; 127 / 126 the command cannot be found /
run; 130 / 143 Ctrl-C / kill PID before it started (it leaves the queue, within 10 s).`,
  options: { wait: { type: 'boolean' }, timeout: { type: 'string' }, json: { type: 'boolean' } },
  takesCommand: true,
  async run({ values, rest }, io) {
    if (!rest.length) throw new UsageError(`no command given: put it after "--"\n\n${this.usage}`);
    let timeoutMs: number | null = null;
    if (values.timeout !== undefined) {
      if (!values.wait) throw new UsageError(`--timeout bounds --wait; give both\n\n${this.usage}`);
      timeoutMs = parseDuration(values.timeout);
      if (timeoutMs === null) throw new UsageError(`--timeout takes a duration like "90s" or "10m", not ${JSON.stringify(values.timeout)}`);
    }
    const cfg = await redisForCommand(config(values, io)); // the Redis `sunset up` runs on: its private one too
    const code = await admit(cfg, rest, {
      wait: Boolean(values.wait),
      timeoutMs,
      err: io.err,
      json: Boolean(values.json),
      out: io.out,
      cwd: io.cwd,
      env: io.env,
    });
    return code === 75 ? EXIT.capReached : code;
  },
};
