// The file-system evidence of a sweep: transcripts (silence), inbox folders (messages waiting), and the tmux
// pane that holds an interactive session. One readdir per folder, whatever the fleet's size.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isInTree, type ProcTable } from './proc.js';
import { settledAt } from '../tasks/read-tasks.js';
import type { Pane } from './tmux.js';
import { errorCode } from '../errors.js';

export const ASK_FILE_PREFIX = 'sunset-exit-ask-';

/** The pane whose process tree holds the pid (the pane's own process, or an ancestor of the pid). */
export function findPane(panes: Pane[], procs: ProcTable, pid: number): Pane | null {
  return panes.find((p) => !p.dead && isInTree(procs, p.panePid, pid)) ?? null;
}

/** Each project folder's transcript names, kept while the folder's mtime and ctime stay (an entry added or removed moves them). */
const listings = new Map<string, { mtimeMs: number; ctimeMs: number; names: string[] }>();

/**
 * sessionId → newest transcript, from one readdir of projectsDir and a stat of each project folder (its listing
 * is read again only when the folder changed). Only the transcripts of `wanted` sessions are stat'ed, when given:
 * a box keeps every past session's transcript, and a sweep needs the live ones'.
 */
export function indexTranscripts(dir: string, wanted?: ReadonlySet<string>): Map<string, { path: string; mtimeMs: number }> | Error {
  let projects: string[];
  try {
    projects = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return new Map();
    return err instanceof Error ? err : new Error(String(err));
  }
  const index = new Map<string, { path: string; mtimeMs: number }>();
  const seen = new Set<string>();
  for (const p of projects) {
    const folder = join(dir, p);
    seen.add(folder);
    let names: string[];
    try {
      const st = statSync(folder);
      const hit = listings.get(folder);
      if (hit && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) names = hit.names;
      else {
        const before = Date.now();
        names = readdirSync(folder).filter((n) => n.endsWith('.jsonl'));
        if (settledAt(before, st)) listings.set(folder, { mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, names });
        else listings.delete(folder);
      }
    } catch {
      listings.delete(folder);
      continue;
    }
    for (const n of names) {
      const sid = n.slice(0, -'.jsonl'.length);
      if (wanted && !wanted.has(sid)) continue;
      const path = join(folder, n);
      let s: ReturnType<typeof statSync>;
      try {
        s = statSync(path, { throwIfNoEntry: false });
      } catch {
        s = undefined;
      }
      if (!s) continue; // vanished between readdir and stat (or unreadable): treated as missing
      const prev = index.get(sid);
      if (!prev || prev.mtimeMs < s.mtimeMs) index.set(sid, { path, mtimeMs: s.mtimeMs });
    }
  }
  for (const k of listings.keys()) if (k.startsWith(dir) && !seen.has(k)) listings.delete(k);
  return index;
}

/** Messages waiting: regular files not starting with "." — except sunset's own ask. Missing folder = 0; unreadable = null. */
export function inboxPending(folder: string): number | null {
  try {
    const entries = readdirSync(folder, { withFileTypes: true });
    return entries.filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.startsWith(ASK_FILE_PREFIX)).length;
  } catch (err) {
    return errorCode(err) === 'ENOENT' ? 0 : null;
  }
}

/**
 * Every session's inbox from one read of the inbox folder: a session with no folder there has 0 waiting (no
 * readdir of its own). A root that cannot be listed makes each one read on its own (and unknown where that fails).
 */
export function inboxReader(root: string): (sessionId: string) => number | null {
  let names: Set<string> | null;
  try {
    names = new Set(readdirSync(root));
  } catch (err) {
    names = errorCode(err) === 'ENOENT' ? new Set() : null;
  }
  return (sessionId) =>
    names && !names.has(sessionId) && !sessionId.includes('/') && sessionId !== '..' ? 0 : inboxPending(join(root, sessionId));
}
