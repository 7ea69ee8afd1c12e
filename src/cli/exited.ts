import { existsSync } from 'node:fs';
import { Alarms } from '../store/alarms.js';
import { entryJson, keptSummary, loadResumeEntries, lookupExited, resumeLines, type ResumeEntry } from '../report/resume.js';
import { formatBytes } from '../report/report.js';
import { ambiguousMessage } from '../doctrine/identity.js';
import { forgetKept } from '../store/kept.js';
import { EXIT, UsageError, config, type Command, type Io } from './common.js';
import type { Config } from '../config.js';

/** Where it resumes from, and its kept copy: `kept copy (1.2 MB, 310 KB kept)`, `transcript; a copy is kept (…)`, `gone`. */
export function resumableWords(e: Pick<ResumeEntry, 'resumeFrom' | 'kept'>): string {
  const copy = e.kept ? `${formatBytes(e.kept.gzBytes)} kept${e.kept.until ? ` until ${e.kept.until.slice(0, 10)}` : ''}` : null;
  if (e.resumeFrom === 'gone') return 'gone: Claude Code deleted its transcript and no copy is kept';
  if (e.resumeFrom === 'kept copy') return `from sunset's kept copy (${copy}): Claude Code deleted its transcript`;
  if (e.resumeFrom === 'transcript') return `from its transcript${copy ? `; a copy is kept (${copy})` : '; no copy kept'}`;
  return 'unknown: the projects folder cannot be read';
}

export const exitedCommand: Command = {
  name: 'exited',
  summary: 'the resume ledger: sessions sunset exited (or gave up on), and how to bring each back',
  usage: `usage: sunset exited [--json [--array]] [--config FILE]
       sunset exited --forget TASK|SESSION [--json] [--config FILE]

Every session sunset exited — task, session id, cwd, kind, when, why, memory freed, the
command that resumes it, and whether it can still be resumed and from where: its
transcript, sunset's kept copy (Claude Code deleted the transcript), or gone — and every
one it gave up on, newest first. \`sunset resume ID\` brings one back (through the cap). Only
the commands that work are offered: from the kept copy, \`sunset resume\` alone (it puts the
copy back first); gone, none.
--json prints { "entries": [ … ], "kept": { copies, gzBytes, maxMB, keepDays, keep } }
(GET /api/exited); --array the bare list (older scripts). An entry's "resume" (the raw argv)
is [] once the transcript is gone; "sunsetResume" is null when nothing resumes it.

--forget lets the kept copy of one session's transcript go (resume.keepDays lets copies go
by themselves; null keeps them until forgotten). The entry stays in the ledger.
Exit codes: 0, 2 unknown or ambiguous id.`,
  options: { json: { type: 'boolean' }, array: { type: 'boolean' }, forget: { type: 'string' } },
  async run({ values }, io) {
    if (values.array && !values.json) throw new UsageError(`--array goes with --json\n\n${this.usage}`);
    if (values.forget !== undefined && values.array) throw new UsageError(`--array does not go with --forget\n\n${this.usage}`);
    const cfg = config(values, io);
    const entries = loadResumeEntries(cfg, new Alarms(cfg).list());
    if (values.forget !== undefined) return forget(cfg, entries, values.forget as string, Boolean(values.json), io);
    if (!existsSync(cfg.stateDir))
      io.err(`sunset exited: stateDir ${cfg.stateDir} does not exist (nothing has run with this config yet, or the path is wrong)`);
    if (values.json)
      io.out(JSON.stringify(values.array ? entries.map(entryJson) : { entries: entries.map(entryJson), kept: keptSummary(cfg) }, null, 2));
    else if (!entries.length) io.out('nothing exited yet');
    else {
      for (const e of entries) {
        io.out(
          `${e.at}  ${e.outcome.padEnd(7)} ${(e.id ?? e.sessionId.slice(0, 8)).padEnd(10)} ${e.agent && e.agent !== 'claude-code' ? e.agent : (e.kind ?? '')} ${e.taskId ? `task ${e.taskId}` : 'untasked'}  ${e.rssFreedBytes ? `freed ${formatBytes(e.rssFreedBytes)}` : ''}`,
        );
        io.out(`    why: ${e.why}`);
        if (e.outcome === 'exited') io.out(`    resumable: ${resumableWords(e)}`);
        const lines = resumeLines(e);
        if (lines?.shell) io.out(`    resume: ${lines.shell}   or: ${lines.sunset}`);
        else if (lines) io.out(`    resume: ${lines.sunset}   (puts sunset's kept copy of the transcript back first)`);
        else if (e.outcome === 'exited' && e.resumeFrom === 'gone') io.out('    resume: none — it cannot be resumed');
      }
      const k = keptSummary(cfg);
      io.out(
        `kept copies: ${k.copies}, ${formatBytes(k.gzBytes)} of resume.maxMB ${k.maxMB} MB; ${k.keep ? (k.keepDays === null ? 'each kept until forgotten (sunset exited --forget ID)' : `each kept ${k.keepDays} days`) : 'no new copies (resume.keep is false)'}`,
      );
    }
    return EXIT.ok;
  },
};

function forget(cfg: Config, entries: ResumeEntry[], key: string, json: boolean, io: Io): number {
  if (!key) throw new UsageError(`--forget takes a TASK or SESSION id`);
  const found = lookupExited(entries, key);
  if (found.kind === 'ambiguous') {
    io.err(`sunset exited: ${ambiguousMessage(key, found.matches)}`);
    return EXIT.usage;
  }
  if (found.kind === 'none') {
    io.err(`sunset exited: nothing in the resume ledger for ${JSON.stringify(key)} (see \`sunset exited\`)`);
    return EXIT.usage;
  }
  const e = found.row;
  const meta = forgetKept(cfg.stateDir, e.sessionId);
  const resumeFrom = e.resumeFrom === 'kept copy' ? 'gone' : e.resumeFrom;
  if (json)
    io.out(
      JSON.stringify(
        { sessionId: e.sessionId, forgotten: meta ? { gzBytes: meta.gzBytes, keptAt: meta.keptAt } : null, resumeFrom },
        null,
        2,
      ),
    );
  else if (!meta) io.out(`no kept copy of ${e.id ?? e.sessionId}'s transcript: nothing to forget`);
  else
    io.out(
      `let the kept copy of ${e.id ?? e.sessionId}'s transcript go (${formatBytes(meta.gzBytes)}); ${resumeFrom === 'gone' ? 'it can no longer be resumed' : 'it resumes from its transcript while Claude Code keeps it'}`,
    );
  return EXIT.ok;
}
