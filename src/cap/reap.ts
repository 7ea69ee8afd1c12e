// `sunset reap`: remove the tmux sessions (on fleet.tmuxSocket) whose every pane has been dead for at
// least windows.reapAfter — remain-on-exit leftovers, whose processes have already exited. It returns a
// slot in the tmux sense only (ADR-0010): it never ends a process, and a session with any live pane is
// never touched.
//
// Each removal re-checks and removes in ONE tmux command: `if-shell -F` on a format that is true only if
// every pane of the session is still dead, and dead long enough, then `kill-session` on the session's id
// (`$3`, never its name). -F makes the condition a tmux format: no shell runs, nothing is interpolated
// into shell text, and a pane respawned or a window added since the listing keeps the session.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { run } from '../run.js';
import { tmuxArgv } from '../evidence/tmux.js';
import { errorMessage } from '../errors.js';

export interface ReapPane {
  sessionId: string; // "$3"
  sessionName: string;
  paneId: string;
  dead: boolean;
  /** When the pane died, ms since the epoch (tmux keeps whole seconds); null when not dead or not told. */
  deadTime: number | null;
}

export interface ReapCandidate {
  sessionId: string;
  sessionName: string;
  panes: number;
  /** The latest pane death (ms since the epoch). */
  deadSince: number;
}

export interface ReapLine {
  sessionId: string;
  sessionName: string;
  panes: number;
  deadMs: number;
  action: 'removed' | 'would-remove' | 'kept' | 'failed';
  error?: string;
}

export interface ReapResult {
  ok: boolean;
  error?: string;
  lines: ReapLine[];
}

const SEP = '\t';
const LIST_FORMAT = ['#{session_id}', '#{pane_id}', '#{pane_dead}', '#{pane_dead_time}', '#{session_name}'].join(SEP);
const SESSION_ID = /^\$\d+$/;

export function parseReapPanes(stdout: string): ReapPane[] {
  const out: ReapPane[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    const [sessionId, paneId, dead, deadTime, ...name] = line.split(SEP);
    if (!SESSION_ID.test(sessionId ?? '') || !/^%\d+$/.test(paneId ?? '')) continue;
    const t = Number(deadTime);
    out.push({
      sessionId,
      paneId,
      dead: dead === '1',
      deadTime: deadTime && Number.isFinite(t) && t > 0 ? t * 1000 : null,
      sessionName: name.join(SEP),
    });
  }
  return out;
}

/**
 * The sessions to remove: every pane dead, each with a known death time, the latest at least `reapAfter`
 * ago. tmux keeps whole seconds, so a death time may be up to 1 s early: that second is added. Pure.
 */
export function planReap(panes: ReapPane[], now: number, reapAfter: number): ReapCandidate[] {
  const bySession = new Map<string, ReapPane[]>();
  for (const p of panes) {
    const list = bySession.get(p.sessionId);
    if (list) list.push(p);
    else bySession.set(p.sessionId, [p]);
  }
  const out: ReapCandidate[] = [];
  for (const [sessionId, list] of bySession) {
    if (!list.every((p) => p.dead && p.deadTime !== null)) continue;
    const deadSince = Math.max(...list.map((p) => p.deadTime!));
    if (deadSince + 1000 > now - reapAfter) continue;
    out.push({ sessionId, sessionName: list[0].sessionName, panes: list.length, deadSince });
  }
  return out.sort((a, b) => a.deadSince - b.deadSince);
}

/** Whole seconds: a pane qualifies when pane_dead_time <= this. Mirrors planReap's rule. */
export function deadBefore(now: number, reapAfter: number): number {
  return Math.floor((now - reapAfter - 1000) / 1000);
}

/**
 * The if-shell -F condition: "1" only if every pane of every window of the target session is dead, with
 * a death time no later than `before` (epoch seconds); "0" otherwise. Each pane that fails the test
 * yields an "x"; the session qualifies when none does.
 */
export function allDeadFormat(before: number): string {
  const paneFails = `#{?pane_dead,#{?pane_dead_time,#{?#{e|<=:#{pane_dead_time},${before}},,x},x},x}`;
  return `#{?#{W:#{P:${paneFails}}},0,1}`;
}

/** The one tmux command that re-checks and removes: argv words; the session id is checked to be `$<n>`. */
export function reapArgv(socket: string | null, sessionId: string, before: number): string[] {
  if (!SESSION_ID.test(sessionId)) throw new Error(`refusing tmux target ${JSON.stringify(sessionId)}: not a session id`);
  // The branches are tmux commands (parsed by tmux, not sh); the id is single-quoted so tmux expands nothing in it.
  return tmuxArgv(
    socket,
    'if-shell',
    '-F',
    '-t',
    sessionId,
    allDeadFormat(before),
    `kill-session -t '${sessionId}'`,
    'display-message -p kept',
  );
}

export async function listReapPanes(
  config: Pick<Config, 'fleet' | 'probeTimeout'>,
): Promise<{ ok: true; panes: ReapPane[] } | { ok: false; error: string }> {
  const r = await run(tmuxArgv(config.fleet.tmuxSocket, 'list-panes', '-a', '-F', LIST_FORMAT), { timeoutMs: config.probeTimeout });
  if (r.ok) return { ok: true, panes: parseReapPanes(r.stdout) };
  if (/no server running|error connecting to|failed to connect/i.test(r.stderr) && !r.timedOut) return { ok: true, panes: [] };
  return { ok: false, error: `tmux list-panes failed: ${r.error}${r.stderr.trim() ? ` (${r.stderr.trim()})` : ''}` };
}

/** One reap pass. Never throws: a failure is in the result (it runs inside the expire scan too). */
export async function runReap(
  config: Pick<Config, 'fleet' | 'probeTimeout' | 'windows'>,
  o: { dryRun?: boolean; now?: () => number; log?: Logger } = {},
): Promise<ReapResult> {
  const now = o.now ?? Date.now;
  try {
    const listed = await listReapPanes(config);
    if (!listed.ok) {
      o.log?.warn({ event: 'reap:failed', error: listed.error }, `reap: ${listed.error}`);
      return { ok: false, error: listed.error, lines: [] };
    }
    const at = now();
    const plan = planReap(listed.panes, at, config.windows.reapAfter);
    const lines: ReapLine[] = [];
    for (const c of plan) {
      const base = { sessionId: c.sessionId, sessionName: c.sessionName, panes: c.panes, deadMs: Math.max(0, at - c.deadSince) };
      if (o.dryRun) {
        lines.push({ ...base, action: 'would-remove' });
        continue;
      }
      const r = await run(reapArgv(config.fleet.tmuxSocket, c.sessionId, deadBefore(now(), config.windows.reapAfter)), {
        timeoutMs: config.probeTimeout,
      });
      if (r.ok && !/\bkept\b/.test(r.stdout)) lines.push({ ...base, action: 'removed' });
      else if (r.ok)
        lines.push({ ...base, action: 'kept' }); // a pane came back (respawned) or was added since the listing
      else if (/can't find session|no server running|error connecting to|failed to connect/i.test(r.stderr) && !r.timedOut)
        continue; // gone meanwhile
      else lines.push({ ...base, action: 'failed', error: `${r.error}${r.stderr.trim() ? ` (${r.stderr.trim()})` : ''}` });
    }
    for (const l of lines) {
      if (l.action === 'removed')
        o.log?.info(
          { event: 'reap:removed', ...l },
          `reap: removed tmux session ${l.sessionId} (${l.sessionName}), all ${l.panes} panes dead`,
        );
      if (l.action === 'failed') o.log?.warn({ event: 'reap:failed', ...l }, `reap: could not remove ${l.sessionId}: ${l.error}`);
    }
    return { ok: lines.every((l) => l.action !== 'failed'), lines };
  } catch (err) {
    return { ok: false, error: errorMessage(err), lines: [] };
  }
}
