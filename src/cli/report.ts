import { gatherFleet } from '../evidence/fleet.js';
import { agentViewLines } from '../evidence/agent-view.js';
import { buildReport, formatBytes, LANES, type Report } from '../report/report.js';
import { formatDuration } from '../duration.js';
import { memAvailable, underPressure } from '../evidence/meminfo.js';
import { EXIT, config, type Command } from './common.js';

export const reportCommand: Command = {
  name: 'report',
  summary: 'what the fleet holds: rows, tasks, memory by lane, lanes awaiting a human',
  usage: `usage: sunset report [--json] [--config FILE]

Roster rows (live sessions, records), tasks by state, the memory live sessions hold by
their task's lane (awaiting-human, active, finished, untasked) with each lane's share,
and the lanes awaiting a human, oldest first. It reports; it never acts (D10).

Exit codes: 0 = printed, 1 = the roster probe failed, 2 = bad usage or config.`,
  options: { json: { type: 'boolean' } },
  async run({ values }, io) {
    const cfg = config(values, io);
    const snap = await gatherFleet(cfg);
    const available = memAvailable(cfg.meminfoPath);
    const r = buildReport(snap, {
      availableBytes: available,
      pressure: underPressure(cfg.memoryFloorMB === null ? null : cfg.memoryFloorMB * 1024 * 1024, available),
    });
    if (values.json) io.out(JSON.stringify(r, null, 2));
    else io.out(formatReport(r));
    // a failed roster is said in the report itself; the other problems on stderr
    for (const p of snap.problems) if (values.json || snap.roster.ok || p !== snap.roster.error) io.err(`sunset: ${p}`);
    return snap.roster.ok ? EXIT.ok : EXIT.failure;
  },
};

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function formatReport(r: Report): string {
  const out: string[] = [];
  out.push(`sunset report — ${r.host}, ${r.at}`);
  if (!r.roster.ok) return formatFailedReport(r, out);
  out.push(
    `roster: ${count(r.roster.rows, 'row')} — ${count(r.roster.live, 'live session')}, ${count(r.roster.records, 'record')} (no pid), ${r.roster.gone} gone`,
  );
  out.push(
    `tasks: ${r.tasks.total}${r.tasks.invalid ? ` (+${r.tasks.invalid} invalid)` : ''} — ${
      Object.entries(r.tasks.byState)
        .sort((a, b) => b[1] - a[1])
        .map(([s, n]) => `${n} ${s}`)
        .join(', ') || 'none'
    }`,
  );
  out.push(`memory held by live sessions: ${formatBytes(r.memory.totalBytes)}`);
  const o = r.memory.overhead;
  if (o?.bytes) {
    const parts = (
      [
        ['daemon', 'daemon'],
        ['spare', 'warm spares'],
        ['clients', "people's clients"],
        ['other', 'other Claude Code processes'],
      ] as const
    )
      .filter(([k]) => o.byKind[k].processes)
      .map(([k, words]) => `${words} ${formatBytes(o.byKind[k].bytes)}`);
    out.push(
      `  + fleet overhead ${formatBytes(o.bytes)} (${parts.join(', ')}) = ${formatBytes(r.memory.fleetBytes)} held by Claude Code on this box`,
    );
  }
  out.push(...agentViewLines(r.agentViewsOpen));
  // the other reaper, in view: what Claude Code's own daemon would retire, and when
  const cc = r.claudeReaper ?? [];
  // (said only where Claude Code sessions run: a box of other agent CLIs has no such reaper)
  const agentNames = Object.keys(r.memory.byAgent ?? {});
  if (cc.length || !agentNames.length || agentNames.includes('claude-code'))
    out.push(
      `Claude Code's own reaper would retire: ${cc.length ? `${cc.length} background session${cc.length === 1 ? '' : 's'}, next ${cc[0].label} at ${cc[0].at.replace('T', ' ').slice(0, 19)} UTC (${cc[0].why})` : 'none (each is attached, pinned, busy or has work in flight)'}`,
    );
  for (const x of cc.slice(1, 5))
    out.push(`  ${x.label.padEnd(10)} at ${x.at.replace('T', ' ').slice(0, 19)} UTC${x.taskState ? `  task ${x.taskState}` : ''}`);
  for (const l of LANES) {
    const m = r.memory.byLane[l];
    out.push(
      `  ${l.padEnd(15)} ${String(m.sessions).padStart(4)} session${m.sessions === 1 ? ' ' : 's'} ${formatBytes(m.bytes).padStart(9)}  ${(m.share * 100).toFixed(0).padStart(3)} %`,
    );
  }
  const agents = Object.entries(r.memory.byAgent ?? {});
  if (agents.length > 1 || (agents.length === 1 && agents[0][0] !== 'claude-code'))
    out.push(`by agent CLI: ${agents.map(([a, m]) => `${a} ${count(m.sessions, 'session')} ${formatBytes(m.bytes)}`).join(', ')}`);
  const e = r.memory.eligible;
  out.push(
    `eligible to leave now: ${count(e.sessions, 'session')}, would give back ${formatBytes(e.bytes)}; MemAvailable ${formatBytes(r.memory.availableBytes)}${r.memory.pressure ? ' — UNDER the floor: exits go largest first' : ''}`,
  );
  const ah = r.awaitingHuman;
  const held = ah.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  out.push(
    `lanes awaiting a human: ${ah.length}${ah.length ? `, holding ${formatBytes(held)}${r.memory.totalBytes ? ` (${((held / r.memory.totalBytes) * 100).toFixed(0)} % of the fleet)` : ''} — a person's decision; sunset does not act on them` : ''}`,
  );
  for (const x of ah) {
    out.push(
      `  ${x.taskId.padEnd(24)} waiting ${formatDuration(x.waitedMs).padEnd(8)} (since ${x.waitingSince}, from ${x.waitingSinceFrom})  ${x.live ? formatBytes(x.rssBytes) : 'no live session'}`,
    );
  }
  return out.join('\n');
}

/** The roster did not answer: say so, and only what is known without it — never a report of zeros. */
function formatFailedReport(r: Report, out: string[]): string {
  out.push(`the roster probe FAILED: ${r.roster.error}`);
  out.push(
    `so the sessions, the memory they hold, their lanes and which may leave are unknown (not zero); nothing is asked or exited until it answers`,
  );
  out.push(`what is known without it:`);
  out.push(
    `  tasks: ${r.tasks.total}${r.tasks.invalid ? ` (+${r.tasks.invalid} invalid)` : ''} — ${
      Object.entries(r.tasks.byState)
        .sort((a, b) => b[1] - a[1])
        .map(([s, n]) => `${n} ${s}`)
        .join(', ') || 'none'
    }`,
  );
  if (r.memory.availableBytes !== null)
    out.push(`  MemAvailable ${formatBytes(r.memory.availableBytes)}${r.memory.pressure ? ' — UNDER the floor' : ''}`);
  const ah = r.awaitingHuman;
  out.push(
    `  lanes awaiting a human (from their task files): ${ah.length}${ah.length ? ' — which sessions hold them, and how much memory, is unknown' : ''}`,
  );
  for (const x of ah)
    out.push(
      `    ${x.taskId.padEnd(24)} waiting ${formatDuration(x.waitedMs).padEnd(8)} (since ${x.waitingSince}, from ${x.waitingSinceFrom})`,
    );
  return out.join('\n');
}
