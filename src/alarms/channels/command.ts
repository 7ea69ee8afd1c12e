// The command (today's `alarms.command`): its argv run (never a shell) with the webhook's JSON (the idempotency
// key in it) on stdin; exit 0 is delivered.
import { isAbsolute } from 'node:path';
import type { ChannelConfig } from '../../config.js';
import { run } from '../../run.js';
import type { ChannelAdapter } from './types.js';
import { jsonBody } from './webhook.js';
import { whichFile } from '../../which.js';

type Command = Extract<ChannelConfig, { type: 'command' }>;

export const commandChannel: ChannelAdapter<Command> = {
  type: 'command',
  async send(c, m, o) {
    const r = await run(c.argv, { timeoutMs: o.timeoutMs, input: `${JSON.stringify(jsonBody(m))}\n` });
    const err = r.stderr.trim().slice(0, 200);
    return r.ok
      ? { ok: true, status: null, detail: 'exit 0' }
      : { ok: false, status: null, detail: `${r.error ?? `exit ${r.exitCode}`}${err ? `: ${err}` : ''}` };
  },
  async probe(c, o) {
    const found = whichFile(c.argv[0], { PATH: o.env?.PATH ?? '' }, process.cwd());
    return found
      ? { ok: true, status: null, detail: `${found} is there and executable (not run)` }
      : { ok: false, status: null, detail: `${c.argv[0]} is not an executable file${isAbsolute(c.argv[0]) ? '' : ' on PATH'}` };
  },
};
