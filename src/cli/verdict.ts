import { gatherFleet, snapshotJson, type SessionView } from '../evidence/fleet.js';
import { agentViewLines } from '../evidence/agent-view.js';
import { REASONS } from '../doctrine/verdict.js';
import { claudeVersion, versionNote } from '../evidence/claude-code.js';
import { unreadableMessage } from '../doctrine/unreadable.js';
import { unreadableAlarm } from '../pipeline/unreadable-watch.js';
import { formatDuration } from '../duration.js';
import { formatBytes } from '../report/report.js';
import { chainReaders } from '../pipeline/chain-kinds/index.js';
import { EXIT, config, type Command } from './common.js';
import { dueWords } from './verdict-words.js';
import { ambiguousMessage, holdsProcess, resolveSession } from '../doctrine/identity.js';

export const verdictCommand: Command = {
  name: 'verdict',
  summary: 'may this session leave now? (read-only)',
  usage: `usage: sunset verdict [ID] [--json] [--config FILE]

Judges every roster row (or the session ID names: its short id, its sessionId, a unique
prefix of either, or its name) with the one verdict and prints it. Writes nothing. Problems (invalid task files, failed probes) go to stderr.

Exit codes: 0 = printed (with ID: that session is eligible), 3 = ID is not eligible (or
names no session), 1 = the roster probe failed, 2 = bad usage or config, or ID names
several sessions (they are listed).`,
  options: { json: { type: 'boolean' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length > 1) throw new (await import('./common.js')).UsageError(`verdict takes at most one ID\n\n${this.usage}`);
    const cfg = config(values, io);
    const [snap, note] = await Promise.all([
      gatherFleet(cfg, { roster: 'cli', ...chainReaders(cfg) }),
      versionNote(cfg.fleet.claudeCommand, cfg.probeTimeout),
    ]);
    if (note && snap.roster.ok) io.err(`sunset: ${note}`);
    const unreadable = await unreadableField(snap, cfg);
    for (const p of snap.problems) io.err(`sunset: ${p}`);
    const id = positionals[0];
    const found = id === undefined ? null : resolveSession(snap.sessions, id, holdsProcess);
    if (found?.kind === 'ambiguous') {
      io.err(`sunset verdict: ${ambiguousMessage(id!, found.matches)}`);
      if (values.json)
        io.out(
          JSON.stringify(
            {
              ...snapshotJson({ ...snap, sessions: found.matches }),
              claudeCodeUnreadable: unreadable,
              error: `${JSON.stringify(id)} names ${found.matches.length} sessions`,
            },
            null,
            2,
          ),
        );
      return EXIT.usage;
    }
    // every row of the one session named (a record beside its resumed process), so `verdict ID` shows both
    const chosen =
      id === undefined ? snap.sessions : found?.kind === 'one' ? snap.sessions.filter((s) => s.sessionId === found.row.sessionId) : [];
    if (values.json) {
      const j = snapshotJson({ ...snap, sessions: chosen });
      const unknown =
        snap.roster.ok && id !== undefined && !chosen.length
          ? { error: `no session is named ${JSON.stringify(id)} (by short id, sessionId, a prefix of either, or name)` }
          : {};
      if ('error' in unknown) io.err(`sunset: ${unknown.error} (not eligible: exit 3)`);
      io.out(JSON.stringify({ ...j, claudeCodeUnreadable: unreadable, ...unknown }, null, 2));
    } else if (!snap.roster.ok) {
      io.err(`sunset: nothing is eligible: the roster probe failed`);
    } else {
      if (id !== undefined && !chosen.length)
        io.err(
          `sunset: no session is named ${JSON.stringify(id)} (by short id, sessionId, a prefix of either, or name) (not eligible: exit 3)`,
        );
      for (const s of chosen) io.out(line(s));
      if (id === undefined) io.out([summary(snap.sessions), ...agentViewLines(snap.agentViewsOpen)].join('\n'));
      if (unreadable) io.out(unreadableLines(unreadable).join('\n'));
    }
    if (!snap.roster.ok) return EXIT.failure;
    if (id !== undefined) return chosen.some((s) => s.verdict === 'eligible') ? EXIT.ok : EXIT.protected;
    return EXIT.ok;
  },
};

function line(s: SessionView): string {
  // an agent CLI beside Claude Code shows its name where Claude Code's sessions show their kind (all its are interactive)
  const head = `${s.label.padEnd(10)} ${String(s.agent ?? s.kind).padEnd(11)} pid ${String(s.pid ?? '-').padEnd(7)} ${s.verdict.padEnd(9)}`;
  const task = (s.name ? ` "${s.name}"` : '') + (s.taskId ? ` task ${s.taskId} (${s.taskState})` : '');
  if (s.verdict === 'record') return `${head} a roster record with no process`;
  if (s.verdict === 'gone') return `${head} its process has ended${task}`;
  const ev = s.evidence;
  const facts = ` silent ${formatDuration(ev.silenceMs)}, ${formatBytes(s.rssBytes)}`;
  const notes = s.notes.length ? `\n${' '.repeat(11)}${s.notes.join(`\n${' '.repeat(11)}`)}` : '';
  if (s.verdict === 'protected')
    return `${head}${task}${facts}\n${' '.repeat(11)}${s.reasons.map((r) => `${r}: ${REASONS[r]}`).join(`\n${' '.repeat(11)}`)}${notes}\n${' '.repeat(11)}${dueWords(s)}`;
  const n = s.next!;
  return `${head}${task}${facts}\n${' '.repeat(11)}next: ${n.step}${n.n ? ` #${n.n}` : ''}${n.at ? ` at ${n.at}` : ''}`;
}

function summary(list: SessionView[]): string {
  const c: Record<string, number> = {};
  for (const s of list) c[s.verdict] = (c[s.verdict] ?? 0) + 1;
  return `${list.length ? '\n' : ''}${list.length} roster rows: ${['eligible', 'protected', 'gone', 'record'].map((v) => `${c[v] ?? 0} ${v}`).join(', ')}`;
}

/**
 * The fleet-level field `claudeCodeUnreadable`: what this sweep found of Claude Code's files that do not read as
 * sunset knows them, with the CLI's version and the alarm `sunset up` raised for it (null until it has); null when they read.
 */
async function unreadableField(snap: Awaited<ReturnType<typeof gatherFleet>>, cfg: ReturnType<typeof config>) {
  const f = snap.claudeFiles?.unreadable;
  if (!f) return null;
  const version = await claudeVersion(cfg.fleet.claudeCommand, cfg.probeTimeout);
  return { ...f, version, message: unreadableMessage(f, version), alarm: unreadableAlarm(cfg.stateDir) };
}

function unreadableLines(u: NonNullable<Awaited<ReturnType<typeof unreadableField>>>): string[] {
  const alarm = u.alarm
    ? `alarm ${u.alarm.id} (claude-code-unreadable) raised ${u.alarm.raisedAt}: sunset alarms lists it`
    : 'no alarm yet: `sunset up` raises one once this has lasted windows.unreadableFor';
  return ['', `claude-code-unreadable: ${u.message}`, alarm];
}
