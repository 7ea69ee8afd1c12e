import { gatherFleet, snapshotJson, type SessionView } from '../fleet.js';
import { REASONS } from '../verdict.js';
import { formatDuration } from '../duration.js';
import { formatBytes } from '../report.js';
import { expireFactsReader } from '../expire-state.js';
import { EXIT, config, type Command } from './common.js';

export const verdictCommand: Command = {
  name: 'verdict',
  summary: 'may this session leave now? (read-only)',
  usage: `usage: sunset verdict [ID] [--json] [--config FILE]

Judges every roster row (or the one whose id or sessionId is ID) with the one verdict
and prints it. Writes nothing. Problems (invalid task files, failed probes) go to stderr.

Exit codes: 0 = printed (with ID: that session is eligible), 3 = ID is not eligible,
1 = the roster probe failed, 2 = bad usage or config.`,
  options: { json: { type: 'boolean' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length > 1) throw new (await import('./common.js')).UsageError(`verdict takes at most one ID\n\n${this.usage}`);
    const cfg = config(values, io);
    const snap = await gatherFleet(cfg, { expireFacts: expireFactsReader(cfg.stateDir) });
    for (const p of snap.problems) io.err(`sunset: ${p}`);
    const id = positionals[0];
    const chosen = id === undefined ? snap.sessions : snap.sessions.filter((s) => s.id === id || s.sessionId === id);
    if (values.json) {
      const j = snapshotJson({ ...snap, sessions: chosen });
      const unknown = snap.roster.ok && id !== undefined && !chosen.length ? { error: `no roster row has id or sessionId ${JSON.stringify(id)}` } : {};
      if ('error' in unknown) io.err(`sunset: ${unknown.error} (not eligible: exit 3)`);
      io.out(JSON.stringify({ ...j, ...unknown }, null, 2));
    } else if (!snap.roster.ok) {
      io.err(`sunset: nothing is eligible: the roster probe failed`);
    } else {
      if (id !== undefined && !chosen.length) io.err(`sunset: no roster row has id or sessionId ${JSON.stringify(id)} (not eligible: exit 3)`);
      for (const s of chosen) io.out(line(s));
      if (id === undefined) io.out(summary(snap.sessions));
    }
    if (!snap.roster.ok) return EXIT.failure;
    if (id !== undefined) return chosen.some((s) => s.verdict === 'eligible') ? EXIT.ok : EXIT.protected;
    return EXIT.ok;
  },
};

function line(s: SessionView): string {
  const head = `${s.id.padEnd(10)} ${String(s.kind).padEnd(11)} pid ${String(s.pid ?? '-').padEnd(7)} ${s.verdict.padEnd(9)}`;
  const task = s.taskId ? ` task ${s.taskId} (${s.taskState})` : '';
  if (s.verdict === 'record') return `${head} a roster record with no process`;
  if (s.verdict === 'gone') return `${head} its process has ended${task}`;
  const ev = s.evidence;
  const facts = ` silent ${formatDuration(ev.silenceMs)}, ${formatBytes(s.rssBytes)}`;
  if (s.verdict === 'protected') return `${head}${task}${facts}\n${' '.repeat(11)}${s.reasons.map((r) => `${r}: ${REASONS[r]}`).join('\n' + ' '.repeat(11))}`;
  const n = s.next!;
  return `${head}${task}${facts}\n${' '.repeat(11)}next: ${n.step}${n.n ? ` #${n.n}` : ''}${n.at ? ` at ${n.at}` : ''}`;
}

function summary(list: SessionView[]): string {
  const c: Record<string, number> = {};
  for (const s of list) c[s.verdict] = (c[s.verdict] ?? 0) + 1;
  return `\n${list.length} roster rows: ${['eligible', 'protected', 'gone', 'record'].map((v) => `${c[v] ?? 0} ${v}`).join(', ')}`;
}
