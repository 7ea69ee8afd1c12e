// The roster: `claude agents --json --all` (argv from config). One call per sweep.
// The real CLI (2.1.x, docs/claude-code.md) prints background rows with a short `id` (what `claude stop`
// takes) and interactive rows with none: a session's key is its `sessionId`, and `id` is null where the
// row has none. `startedAt` is epoch milliseconds there (an ISO string from other rosters).
import { z } from 'zod';
import { run } from '../run.js';
import { errorMessage } from '../errors.js';

export type Kind = 'interactive' | 'background';
export type Status = 'busy' | 'waiting' | 'idle' | 'unknown';

export interface RosterRow {
  /** The short id `claude stop` takes: background rows only; null for interactive rows, which carry none. */
  id: string | null;
  /** The session's key (a UUID on the real CLI); a row with no sessionId is keyed by its id. */
  sessionId: string;
  /** The session's name (`claude attach <name>` takes it), when the row has one. */
  name: string | null;
  kind: Kind | 'unknown';
  pid: number | null;
  /** The background job's state (working, blocked, done, failed, stopped); null when the row has none. */
  state: string | null;
  status: Status;
  /** With status `waiting`: what it waits for (permission prompt, input needed, dialog open). */
  waitingFor: string | null;
  cwd: string | null;
  startedAt: string | null;
  /** A row's own word on attached clients, when it has one: true/false or a client count. */
  attached: boolean | null;
  /** The whole row as printed, unknown fields kept. */
  raw: Record<string, unknown>;
  /** The agent CLI that runs it (src/agents/clis.ts: 'codex', 'gemini'); absent = Claude Code. */
  agent?: string;
  /** An agent CLI's session: the transcript its discovery tied it to (Claude Code's are found under projectsDir). */
  transcript?: { path: string; mtimeMs: number };
}

export type RosterResult = { ok: true; rows: RosterRow[]; problems: string[] } | { ok: false; error: string };

const idLike = z.union([z.string(), z.number()]).transform(String);
const rowSchema = z.looseObject({
  id: idLike.nullish(),
  sessionId: z.string().nullish(),
  session_id: z.string().nullish(),
  name: z.string().nullish(),
  kind: z.string().nullish(),
  pid: z.union([z.number(), z.string(), z.null()]).optional(),
  state: z.string().nullish(),
  status: z.string().nullish(),
  waitingFor: z.string().nullish(),
  cwd: z.string().nullish(),
  startedAt: z.union([z.string(), z.number()]).nullish(),
  attached: z.union([z.boolean(), z.number()]).nullish(),
  clients: z.union([z.number(), z.array(z.unknown())]).nullish(),
});

const STATUSES = new Set(['busy', 'waiting', 'idle']);

/** Epoch ms (the real CLI), epoch seconds, or an ISO string → ISO; anything else → null. */
function startedAtIso(v: string | number | null | undefined): string | null {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v <= 0) return null;
    const ms = v < 1e11 ? v * 1000 : v; // seconds until the year 5138
    return new Date(ms).toISOString();
  }
  return Number.isFinite(Date.parse(v)) ? v : null;
}

/** Parse the roster's stdout: a JSON array of rows, or an object with an `agents` array. Pure. */
export function parseRoster(stdout: string): RosterResult {
  let data: unknown;
  try {
    data = JSON.parse(stdout);
  } catch (err) {
    return { ok: false, error: `roster output is not JSON: ${errorMessage(err)}` };
  }
  const list = Array.isArray(data) ? data : (data as { agents?: unknown } | null)?.agents;
  if (!Array.isArray(list)) return { ok: false, error: 'roster output is neither a JSON array nor an object with an "agents" array' };
  return parseRosterRows(list);
}

/** The rows of a roster, each checked by the one row schema (the CLI's, parsed; or the file roster's, built in memory). */
export function parseRosterRows(list: readonly unknown[]): RosterResult {
  const rows: RosterRow[] = [];
  const problems: string[] = [];
  list.forEach((item, i) => {
    const r = rowSchema.safeParse(item);
    if (!r.success) {
      problems.push(`roster row ${i} skipped: ${r.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`);
      return;
    }
    const v = r.data;
    const id = v.id === null || v.id === undefined || v.id === '' ? null : v.id;
    const sessionId = v.sessionId || v.session_id || id;
    if (!sessionId) {
      problems.push(`roster row ${i} skipped: it has neither a sessionId nor an id, so nothing can name it`);
      return;
    }
    const label = id ?? sessionId;
    const pid = v.pid === null || v.pid === undefined || v.pid === '' ? null : Number(v.pid);
    if (pid !== null && (!Number.isInteger(pid) || pid <= 0)) {
      problems.push(`roster row ${i} (${label}) has pid ${JSON.stringify(v.pid)}, which is not a process id: treated as a record`);
    }
    const kind = v.kind === 'interactive' || v.kind === 'background' ? v.kind : 'unknown';
    const status = v.status && STATUSES.has(v.status) ? (v.status as Status) : 'unknown';
    let attached: boolean | null = null;
    if (typeof v.attached === 'boolean') attached = v.attached;
    else if (typeof v.attached === 'number') attached = v.attached > 0;
    else if (typeof v.clients === 'number') attached = v.clients > 0;
    else if (Array.isArray(v.clients)) attached = v.clients.length > 0;
    rows.push({
      id,
      sessionId,
      name: v.name ? v.name : null,
      kind,
      pid: pid !== null && Number.isInteger(pid) && pid > 0 ? pid : null,
      state: v.state ?? null,
      status,
      waitingFor: v.waitingFor ?? null,
      cwd: v.cwd ?? null,
      startedAt: startedAtIso(v.startedAt),
      attached,
      raw: item as Record<string, unknown>,
    });
  });
  return { ok: true, rows, problems };
}

export async function readRoster(argv: readonly string[], timeoutMs: number): Promise<RosterResult> {
  const r = await run(argv, { timeoutMs });
  if (!r.ok) {
    const detail = r.stderr.trim().split('\n').slice(-1)[0];
    return { ok: false, error: `roster command ${JSON.stringify(argv.join(' '))} failed: ${r.error}${detail ? ` (${detail})` : ''}` };
  }
  return parseRoster(r.stdout);
}

/** What people read for a session: its short id, else the first 8 characters of its sessionId. */
export function labelOf(s: { id: string | null; sessionId: string }): string {
  return s.id ?? s.sessionId.slice(0, 8);
}
