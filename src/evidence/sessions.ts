// Claude Code's per-process session files, `~/.claude/sessions/<pid>.json` (docs/claude-code.md): one per live
// claude process, with its messaging socket (how the ask reaches the model) and, for a session started in tmux,
// the pane it runs in. Its internals: read defensively. A `kill -9` leaves the file behind, so a file counts
// only while its pid runs the same process (`procStart`, field 22 of /proc/<pid>/stat, matches).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readCachedText } from './file-cache.js';
import type { ProcTable } from './proc.js';
import { jsonObject } from './claude-code.js';
import { errorCode, errorMessage } from '../errors.js';

export interface SessionFile {
  pid: number;
  sessionId: string | null;
  /** Clock ticks since boot when the process started, as the CLI wrote it. */
  procStart: string | null;
  /** The session's messaging socket (JSON lines); null when the file names none. */
  socket: string | null;
  /** `#{session_name}:#{window_id}.#{pane_id}` for a session started inside tmux; its pane id (`%12`) apart. */
  tmux: string | null;
  paneId: string | null;
  kind: string | null;
  /** The background job's short id. */
  jobId: string | null;
  /** The agent view's own session (hidden from the roster). */
  spare: boolean;
  features: string[];
  /**
   * The messaging socket's protocol as the file names it (`peerProtocol`; 1 on 2.1.300–2.1.332), null when it names
   * none. One sunset does not know (KNOWN_PEER_PROTOCOLS) makes the socket unknown: nothing is sent over it.
   */
  peerProtocol: unknown;
  protocolKnown: boolean;
  /** The whole file as parsed (its other fields: cwd, name, status, waitingFor, startedAt…). */
  raw: Record<string, unknown>;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);

/** The messaging socket's protocols sunset speaks (docs/claude-code.md: `peerProtocol: 1`, 2.1.300–2.1.332). */
export const KNOWN_PEER_PROTOCOLS: readonly unknown[] = Object.freeze([1]);

/** A protocol field is known when the file names none (it is not required) or names one sunset speaks. */
export const protocolKnown = (v: unknown, known: readonly unknown[]) => v === undefined || v === null || known.includes(v);

/** Parse one session file. null when it is not a JSON object with a pid. Pure. */
export function parseSessionFile(text: string): SessionFile | null {
  const r = jsonObject(text);
  if (!r) return null;
  const pid = typeof r.pid === 'number' && Number.isInteger(r.pid) && r.pid > 0 ? r.pid : null;
  if (pid === null) return null;
  const tmux = str(r.tmux);
  const pane = tmux ? (/\.(%\d+)$/.exec(tmux)?.[1] ?? null) : null;
  const known = protocolKnown(r.peerProtocol, KNOWN_PEER_PROTOCOLS);
  return {
    pid,
    sessionId: str(r.sessionId),
    procStart: typeof r.procStart === 'number' ? String(r.procStart) : str(r.procStart),
    // a socket of a protocol sunset does not speak is not one it sends to
    socket: known ? str(r.messagingSocketPath) : null,
    tmux,
    paneId: pane,
    kind: str(r.kind),
    jobId: str(r.jobId),
    spare: r.spare === true,
    features: Array.isArray(r.peerFeatures) ? r.peerFeatures.filter((x): x is string => typeof x === 'string') : [],
    peerProtocol: r.peerProtocol ?? null,
    protocolKnown: known,
    raw: r,
  };
}

export type SessionFiles = { ok: true; byPid: Map<number, SessionFile>; unreadable: number[] } | { ok: false; error: string };

/**
 * Every session file whose process still runs (pid alive, same process start), by pid. A missing folder is
 * none; an unreadable one is a failed probe. A file of a running process that does not parse (read twice: it may
 * be caught mid-write) is left out and its pid listed in `unreadable` — its session is unknown, never absent: the
 * file roster then defers to the CLI, and the sweep's evidence has no socket and no named pane for it.
 */
export async function readSessionFiles(
  claudeDir: string,
  procs: ProcTable | null,
  ticksOf: (pid: number) => string | null,
): Promise<SessionFiles> {
  const dir = join(claudeDir, 'sessions');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { ok: true, byPid: new Map(), unreadable: [] };
    return { ok: false, error: `cannot read ${dir}: ${errorCode(err) ?? errorMessage(err)}` };
  }
  const byPid = new Map<number, SessionFile>();
  const unreadable: number[] = [];
  // undefined: gone meanwhile (its process ended); null: it does not parse, or cannot be read
  const read = (file: string) => {
    const r = readCachedText(file);
    if (!r.ok) return r.missing ? undefined : null;
    return parseSessionFile(r.text);
  };
  for (const n of names) {
    if (!/^\d+\.json$/.test(n)) continue;
    const pid = Number(n.slice(0, -5));
    if (procs && !procs.procs.has(pid)) continue; // a file left behind by a process that has gone
    let f = read(join(dir, n));
    if (f === null) {
      await new Promise((r) => setTimeout(r, 15)); // caught mid-write, perhaps: once more
      f = read(join(dir, n));
    }
    if (f === undefined) continue;
    if (f === null) {
      unreadable.push(pid);
      continue;
    }
    if (f.pid !== pid) continue;
    // a reused pid: the file was written by another process than the one running now
    if (f.procStart !== null && ticksOf(pid) !== null && ticksOf(pid) !== f.procStart) continue;
    byPid.set(pid, f);
  }
  return { ok: true, byPid, unreadable };
}
