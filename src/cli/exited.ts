import { existsSync } from 'node:fs';
import { Alarms } from '../store/alarms.js';
import { loadResumeEntries, resumeLines } from '../report/resume.js';
import { formatBytes } from '../report/report.js';
import { EXIT, UsageError, config, type Command } from './common.js';

export const exitedCommand: Command = {
  name: 'exited',
  summary: 'the resume ledger: sessions sunset exited (or gave up on), and how to bring each back',
  usage: `usage: sunset exited [--json [--array]] [--config FILE]

Every session sunset exited — task, session id, cwd, kind, when, why, memory freed, and the
command that resumes it — and every one it gave up on, newest first. \`sunset resume ID\`
brings one back (through the cap). --json prints { "entries": [ … ] } (as GET /api/exited);
--array the bare list (older scripts).`,
  options: { json: { type: 'boolean' }, array: { type: 'boolean' } },
  async run({ values }, io) {
    if (values.array && !values.json) throw new UsageError(`--array goes with --json\n\n${this.usage}`);
    const cfg = config(values, io);
    const entries = loadResumeEntries(cfg, new Alarms(cfg).list());
    if (!existsSync(cfg.stateDir)) io.err(`sunset exited: stateDir ${cfg.stateDir} does not exist (nothing has run with this config yet, or the path is wrong)`);
    if (values.json) io.out(JSON.stringify(values.array ? entries : { entries }, null, 2));
    else if (!entries.length) io.out('nothing exited yet');
    else
      for (const e of entries) {
        io.out(`${e.at}  ${e.outcome.padEnd(7)} ${(e.id ?? e.sessionId.slice(0, 8)).padEnd(10)} ${e.kind ?? ''} ${e.taskId ? `task ${e.taskId}` : 'untasked'}  ${e.rssFreedBytes ? `freed ${formatBytes(e.rssFreedBytes)}` : ''}`);
        io.out(`    why: ${e.why}`);
        const lines = resumeLines(e);
        if (lines) io.out(`    resume: ${lines.shell}   or: ${lines.sunset}`);
      }
    return EXIT.ok;
  },
};
