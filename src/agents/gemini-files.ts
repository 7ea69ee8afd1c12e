// Gemini CLI's (0.61.0) files under its home folder, read defensively (docs/agents/gemini.md): `projects.json` maps a
// working folder to its short name; `tmp/<short>/chats/session-<UTC YYYY-MM-DDTHH-MM>-<first 8 of the id>.jsonl` are
// its transcripts, whose first line names the session (sessionId, startTime, kind). One session id can own several
// files (a resume in a later minute starts one): the newest is where it grows. Only what is needed is read: the
// file names of one project's chats folder, the stat and first line of the files named after a given minute, the
// tail of the file a live session writes.
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { errorCode } from '../errors.js';
import { readFirstLine, readTail } from './file-reads.js';

/** `projects.json`: `{ projects: { "<folder>": "<short name>" } }`; other fields are kept out of our way. */
const projectsSchema = z.looseObject({ projects: z.record(z.string(), z.string()) });

const SHORT_NAME = /^[A-Za-z0-9._-]{1,200}$/;

export type Projects = { ok: true; byFolder: Map<string, string> } | { ok: false; why: string };

/** The project registry: folder → short name. A missing file is no projects (nothing was ever started here). */
export function readProjects(home: string): Projects {
  let text: string;
  try {
    text = readFileSync(join(home, 'projects.json'), 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { ok: true, byFolder: new Map() };
    return { ok: false, why: `cannot read ${join(home, 'projects.json')}: ${errorCode(err) ?? 'error'}` };
  }
  let parsed: z.infer<typeof projectsSchema>;
  try {
    parsed = projectsSchema.parse(JSON.parse(text));
  } catch {
    return { ok: false, why: `${join(home, 'projects.json')} does not read as { projects: { folder: name } }` };
  }
  const byFolder = new Map<string, string>();
  for (const [folder, short] of Object.entries(parsed.projects)) if (SHORT_NAME.test(short)) byFolder.set(folder, short);
  return { ok: true, byFolder };
}

/** A folder's short name: its own key, else a key that resolves to the same real path (a symlinked HOME). */
export function shortNameOf(projects: Map<string, string>, cwd: string): string | null {
  const direct = projects.get(cwd);
  if (direct) return direct;
  for (const [folder, short] of projects) {
    try {
      if (realpathSync(folder) === cwd) return short;
    } catch {
      /* gone */
    }
  }
  return null;
}

/** A transcript's first line: the session it records (kind 'main' for a person's session; subagents keep theirs apart). */
const headSchema = z.looseObject({
  sessionId: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
  startTime: z.string(),
  kind: z.string().optional(),
});

export interface ChatFile {
  path: string;
  mtimeMs: number;
  /** The first line: null when it does not read (unknown: it may be anyone's). */
  head: { sessionId: string; startMs: number } | null;
}

const NAME = /^session-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-[A-Za-z0-9_-]*\.jsonl$/;

/**
 * The transcripts of one project written by sessions that started (or resumed) at or after `sinceMs`: those whose
 * name's minute is not before it (a name that does not say its minute is read too), stat'ed and their first line
 * read. `sinceMs` is the earliest start of the live processes in that folder, less a minute: no file of theirs is
 * named earlier. ok false: the folder cannot be listed (a missing one is no files: nothing written yet).
 */
export function readChats(home: string, short: string, sinceMs: number): { ok: true; files: ChatFile[] } | { ok: false; why: string } {
  const dir = join(home, 'tmp', short, 'chats');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: true, files: [] };
    return { ok: false, why: `cannot list ${dir}: ${code ?? 'error'}` };
  }
  const since = sinceMs - 60_000;
  const files: ChatFile[] = [];
  for (const name of names) {
    if (!name.startsWith('session-') || !name.endsWith('.jsonl')) continue;
    const m = NAME.exec(name);
    if (m && Date.parse(`${m[1]}T${m[2]}:${m[3]}:59.999Z`) < since) continue;
    const path = join(dir, name);
    let mtimeMs: number;
    try {
      const st = statSync(path);
      if (!st.isFile()) continue;
      mtimeMs = st.mtimeMs;
    } catch {
      continue; // gone meanwhile
    }
    files.push({ path, mtimeMs, head: headOf(firstLine(path)) });
  }
  return { ok: true, files };
}

function headOf(line: string | null): ChatFile['head'] {
  if (line === null) return null;
  try {
    const h = headSchema.parse(JSON.parse(line));
    const startMs = Date.parse(h.startTime);
    if (!Number.isFinite(startMs) || (h.kind !== undefined && h.kind !== 'main')) return null;
    return { sessionId: h.sessionId, startMs };
  } catch {
    return null;
  }
}

/** The first line (the header is a few hundred bytes; 64 KiB is read at most). */
export function firstLine(path: string): string | null {
  return readFirstLine(path, 64 * 1024);
}

/**
 * A turn in flight, from the tail of the file the session writes: its last message line (`type` user or gemini;
 * `$set` updates and other kinds pass) is a user's: true; a gemini's: false; no message in a file read whole (a
 * session never prompted): false. null: unreadable, or no message line within the last 1 MiB.
 */
export function turnInFlightOf(path: string): boolean | null {
  for (const bytes of [64 * 1024, 1024 * 1024]) {
    const r = readTail(path, bytes);
    if (!r) return null;
    const lines = r.text.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const t = lines[i];
      if (!t.includes('"type"')) continue;
      let type: unknown;
      try {
        type = (JSON.parse(t) as { type?: unknown }).type;
      } catch {
        if (i === lines.length - 1) continue; // a line still being written
        return null;
      }
      if (type === 'user') return true;
      if (type === 'gemini') return false;
    }
    if (r.whole) return false;
  }
  return null;
}
