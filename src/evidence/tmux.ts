// tmux: one `list-panes -a` per sweep maps roster pids to panes; session-exit types into a pane.
// Every tmux command is passed as separate argv words: tmux hands a single-string command to sh.
import { run } from '../run.js';

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
