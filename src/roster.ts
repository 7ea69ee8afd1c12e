// The roster: `claude agents --json --all` (argv from config). One call per sweep.
import { z } from 'zod';
import { run } from './run.js';

export type Kind = 'interactive' | 'background';
export type Status = 'busy' | 'waiting' | 'idle' | 'unknown';

export interface RosterRow {
  id: string;
  sessionId: string;
  kind: Kind | 'unknown';
  pid: number | null;
  state: string | null;
  status: Status;
  cwd: string | null;
  startedAt: string | null;
  /** A row's own word on attached clients, when it has one: true/false or a client count. */
  attached: boolean | null;
  /** The whole row as printed, unknown fields kept. */
  raw: Record<string, unknown>;
}

export type RosterResult = { ok: true; rows: RosterRow[]; problems: string[] } | { ok: false; error: string };

const rowSchema = z.looseObject({
  id: z.union([z.string(), z.number()]).transform(String),
  sessionId: z.string().nullish(),
  session_id: z.string().nullish(),
  kind: z.string().nullish(),
  pid: z.union([z.number(), z.string(), z.null()]).optional(),
  state: z.string().nullish(),
  status: z.string().nullish(),
  cwd: z.string().nullish(),
  startedAt: z.union([z.string(), z.number()]).nullish(),
  attached: z.union([z.boolean(), z.number()]).nullish(),
  clients: z.union([z.number(), z.array(z.unknown())]).nullish(),
});

const STATUSES = new Set(['busy', 'waiting', 'idle']);

/** Parse the roster's stdout: a JSON array of rows, or an object with an `agents` array. Pure. */
export function parseRoster(stdout: string): RosterResult {
  let data: unknown;
  try {
    data = JSON.parse(stdout);
  } catch (err: any) {
    return { ok: false, error: `roster output is not JSON: ${err.message}` };
  }
  const list = Array.isArray(data) ? data : (data as any)?.agents;
  if (!Array.isArray(list)) return { ok: false, error: 'roster output is neither a JSON array nor an object with an "agents" array' };
  const rows: RosterRow[] = [];
  const problems: string[] = [];
  list.forEach((item, i) => {
    const r = rowSchema.safeParse(item);
    if (!r.success) {
      problems.push(`roster row ${i} skipped: ${r.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`);
      return;
    }
    const v = r.data;
    const pid = v.pid === null || v.pid === undefined || v.pid === '' ? null : Number(v.pid);
    if (pid !== null && (!Number.isInteger(pid) || pid <= 0)) {
      problems.push(`roster row ${i} (${v.id}) has pid ${JSON.stringify(v.pid)}, which is not a process id: treated as a record`);
    }
    const kind = v.kind === 'interactive' || v.kind === 'background' ? v.kind : 'unknown';
    const status = v.status && STATUSES.has(v.status) ? (v.status as Status) : 'unknown';
    const startedAt = typeof v.startedAt === 'number' ? new Date(v.startedAt).toISOString() : (v.startedAt ?? null);
    let attached: boolean | null = null;
    if (typeof v.attached === 'boolean') attached = v.attached;
    else if (typeof v.attached === 'number') attached = v.attached > 0;
    else if (typeof v.clients === 'number') attached = v.clients > 0;
    else if (Array.isArray(v.clients)) attached = v.clients.length > 0;
    rows.push({
      id: v.id,
      sessionId: v.sessionId ?? v.session_id ?? v.id,
      kind,
      pid: pid !== null && Number.isInteger(pid) && pid > 0 ? pid : null,
      state: v.state ?? null,
      status,
      cwd: v.cwd ?? null,
      startedAt,
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
