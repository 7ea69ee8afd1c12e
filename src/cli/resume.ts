import { existsSync } from 'node:fs';
import { Alarms } from '../store/alarms.js';
import { lookupExited, loadResumeEntries, resumeArgv } from '../report/resume.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { parseDuration } from '../duration.js';
import { EXIT, UsageError, config, type Command } from './common.js';

export const resumeCommand: Command = {
  name: 'resume',
  summary: 'bring back a conversation sunset exited (through the cap)',
  usage: `usage: sunset resume TASK|SESSION [--wait] [--timeout DUR] [--config FILE]

Looks TASK (a task id) or SESSION (its short id, sessionId, a unique prefix of either,
or its name) up in the resume ledger (\`sunset exited\`) and runs its resume command
(fleet.resumeCommand, default \`claude --resume <sessionId>\`) in the recorded cwd —
through \`sunset admit\`, so the ceiling still holds. An interactive session comes back in a new tmux window (a new
detached tmux session when you are not inside tmux); a background one runs here.

Exit codes: the resumed command's own, 2 unknown id, 75 cap reached (see --wait).`,
  options: { wait: { type: 'boolean' }, timeout: { type: 'string' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1) throw new UsageError(`resume takes one TASK or SESSION id\n\n${this.usage}`);
    const cfg = config(values, io);
    const found = lookupExited(loadResumeEntries(cfg, new Alarms(cfg).list()), positionals[0]);
    if (found.kind === 'ambiguous') {
      io.err(`sunset resume: ${ambiguousMessage(positionals[0], found.matches)}`);
      return EXIT.usage;
    }
    if (found.kind === 'none') {
      io.err(`sunset resume: nothing in the resume ledger for ${JSON.stringify(positionals[0])} (see \`sunset exited\`)`);
      return EXIT.usage;
    }
    const entry = found.row;
    const timeoutMs = values.timeout === undefined ? null : parseDuration(values.timeout);
    if (values.timeout !== undefined && timeoutMs === null) throw new UsageError(`--timeout takes a duration like 30s or 10m`);
    const cwd = entry.cwd && existsSync(entry.cwd) ? entry.cwd : io.cwd;
    if (entry.cwd && cwd !== entry.cwd) io.err(`sunset resume: the recorded cwd ${entry.cwd} is gone; resuming in ${cwd}`);
    const { argv, attach } = resumeArgv(cfg, { ...entry, cwd }, Boolean(io.env.TMUX));
    io.err(`sunset resume: ${entry.id ?? entry.sessionId} (${entry.kind ?? 'background'}) in ${cwd}: ${argv.join(' ')}`);
    const { admit } = await import('../cap/admit.js');
    const code = await admit(cfg, argv, { wait: Boolean(values.wait), timeoutMs, err: io.err, cwd, env: io.env });
    if (code === 0 && attach) io.err(`sunset resume: it is running in tmux; attach with: ${attach}`);
    return code;
  },
};
