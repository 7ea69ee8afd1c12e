import { existsSync } from 'node:fs';
import { Alarms } from '../store/alarms.js';
import { lookupExited, loadResumeEntries, resumeArgv } from '../report/resume.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { parseDuration } from '../duration.js';
import { EXIT, UsageError, config, type Command } from './common.js';
import { redisForCommand } from '../redis/target.js';
import { restoreTranscript } from '../store/kept.js';
import { errorMessage } from '../errors.js';

export const resumeCommand: Command = {
  name: 'resume',
  summary: 'bring back a conversation sunset exited (through the cap)',
  usage: `usage: sunset resume TASK|SESSION [--wait] [--timeout DUR] [--config FILE]

Looks TASK (a task id) or SESSION (its short id, sessionId, a unique prefix of either,
or its name) up in the resume ledger (\`sunset exited\`) and runs its resume command
(fleet.resumeCommand, default \`claude --resume <sessionId>\`; a Codex or Gemini CLI session, its own CLI's:
\`codex resume <id>\`, \`gemini --resume <id>\`) in the recorded cwd — through \`sunset admit\`, so the ceiling
still holds. An interactive session comes back in a new tmux window (a new detached tmux session when you are not
inside tmux), with that tmux server's environment: a credential or base URL that was set only on the first
session's own command line is not passed on (set it in the tmux server's environment or the CLI's own config);
a background one runs here, in this shell's environment.

When Claude Code has deleted its transcript (settings.json cleanupPeriodDays), the copy sunset kept at the
exit is put back first (only where no transcript is; never over one). With neither, it says so and stops.

  --wait           when the cap (count or memory) refuses the start, wait for room instead of exiting 75
  --timeout DUR    with --wait, give up after DUR (30s, 10m); exit 75 then

Exit codes: the resumed command's own, 1 its conversation is gone (no transcript, no kept copy),
2 unknown id, 75 cap reached (see --wait).`,
  options: { wait: { type: 'boolean' }, timeout: { type: 'string' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1) throw new UsageError(`resume takes one TASK or SESSION id\n\n${this.usage}`);
    const timeoutMs = values.timeout === undefined ? null : parseDuration(values.timeout);
    if (values.timeout !== undefined && timeoutMs === null) throw new UsageError(`--timeout takes a duration like 30s or 10m`);
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
    const who = entry.id ?? entry.sessionId;
    let restored: ReturnType<typeof restoreTranscript>;
    try {
      // Claude Code's cleanup may have taken the transcript; another agent CLI resumes from its own (sunset keeps none)
      restored =
        entry.agent && entry.agent !== 'claude-code' ? agentTranscript(entry.transcript ?? null) : restoreTranscript(cfg, entry.sessionId);
    } catch (err) {
      io.err(`sunset resume: putting the kept copy of ${who}'s transcript back failed: ${errorMessage(err)}`);
      return EXIT.failure;
    }
    if (restored.from === 'gone') {
      io.err(`sunset resume: ${who} cannot be resumed: ${restored.why} (sunset exited shows what is kept)`);
      return EXIT.failure;
    }
    if (restored.from === null) io.err(`sunset resume: cannot tell whether its transcript is there (${restored.why}); resuming anyway`);
    if (restored.from === 'kept copy')
      io.err(
        `sunset resume: Claude Code had deleted its transcript; put sunset's kept copy back at ${restored.path} (${restored.bytes} bytes)`,
      );
    const cwd = entry.cwd && existsSync(entry.cwd) ? entry.cwd : io.cwd;
    if (entry.cwd && cwd !== entry.cwd) io.err(`sunset resume: the recorded cwd ${entry.cwd} is gone; resuming in ${cwd}`);
    const target = await redisForCommand(cfg); // through the cap, whose leases are in the Redis `sunset up` runs on
    const { argv, attach } = resumeArgv(cfg, { ...entry, cwd }, Boolean(io.env.TMUX));
    io.err(`sunset resume: ${who} (${entry.kind ?? 'background'}) in ${cwd}: ${argv.join(' ')}`);
    const { admit } = await import('../cap/admit.js');
    const code = await admit(target, argv, { wait: Boolean(values.wait), timeoutMs, err: io.err, cwd, env: io.env });
    if (code === 0 && attach) io.err(`sunset resume: it is running in tmux; attach with: ${attach}`);
    return code;
  },
};

/** An agent CLI's session resumes from the transcript sunset saw it write, while that is there. */
function agentTranscript(path: string | null): ReturnType<typeof restoreTranscript> {
  if (path === null) return { from: null, why: 'sunset did not record where its transcript is' };
  return existsSync(path) ? { from: 'transcript', path, restored: false } : { from: 'gone', why: `its transcript ${path} is gone` };
}
