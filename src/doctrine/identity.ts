// Which session does a person mean? Every verb and route that takes a session (verdict ID, exit, resume,
// /api/verdict/:id, /api/exit/:id) takes its short id, its sessionId, a unique prefix of either, or its
// name. Pure over plain rows. Running rows win over records of the same words (a person means the running one).
import { labelOf } from '../evidence/roster.js';

export interface Nameable {
  id?: string | null;
  sessionId: string;
  name?: string | null;
}

export type Resolved<T> = { kind: 'one'; row: T } | { kind: 'none' } | { kind: 'ambiguous'; matches: T[] };

/** A roster row that holds a process (live, or liveness unknown, or starting). */
export const holdsProcess = (s: { pid: number | null; live: boolean | null; starting?: boolean }) =>
  (s.pid !== null && s.live !== false) || Boolean(s.starting);

export function resolveSession<T extends Nameable>(
  rows: readonly T[],
  query: string,
  running: (r: T) => boolean = () => true,
): Resolved<T> {
  const q = query.trim();
  if (!q) return { kind: 'none' };
  const lower = q.toLowerCase();
  const exact = rows.filter((r) => r.id === q || r.sessionId === q || (typeof r.name === 'string' && r.name.toLowerCase() === lower));
  const matches = exact.length ? exact : rows.filter((r) => (typeof r.id === 'string' && r.id.startsWith(q)) || r.sessionId.startsWith(q));
  if (!matches.length) return { kind: 'none' };
  const live = matches.filter(running);
  const pool = live.length ? live : matches;
  // several rows of one session (a record beside its resumed process) are one session
  const sessions = new Map<string, T>();
  for (const r of pool) if (!sessions.has(r.sessionId)) sessions.set(r.sessionId, r);
  if (sessions.size === 1) return { kind: 'one', row: pool[0] };
  return { kind: 'ambiguous', matches: [...sessions.values()] };
}

/** One line per match, for an ambiguous query's message. */
export function describeMatches(matches: readonly Nameable[]): string {
  return matches
    .map(
      (m) =>
        `  ${labelOf({ id: m.id ?? null, sessionId: m.sessionId }).padEnd(10)} sessionId ${m.sessionId}${m.name ? `  name ${JSON.stringify(m.name)}` : ''}`,
    )
    .join('\n');
}

export function ambiguousMessage(query: string, matches: readonly Nameable[]): string {
  return `${JSON.stringify(query)} names ${matches.length} sessions; say which with a longer prefix, its sessionId or its short id:\n${describeMatches(matches)}`;
}
