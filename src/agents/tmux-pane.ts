// What every exit path typed into a tmux pane shares: read a person's draft from the screen, type the ask or the
// quit command (never over a draft: the draft and our words would go to the model as one message, and a quit
// command typed over it does not quit — seen on Claude Code, Codex and Gemini CLI alike), and bring a resumed
// session back in a pane of its own. Each path brings its own screen rule and quit command. Every tmux command
// is passed as separate argv words: tmux hands a single-string command to sh.
import { tmuxArgv } from '../evidence/tmux.js';
import { run } from '../run.js';
import type { SessionView } from '../evidence/fleet.js';
import type { Config } from '../config.js';
import type { Delivered, ExitContext, ExitOutcome, ExitPath, ExitTarget, ResumeRun, ResumeTarget } from './types.js';

const PANE_ID = /^%\d+$/;

/** Type text literally into a pane, then press Enter: two commands, argv words, no shell. */
export async function typeIntoPane(
  socket: string | null,
  paneId: string,
  text: string,
  timeoutMs: number,
): Promise<{ ok: boolean; error?: string }> {
  if (!PANE_ID.test(paneId)) return { ok: false, error: `refusing pane target ${JSON.stringify(paneId)}: not a pane id` };
  const a = await run(tmuxArgv(socket, 'send-keys', '-t', paneId, '-l', text), { timeoutMs });
  if (!a.ok) return { ok: false, error: `tmux send-keys failed: ${a.error} ${a.stderr.trim()}` };
  const b = await run(tmuxArgv(socket, 'send-keys', '-t', paneId, 'Enter'), { timeoutMs });
  if (!b.ok) return { ok: false, error: `tmux send-keys Enter failed: ${b.error} ${b.stderr.trim()}` };
  return { ok: true };
}

/**
 * Does the pane's input box hold a person's draft? Its screen (`capture-pane -p -e`: one tmux call) read by the
 * path's rule. true = a draft, false = empty, null = the pane could not be read or shows no input box (unknown:
 * nothing is typed).
 */
export async function paneDraft(ctx: ExitContext, paneId: string | null, onScreen: (screen: string) => boolean | null) {
  if (!paneId || !PANE_ID.test(paneId)) return null;
  const r = await run(tmuxArgv(ctx.config.fleet.tmuxSocket, 'capture-pane', '-p', '-e', '-t', paneId), {
    timeoutMs: ctx.config.probeTimeout,
  });
  return r.ok ? onScreen(r.stdout) : null;
}

/** How a path types a line into a pane and presses Enter: typeIntoPane, or one that checks the box (pane-typing.ts). */
export type PaneTyper = (
  socket: string | null,
  paneId: string,
  text: string,
  timeoutMs: number,
) => Promise<{ ok: boolean; error?: string }>;

/** The one message typed into the session's pane (askVia `pane`), only when its input box is seen empty. */
export async function askInPane(
  ctx: ExitContext,
  view: SessionView,
  text: string,
  path: Pick<ExitPath, 'draft'>,
  type: PaneTyper = typeIntoPane,
): Promise<Delivered> {
  const pane = view.evidence.pane;
  if (!pane || !path.draft) return { ok: false, via: 'pane', why: 'no pane holds this session' };
  const draft = await path.draft(ctx, view);
  if (draft !== false)
    return { ok: false, via: 'pane', why: draft === null ? 'its pane cannot be read' : 'a person left a draft in its input box' };
  const r = await type(ctx.config.fleet.tmuxSocket, pane.paneId, text, ctx.config.probeTimeout);
  return r.ok ? { ok: true, via: 'pane' } : { ok: false, via: 'pane', why: r.error ?? 'tmux failed' };
}

/**
 * Type the path's quit command into the session's pane, then wait up to exitConfirm for its process to end.
 * (Whether the box is empty was judged on the exit worker's fresh sweep: a draft protects, draft-pending.)
 */
export async function quitInPane(
  ctx: ExitContext,
  target: ExitTarget,
  command: string,
  confirm: ExitPath['confirm'],
  type: PaneTyper = typeIntoPane,
): Promise<ExitOutcome> {
  const started = Date.now();
  if (!target.paneId)
    return {
      method: 'typed-exit',
      called: false,
      exited: false,
      ms: 0,
      error: `no pane holds this session: nothing can type ${command} into it`,
    };
  const { tmuxSocket } = ctx.config.fleet;
  const typed = await type(tmuxSocket, target.paneId, command, ctx.config.probeTimeout);
  if (!typed.ok) return { method: 'typed-exit', called: false, exited: false, ms: Date.now() - started, error: typed.error };
  const exited = await confirm(ctx, target, started + ctx.config.windows.exitConfirm);
  return { method: 'typed-exit', called: true, exited, ms: Date.now() - started };
}

/**
 * A session that lived in a pane comes back in one: a new tmux window when `sunset resume` runs inside tmux (and
 * no socket of its own is configured), else a new detached tmux session on the configured socket, to attach to.
 */
export function resumeInTmux(config: Pick<Config, 'fleet'>, e: ResumeTarget, insideTmux: boolean): ResumeRun {
  const cwd = e.cwd ?? '.';
  if (insideTmux && !config.fleet.tmuxSocket) return { argv: ['tmux', 'new-window', '-c', cwd, '--', ...e.resume], attach: null };
  const name = `sunset-resume-${(e.id ?? e.sessionId).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)}`;
  const argv = tmuxArgv(config.fleet.tmuxSocket, 'new-session', '-d', '-s', name, '-c', cwd, '--', ...e.resume);
  return { argv, attach: tmuxArgv(config.fleet.tmuxSocket, 'attach', '-t', name).join(' ') };
}
