// Which Codex TUI process is which session: pure, over plain data. Codex writes no per-process file naming its
// session (docs/agents/codex.md), so a process is tied by what is certain — `codex resume <uuid>` in its argv — or
// else by its working folder and start against each rollout's session_meta (the thread is created 2–9 s after the
// TUI starts: measured on 0.171.0). Anything short of exactly one transcript for one process is no tie: such a
// process is not a session, and sunset leaves it alone (unknown protects).
import type { RolloutHead } from './codex-rollouts.js';

/** A live Codex TUI process, as discovery read it. */
export interface CodexCandidate {
  pid: number;
  startMs: number;
  /** The folder its session works in: /proc/<pid>/cwd, or its `-C <dir>`. */
  cwd: string;
  /** `codex resume <uuid>`: the id; `codex resume` with no uuid (--last, a name, the picker): 'unknown'; else null. */
  resume: string | 'unknown' | null;
  /** For a resume by uuid: the transcript of that id (null when there is none). */
  resumed?: RolloutHead | null;
}

export interface Tie {
  pid: number;
  head: RolloutHead;
}

/** The /proc start time is read to the second (btime): a thread created a little "before" its process is its. */
export const START_SLACK_MS = 2_000;
/** A new TUI's thread is created this soon after the process starts, or it is not that process's (measured 2–9 s). */
export const CREATE_WINDOW_MS = 60_000;

const where = (c: CodexCandidate) => `codex pid ${c.pid} in ${c.cwd}`;
const ids = (hs: RolloutHead[]) => hs.map((h) => h.sessionId).join(', ');

/**
 * Tie processes to transcripts. A new session (no resume in its argv) is tied to the one transcript of its folder
 * whose thread was created within CREATE_WINDOW_MS of its start, when no other process could claim that transcript;
 * a resumed one to the transcript of its id, when no other process claims it. A tie is then given up when a later
 * transcript of its folder is no one's: it may be this process's (Codex's `/new` starts a new session in the same
 * process), so which session it holds cannot be told.
 */
export function tieCodex(candidates: CodexCandidate[], heads: RolloutHead[]): { ties: Tie[]; problems: string[] } {
  const problems: string[] = [];
  const tui = heads.filter((h) => h.originator !== 'codex_exec');
  const options = new Map<number, RolloutHead[]>();
  for (const c of candidates) {
    if (c.resume === 'unknown') {
      problems.push(`${where(c)}: resumed with no session id in its argv (--last, a name or the picker): its session cannot be told`);
      continue;
    }
    if (c.resume !== null) {
      if (c.resumed) options.set(c.pid, [c.resumed]);
      else problems.push(`${where(c)}: resumes ${c.resume}, which has no transcript`);
      continue;
    }
    options.set(
      c.pid,
      tui.filter((h) => h.cwd === c.cwd && h.createdMs >= c.startMs - START_SLACK_MS && h.createdMs <= c.startMs + CREATE_WINDOW_MS),
    );
  }
  const claims = new Map<string, number[]>();
  for (const [pid, hs] of options) for (const h of hs) claims.set(h.path, [...(claims.get(h.path) ?? []), pid]);

  const first: Tie[] = [];
  for (const c of candidates) {
    const hs = options.get(c.pid);
    if (!hs) continue;
    if (hs.length === 0) {
      problems.push(`${where(c)}: no transcript yet (never prompted): not a session until it has one`);
      continue;
    }
    if (hs.length > 1) {
      problems.push(`${where(c)}: ${hs.length} transcripts could be its (${ids(hs)}): its session cannot be told`);
      continue;
    }
    const others = (claims.get(hs[0].path) ?? []).filter((p) => p !== c.pid);
    if (others.length) {
      problems.push(`${where(c)}: its transcript ${hs[0].sessionId} could also be pid ${others.join(', ')}'s: its session cannot be told`);
      continue;
    }
    first.push({ pid: c.pid, head: hs[0] });
  }

  const tied = new Set(first.map((t) => t.head.path));
  const ties: Tie[] = [];
  for (const t of first) {
    const c = candidates.find((x) => x.pid === t.pid)!;
    const later = tui.filter(
      (h) => !tied.has(h.path) && h.cwd === c.cwd && h.createdMs > Math.max(t.head.createdMs, c.startMs - START_SLACK_MS),
    );
    if (later.length) {
      problems.push(
        `${where(c)}: a later transcript of its folder is no one's (${ids(later)}): it may have moved to it (/new), so its session cannot be told`,
      );
      continue;
    }
    ties.push(t);
  }
  return { ties, problems };
}
