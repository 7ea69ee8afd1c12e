// tmux: one `list-panes -a` per sweep maps roster pids to panes, and reads their input boxes (drafts). Typing
// into a pane is the exit paths' (src/agents/tmux-pane.ts).
// Every tmux command is passed as separate argv words: tmux hands a single-string command to sh.
import { run } from '../run.js';
import { readInputBox } from './input-box.js';

export interface Pane {
  paneId: string; // "%12": what send-keys -t takes
  panePid: number;
  dead: boolean;
  deadTime: number | null; // ms since the epoch, when dead
  sessionName: string;
  clients: number; // clients attached to the pane's session
}

export type PanesResult = { ok: true; panes: Pane[] } | { ok: false; error: string };

/**
 * `tmux -L name` for a socket name, `tmux -S path` for a path (it holds a `/`). Always `-u`: without a UTF-8
 * locale (a bare systemd unit, cron, a container) tmux writes the tabs of a `-F` format as `_`, and every
 * pane read as none.
 */
export function tmuxArgv(socket: string | null, ...args: string[]): string[] {
  if (!socket) return ['tmux', '-u', ...args];
  return socket.includes('/') ? ['tmux', '-u', '-S', socket, ...args] : ['tmux', '-u', '-L', socket, ...args];
}

const FORMAT = ['#{pane_id}', '#{pane_pid}', '#{pane_dead}', '#{pane_dead_time}', '#{session_attached}', '#{session_name}'].join('\t');

export function parsePanes(stdout: string): Pane[] {
  const panes: Pane[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    const [paneId, pid, dead, deadTime, attached, ...name] = line.split('\t');
    if (!/^%\d+$/.test(paneId ?? '')) continue;
    panes.push({
      paneId,
      panePid: Number(pid) || 0,
      dead: dead === '1',
      deadTime: deadTime ? Number(deadTime) * 1000 : null,
      clients: Number(attached) || 0,
      sessionName: name.join('\t'),
    });
  }
  return panes;
}

/** No tmux server on the socket is no panes, not a failure; anything else that goes wrong is. */
export async function listPanes(socket: string | null, timeoutMs: number): Promise<PanesResult> {
  const r = await run(tmuxArgv(socket, 'list-panes', '-a', '-F', FORMAT), { timeoutMs });
  if (r.ok) return { ok: true, panes: parsePanes(r.stdout) };
  if (/no server running|error connecting to|failed to connect/i.test(r.stderr) && !r.timedOut) return { ok: true, panes: [] };
  return { ok: false, error: `tmux list-panes failed: ${r.error}${r.stderr.trim() ? ` (${r.stderr.trim()})` : ''}` };
}

/** Claude Code's input box (src/evidence/input-box.ts): true = a draft, false = an empty box, null = no input box on screen (a dialog) or unreadable: unknown. */
export function draftOnScreen(screen: string): boolean | null {
  const box = readInputBox(screen);
  return box.found ? !box.empty : null;
}

/**
 * Every listed pane's screen at once, in ONE tmux call (`display-message` marks between `capture-pane -p -e`s): a
 * sweep reads the drafts of all interactive sessions for the price of one child process. pane → its screen (null:
 * unread). A failed call leaves every pane unread.
 */
export async function panesScreens(socket: string | null, paneIds: string[], timeoutMs: number): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  const ids = paneIds.filter((p) => /^%\d+$/.test(p));
  if (!ids.length) return out;
  const r = await run(tmuxArgv(socket, ...captures(ids).slice(1)), { timeoutMs });
  for (const p of ids) out.set(p, null);
  if (!r.ok) return out;
  readMarked(r.stdout, out);
  return out;
}

/** Claude Code's drafts of the panes listed (panesScreens, read by draftOnScreen): pane → draft? (null: unknown). */
export async function panesDrafts(socket: string | null, paneIds: string[], timeoutMs: number): Promise<Map<string, boolean | null>> {
  const screens = await panesScreens(socket, paneIds, timeoutMs);
  return new Map([...screens].map(([p, sc]) => [p, sc === null ? null : draftOnScreen(sc)]));
}

// the mark names its pane by tmux's own #{pane_id}: a literal "%4" in a display-message format is taken for a
// strftime conversion and comes out mangled ("  %4"), which made every pane's draft unknown
const MARK = '@@sunset-pane #{pane_id}@@';
const MARK_LINE = /^@@sunset-pane %\d+@@$/m;

/** Each pane's mark, then its screen, as tmux command words, each command after a ';'. */
function captures(ids: readonly string[]): string[] {
  return ids.flatMap((p) => [';', 'display-message', '-p', '-t', p, MARK, ';', 'capture-pane', '-p', '-e', '-t', p]);
}

/** The marked screens of a capture sequence, each pane's own. */
function readMarked(stdout: string, out: Map<string, string | null>): void {
  const parts = stdout.split(/^@@sunset-pane (%\d+)@@$/m);
  for (let i = 1; i + 1 < parts.length; i += 2) out.set(parts[i], parts[i + 1]);
}

/**
 * The panes and the screens of the panes given (the ones Claude Code's session files name), in ONE tmux call:
 * `list-panes -a` and the marked `capture-pane`s of panesScreens in one command sequence. A pane given that is
 * gone stops tmux's sequence there, so then the two are read apart (two calls).
 */
export async function panesAndScreens(
  socket: string | null,
  paneIds: string[],
  timeoutMs: number,
): Promise<{ panes: PanesResult; screens: Map<string, string | null> }> {
  const ids = [...new Set(paneIds.filter((p) => /^%\d+$/.test(p)))];
  if (!ids.length) return { panes: await listPanes(socket, timeoutMs), screens: new Map() };
  const r = await run(tmuxArgv(socket, 'list-panes', '-a', '-F', FORMAT, ...captures(ids)), { timeoutMs });
  if (!r.ok) {
    const panes = await listPanes(socket, timeoutMs);
    return {
      panes,
      screens: panes.ok
        ? await panesScreens(
            socket,
            ids.filter((p) => panes.panes.some((x) => x.paneId === p)),
            timeoutMs,
          )
        : new Map(),
    };
  }
  const first = r.stdout.search(MARK_LINE);
  const screens = new Map<string, string | null>();
  for (const p of ids) screens.set(p, null);
  if (first >= 0) readMarked(r.stdout.slice(first), screens);
  return { panes: { ok: true, panes: parsePanes(first >= 0 ? r.stdout.slice(0, first) : r.stdout) }, screens };
}
