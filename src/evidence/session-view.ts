// A sweep's last step: each row's verdict (the pure doctrine over its evidence) and what people read beside it,
// with its memory worked out only when something reads it.
import { labelOf } from './roster.js';
import { pidsRss } from './proc.js';
import { sessionPids } from './claude-code.js';
import { decide, type SessionFacts } from '../doctrine/verdict.js';
import { exitPathOf } from '../agents/index.js';
import type { Built, Sweep } from './row-evidence.js';
import type { SessionView } from './fleet.js';

/** A row's view: its verdict, and its memory's pids added to `counted` (every pid some session's memory holds). */
export function sessionView(s: Sweep, b: Built, counted: Set<number>): SessionView {
  const { row, evidence, starting } = b;
  const facts: SessionFacts = { id: row.id, sessionId: row.sessionId, kind: row.kind, pid: row.pid, evidence };
  if (starting) facts.starting = starting;
  if (row.agent) facts.agent = row.agent;
  const path = exitPathOf(row);
  facts.exit = path && { needsPane: path.needsPane, passesId: path.passesId };
  const d = decide(facts, s.policy, s.at);
  if (b.paneNotes.length) d.notes = [...d.notes, ...b.paneNotes];
  const v: SessionView = {
    id: facts.id,
    sessionId: facts.sessionId,
    kind: facts.kind,
    pid: facts.pid,
    evidence,
    verdict: d.verdict,
    reasons: d.reasons,
    next: d.next,
    notes: d.notes,
    row,
    label: labelOf(row),
    name: row.name,
    live: row.pid === null ? (starting ? null : false) : evidence.live,
    taskId: evidence.task?.id ?? null,
    taskState: evidence.task?.state ?? null,
    rssBytes: null,
    procStartMs: b.procStartMs,
  };
  if (starting) v.starting = starting;
  if (row.agent) v.agent = row.agent;
  if (d.due) v.due = d.due;
  if (b.reaper) v.claudeReaper = b.reaper;
  const pid = row.pid;
  if (pid !== null && evidence.live && s.opts.rss !== false && s.procs?.procs.has(pid)) {
    const pids = sessionPids(s.procs, pid, row.kind, s.cliNames);
    for (const p of pids) counted.add(p);
    // read when first asked for (an exit's priority, a report, the web): most of the schedule's sweeps never ask,
    // and reading each session's processes' statm was ~8 % of a 12-session sweep
    lazyField(v, 'rssBytes', () => pidsRss(pids));
  }
  return v;
}

/**
 * A field worked out when first read, then kept: a getter on the object itself, enumerable, so that a spread, a
 * JSON or a copy reads it as any field (a method, or a getter on a class, would change what they see). Assigning
 * the field replaces the getter with the value.
 */
export function lazyField<T extends object, K extends keyof T>(obj: T, key: K, compute: () => T[K]): void {
  let memo: { value: T[K] } | undefined;
  Object.defineProperty(obj, key, {
    enumerable: true,
    configurable: true,
    get: () => (memo ??= { value: compute() }).value,
    set: (value: T[K]) => Object.defineProperty(obj, key, { value, enumerable: true, configurable: true, writable: true }),
  });
}
