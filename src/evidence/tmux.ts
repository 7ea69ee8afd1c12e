// tmux: one `list-panes -a` per sweep maps roster pids to panes; session-exit types into a pane.
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

/** `tmux -L name` for a socket name, `tmux -S path` for a path (it holds a `/`). */
export function tmuxArgv(socket: string | null, ...args: string[]): string[] {
  if (!socket) return ['tmux', ...args];
  return socket.includes('/') ? ['tmux', '-S', socket, ...args] : ['tmux', '-L', socket, ...args];
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

/** Type text literally into a pane, then press Enter: two commands, argv words, no shell. */
export async function typeIntoPane(socket: string | null, paneId: string, text: string, timeoutMs: number): Promise<{ ok: boolean; error?: string }> {
  if (!/^%\d+$/.test(paneId)) return { ok: false, error: `refusing pane target ${JSON.stringify(paneId)}: not a pane id` };
  const a = await run(tmuxArgv(socket, 'send-keys', '-t', paneId, '-l', text), { timeoutMs });
  if (!a.ok) return { ok: false, error: `tmux send-keys failed: ${a.error} ${a.stderr.trim()}` };
  const b = await run(tmuxArgv(socket, 'send-keys', '-t', paneId, 'Enter'), { timeoutMs });
  if (!b.ok) return { ok: false, error: `tmux send-keys Enter failed: ${b.error} ${b.stderr.trim()}` };
  return { ok: true };
}

/**
 * Does the pane's input box hold a person's draft? Read from the screen (`capture-pane -p -e`: one tmux call)
 * by the real CLI's rule (src/evidence/input-box.ts). true = a draft, false = empty, null = the pane could not be
 * read or shows no input box (unknown: nothing is typed).
 */
export async function paneDraft(socket: string | null, paneId: string, timeoutMs: number): Promise<boolean | null> {
  if (!/^%\d+$/.test(paneId)) return null;
  const r = await run(tmuxArgv(socket, 'capture-pane', '-p', '-e', '-t', paneId), { timeoutMs });
  if (!r.ok) return null;
  return draftOnScreen(r.stdout);
}

/** true = a draft, false = an empty box, null = no input box on screen (a dialog) or unreadable: unknown. */
export function draftOnScreen(screen: string): boolean | null {
  const box = readInputBox(screen);
  return box.found ? !box.empty : null;
}

/**
 * Every listed pane's input line at once, in ONE tmux call (`display-message` marks between `capture-pane`s):
 * a sweep reads the drafts of all interactive sessions for the price of one child process. pane → draft?
 * (null: unknown). A failed call makes every pane unknown.
 */
export async function panesDrafts(socket: string | null, paneIds: string[], timeoutMs: number): Promise<Map<string, boolean | null>> {
  const out = new Map<string, boolean | null>();
  const ids = paneIds.filter((p) => /^%\d+$/.test(p));
  if (!ids.length) return out;
  const r = await run(tmuxArgv(socket, ...captures(ids).slice(1)), { timeoutMs });
  for (const p of ids) out.set(p, null);
  if (!r.ok) return out;
  readMarked(r.stdout, out);
  return out;
}

// the mark names its pane by tmux's own #{pane_id}: a literal "%4" in a display-message format is taken for a
// strftime conversion and comes out mangled ("  %4"), which made every pane's draft unknown
const MARK = '@@sunset-pane #{pane_id}@@';
const MARK_LINE = /^@@sunset-pane %\d+@@$/m;

/** Each pane's mark, then its screen, as tmux command words, each command after a ';'. */
function captures(ids: readonly string[]): string[] {
  return ids.flatMap((p) => [';', 'display-message', '-p', '-t', p, MARK, ';', 'capture-pane', '-p', '-e', '-t', p]);
}

/** The marked screens of a capture sequence, each pane's draft read from its own screen. */
function readMarked(stdout: string, out: Map<string, boolean | null>): void {
  const parts = stdout.split(/^@@sunset-pane (%\d+)@@$/m);
  for (let i = 1; i + 1 < parts.length; i += 2) out.set(parts[i], draftOnScreen(parts[i + 1]));
}

/**
 * The panes and the drafts of the panes given (the ones Claude Code's session files name), in ONE tmux call:
 * `list-panes -a` and the marked `capture-pane`s of panesDrafts in one command sequence. A pane given that is
 * gone stops tmux's sequence there, so then the two are read apart (two calls).
 */
export async function panesAndDrafts(socket: string | null, paneIds: string[], timeoutMs: number): Promise<{ panes: PanesResult; drafts: Map<string, boolean | null> }> {
  const ids = [...new Set(paneIds.filter((p) => /^%\d+$/.test(p)))];
  if (!ids.length) return { panes: await listPanes(socket, timeoutMs), drafts: new Map() };
  const r = await run(tmuxArgv(socket, 'list-panes', '-a', '-F', FORMAT, ...captures(ids)), { timeoutMs });
  if (!r.ok) {
    const panes = await listPanes(socket, timeoutMs);
    return { panes, drafts: panes.ok ? await panesDrafts(socket, ids.filter((p) => panes.panes.some((x) => x.paneId === p)), timeoutMs) : new Map() };
  }
  const first = r.stdout.search(MARK_LINE);
  const drafts = new Map<string, boolean | null>();
  for (const p of ids) drafts.set(p, null);
  if (first >= 0) readMarked(r.stdout.slice(first), drafts);
  return { panes: { ok: true, panes: parsePanes(first >= 0 ? r.stdout.slice(0, first) : r.stdout) }, drafts };
}
