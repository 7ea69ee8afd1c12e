// What a sweep saw of Claude Code's own files for each live background session — its job's state.json, its
// session file, the daemon's roster — for claude-code-unreadable (src/doctrine/unreadable.ts). A session is live
// here when the roster lists it with a running process, or when its session file's process still runs (the real
// CLI lists no background session once its jobs folder is gone: its files are then the only ones that show it).
// Reads go through the sweep's stat-keyed cache; the daemon's roster holds secrets: only its `proto` is kept.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RosterRow } from './roster.js';
import { labelOf } from './roster.js';
import type { SessionFiles } from './sessions.js';
import { protocolKnown } from './sessions.js';
import { readCachedText } from './file-cache.js';
import { jobStateFile, jsonObject } from './claude-code.js';
import { unsafeSegment } from '../doctrine/ids.js';
import { settledAt } from '../tasks/read-tasks.js';
import type { FileProblem, FilesSeen, SessionFilesSeen } from '../doctrine/unreadable.js';

/** The daemon roster's protocols sunset knows (`proto: 1`, 2.1.300–2.1.332). */
export const KNOWN_DAEMON_PROTOCOLS: readonly unknown[] = Object.freeze([1]);

const daemonRosterFile = (claudeDir: string) => join(claudeDir, 'daemon', 'roster.json');

/** The last read of a daemon roster: its stat, and its proto alone (never the file: it holds auth tokens). */
let daemonMemo: { file: string; key: string; value: FilesSeen['daemonRoster'] } | null = null;

/**
 * The daemon's roster: null when it is not there (not every CLI keeps one; the test fleet's stand-in does not) or
 * names a protocol sunset knows; else what is wrong. Read again only when its stat moved.
 */
export function daemonRosterSeen(claudeDir: string): FilesSeen['daemonRoster'] {
  const file = daemonRosterFile(claudeDir);
  let key: string;
  let settled: boolean;
  try {
    const before = Date.now();
    const st = statSync(file, { throwIfNoEntry: false });
    if (!st) return null;
    key = `${st.dev}/${st.ino}/${st.size}/${st.mtimeMs}/${st.ctimeMs}`;
    // a rewrite within the timestamps' granularity could keep all five: a young file is read again next time
    settled = settledAt(before, st);
  } catch {
    return { problem: 'unreadable', proto: null };
  }
  if (daemonMemo?.file === file && daemonMemo.key === key) return daemonMemo.value;
  let value: FilesSeen['daemonRoster'];
  try {
    const o = jsonObject(readFileSync(file, 'utf8'));
    if (!o) value = { problem: 'unreadable', proto: null };
    else {
      const proto = typeof o.proto === 'number' || typeof o.proto === 'string' ? o.proto : o.proto === undefined ? undefined : null;
      value = protocolKnown(proto, KNOWN_DAEMON_PROTOCOLS) ? null : { problem: 'unknown-protocol', proto };
    }
  } catch (err) {
    value = (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : { problem: 'unreadable', proto: null };
  }
  daemonMemo = settled ? { file, key, value } : null;
  return value;
}

/** Is the daemon's roster one sunset may stand on (its files are read as the roster only then)? */
export const daemonRosterKnown = (claudeDir: string) => daemonRosterSeen(claudeDir) === null;

/** A job's state.json: null when it reads as a JSON object; else what is wrong with it. */
export function jobStateProblem(claudeDir: string, shortId: string | null): FileProblem | null {
  if (shortId === null || unsafeSegment(shortId)) return 'missing';
  const r = readCachedText(jobStateFile(claudeDir, shortId));
  if (!r.ok) return r.missing ? 'missing' : 'unreadable';
  return jsonObject(r.text) ? null : 'unreadable';
}

/**
 * Every live background session the sweep saw, and what its files read as. `rows`: the roster's live background
 * rows (a row whose process is known gone is left out by the caller).
 */
export function filesSeen(claudeDir: string, sessionFiles: SessionFiles | null, rows: readonly RosterRow[]): FilesSeen {
  const sessions: SessionFilesSeen[] = [];
  const seenPids = new Set<number>();
  const sessionFileOf = (pid: number): FileProblem | null => {
    if (!sessionFiles?.ok) return 'unreadable';
    if (sessionFiles.unreadable.includes(pid)) return 'unreadable';
    const sf = sessionFiles.byPid.get(pid);
    if (!sf) return 'missing';
    return sf.protocolKnown ? null : 'unknown-protocol';
  };
  for (const row of rows) {
    if (row.kind !== 'background' || row.pid === null || seenPids.has(row.pid)) continue;
    seenPids.add(row.pid);
    const sf = sessionFiles?.ok ? sessionFiles.byPid.get(row.pid) : undefined;
    sessions.push({
      label: labelOf(row),
      sessionId: row.sessionId,
      listed: true,
      jobState: jobStateProblem(claudeDir, row.id ?? sf?.jobId ?? null),
      sessionFile: sessionFileOf(row.pid),
    });
  }
  // the live background sessions only their session files show (the roster does not list them)
  if (sessionFiles?.ok)
    for (const sf of sessionFiles.byPid.values()) {
      if (sf.kind !== 'bg' || sf.spare || !sf.sessionId || !sf.jobId || seenPids.has(sf.pid)) continue;
      seenPids.add(sf.pid);
      sessions.push({
        label: sf.jobId,
        sessionId: sf.sessionId,
        listed: false,
        jobState: jobStateProblem(claudeDir, sf.jobId),
        sessionFile: sf.protocolKnown ? null : 'unknown-protocol',
      });
    }
  return { sessions, daemonRoster: daemonRosterSeen(claudeDir), claudeDir };
}
