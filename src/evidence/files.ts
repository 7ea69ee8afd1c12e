// The file-system evidence of a sweep: transcripts (silence), inbox folders (messages waiting), and the tmux
// pane that holds an interactive session. One readdir per folder, whatever the fleet's size.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isInTree, type ProcTable } from './proc.js';
import type { Pane } from './tmux.js';

export const ASK_FILE_PREFIX = 'sunset-exit-ask-';

/** The pane whose process tree holds the pid (the pane's own process, or an ancestor of the pid). */
export function findPane(panes: Pane[], procs: ProcTable, pid: number): Pane | null {
  return panes.find((p) => !p.dead && isInTree(procs, p.panePid, pid)) ?? null;
}

/** sessionId → newest transcript, from one readdir of projectsDir and one of each project folder. */
export async function indexTranscripts(dir: string): Promise<Map<string, { path: string; mtimeMs: number }> | Error> {
  let projects: string[];
  try {
    projects = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch (err: any) {
    if (err.code === 'ENOENT') return new Map();
    return err;
  }
  const index = new Map<string, { path: string; mtimeMs: number }>();
  await Promise.all(
    projects.map(async (p) => {
      let files: string[];
      try {
        files = await readdir(join(dir, p));
      } catch {
        return;
      }
      await Promise.all(
        files
          .filter((n) => n.endsWith('.jsonl'))
          .map(async (n) => {
            const path = join(dir, p, n);
            try {
              const s = await stat(path);
              const sid = n.slice(0, -'.jsonl'.length);
              const prev = index.get(sid);
              if (!prev || prev.mtimeMs < s.mtimeMs) index.set(sid, { path, mtimeMs: s.mtimeMs });
            } catch {
              /* vanished between readdir and stat: treated as missing */
            }
          }),
      );
    }),
  );
  return index;
}

/** Messages waiting: regular files not starting with "." — except sunset's own ask. Missing folder = 0; unreadable = null. */
export async function inboxPending(folder: string): Promise<number | null> {
  try {
    const entries = await readdir(folder, { withFileTypes: true });
    return entries.filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.startsWith(ASK_FILE_PREFIX)).length;
  } catch (err: any) {
    return err.code === 'ENOENT' ? 0 : null;
  }
}
