// Codex CLI's transcripts ("rollouts"), read as little as a sweep needs: $CODEX_HOME/sessions/YYYY/MM/DD/
// rollout-<local start>-<session id>.jsonl, the first line a session_meta naming the session, its cwd and when the
// thread was created; a turn in flight is a task_started with no task_complete or turn_aborted after it (0.171.0,
// measured: docs/agents/codex.md). A box keeps months of them: only the day folders a sweep needs are listed, a
// file's first line is read once (it never changes), and of a growing file only its tail. Internal formats: a
// field that is missing or odd is unknown, never a guess.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readFirstLine, readTail } from './file-reads.js';

/** What a rollout's first line says. */
export interface RolloutHead {
  path: string;
  sessionId: string;
  cwd: string;
  /** When the thread was created (session_meta.payload.timestamp), ms. */
  createdMs: number;
  /** Who started it: 'codex-tui' for the TUI, 'codex_exec' for `codex exec`; null when not said. */
  originator: string | null;
}

const NAME = /^rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$/;
const DAY = /^\d{4}\/\d{2}\/\d{2}$/;

const metaLine = z.object({
  type: z.literal('session_meta'),
  payload: z.object({
    id: z.string().min(1),
    cwd: z.string().min(1),
    timestamp: z.string(),
    originator: z.string().optional(),
  }),
});

const eventLine = z.object({ type: z.literal('event_msg'), payload: z.object({ type: z.string() }) });

/** Parse a rollout's first line; null when it is not a session_meta with an id, a cwd and a time. */
export function parseHead(path: string, line: string): RolloutHead | null {
  let j: unknown;
  try {
    j = JSON.parse(line);
  } catch {
    return null;
  }
  const m = metaLine.safeParse(j);
  if (!m.success) return null;
  const createdMs = Date.parse(m.data.payload.timestamp);
  if (!Number.isFinite(createdMs)) return null;
  const p = m.data.payload;
  return { path, sessionId: p.id, cwd: p.cwd, createdMs, originator: p.originator ?? null };
}

/**
 * A turn in flight, from the last lines of a rollout (oldest first): the last of task_started / task_complete /
 * turn_aborted decides. null when none is among them (cannot be told). Lines that do not parse (one being written)
 * are passed over.
 */
export function turnInFlightOf(lines: string[]): boolean | null {
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].includes('"event_msg"')) continue;
    let j: unknown;
    try {
      j = JSON.parse(lines[i]);
    } catch {
      continue;
    }
    const e = eventLine.safeParse(j);
    if (!e.success) continue;
    if (e.data.payload.type === 'task_started') return true;
    if (e.data.payload.type === 'task_complete' || e.data.payload.type === 'turn_aborted') return false;
  }
  return null;
}

/** The local date folder (YYYY/MM/DD) of a time: rollouts are filed by their local start. */
export function dayOf(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())}`;
}

const list = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

const HEAD_MAX = 1 << 20; // a first line carries the base instructions: tens of KiB; past 1 MiB it is not read
const TAIL_STEPS = [64 << 10, 1 << 20, 4 << 20];
const KEEP = 20_000;

/** Reads one CODEX_HOME's rollouts, remembering what does not change (first lines, where an id's file is). */
export class Rollouts {
  private readonly heads = new Map<string, RolloutHead | null>();
  private readonly byId = new Map<string, string>();
  private readonly tails = new Map<string, { size: number; mtimeMs: number; inFlight: boolean | null }>();

  constructor(readonly home: string) {}

  private get root(): string {
    return join(this.home, 'sessions');
  }

  /** Every day folder (YYYY/MM/DD), oldest first. Listing only: three levels of small folders. */
  days(): string[] {
    const out: string[] = [];
    for (const y of list(this.root).sort())
      for (const m of list(join(this.root, y)).sort())
        for (const d of list(join(this.root, y, m)).sort()) if (DAY.test(`${y}/${m}/${d}`)) out.push(`${y}/${m}/${d}`);
    return out;
  }

  /** The heads of every rollout filed from day `from` on (YYYY/MM/DD), with the files that could not be read. */
  headsSince(from: string): { heads: RolloutHead[]; unreadable: string[] } {
    const heads: RolloutHead[] = [];
    const unreadable: string[] = [];
    for (const day of this.days()) {
      if (day < from) continue;
      const dir = join(this.root, day);
      for (const name of list(dir)) {
        if (!NAME.test(name)) continue;
        const h = this.head(join(dir, name));
        if (h) heads.push(h);
        else unreadable.push(join(dir, name));
      }
    }
    return { heads, unreadable };
  }

  /** The rollout of a session id (its id is in the file name), searched newest day first; null when none. */
  findById(id: string): RolloutHead | null {
    const known = this.byId.get(id);
    if (known) {
      const h = this.head(known);
      if (h?.sessionId === id) return h;
      this.byId.delete(id);
    }
    for (const day of this.days().reverse()) {
      const dir = join(this.root, day);
      const name = list(dir).find((n) => NAME.exec(n)?.[1].toLowerCase() === id.toLowerCase());
      if (!name) continue;
      const h = this.head(join(dir, name));
      if (h?.sessionId !== id) return null;
      if (this.byId.size > KEEP) this.byId.clear();
      this.byId.set(id, h.path);
      return h;
    }
    return null;
  }

  /** A file's first line, parsed; read once per path (a first line is written once). null = unreadable or odd. */
  head(path: string): RolloutHead | null {
    if (this.heads.has(path)) return this.heads.get(path) ?? null;
    const line = readFirstLine(path, HEAD_MAX);
    const h = line === null ? null : parseHead(path, line);
    // an empty or half-written first line may still be completed: only a whole line is remembered
    if (line !== null) {
      if (this.heads.size > KEEP) this.heads.clear();
      this.heads.set(path, h);
    }
    return h;
  }

  /** Its size and mtime, and whether a turn is in flight by its tail (null: cannot be told); null when it cannot be read. */
  look(path: string): { mtimeMs: number; turnInFlight: boolean | null } | null {
    let st: { size: number; mtimeMs: number };
    try {
      st = statSync(path);
    } catch {
      return null;
    }
    const hit = this.tails.get(path);
    if (hit && hit.size === st.size && hit.mtimeMs === st.mtimeMs) return { mtimeMs: st.mtimeMs, turnInFlight: hit.inFlight };
    let inFlight: boolean | null = null;
    for (const step of TAIL_STEPS) {
      const tail = readTail(path, step);
      if (tail === null) break;
      inFlight = turnInFlightOf(tail.text.split('\n'));
      if (inFlight !== null || tail.whole) break;
    }
    if (this.tails.size > KEEP) this.tails.clear();
    this.tails.set(path, { size: st.size, mtimeMs: st.mtimeMs, inFlight });
    return { mtimeMs: st.mtimeMs, turnInFlight: inFlight };
  }
}
