// An interactive Claude Code session (`claude` in a tmux pane; a row with no short id): it leaves by `/exit`
// typed into its pane, which lets it flush its transcript and end; it comes back with `claude --resume
// <sessionId>` in a new tmux window. A person's draft in its input box is in the way of anything typed.
// `/exit` can send a session to the background instead of ending it (a setting of the CLI): the same session
// then lives on as a background row with a new pid, and `claude stop` finishes it — still this path's exit.
import { unsafeId } from '../doctrine/ids.js';
import { readRoster } from '../evidence/roster.js';
import { draftOnScreen } from '../evidence/tmux.js';
import { CLAUDE_CODE, claudeAsk, claudeResumeCommand, claudeStop } from './claude-code.js';
import { alive, processEnded } from './process-end.js';
import { askInPane, paneDraft, quitInPane, resumeInTmux } from './tmux-pane.js';
import type { ExitContext, ExitOutcome, ExitPath, ExitTarget } from './types.js';

async function leave(ctx: ExitContext, target: ExitTarget): Promise<ExitOutcome> {
  const started = Date.now();
  const typed = await quitInPane(ctx, target, '/exit', claudeInteractive.confirm);
  if (!typed.exited) return typed;

  // The successor's row can lag the old process's end (or a roster read fail): while the roster still shows
  // this session with no live successor (its old pid, no pid yet) or does not answer, look again, up to
  // windows.starting.
  const { config } = ctx;
  const successor = await findSuccessor(ctx, target, Date.now() + config.windows.starting);
  if (!successor) return { method: 'typed-exit', called: true, exited: true, ms: Date.now() - started };
  const r = await claudeStop(ctx, successor.id);
  const deadline = Math.max(started + config.windows.exitConfirm, Date.now() + config.windows.exitConfirm / 2);
  const exited = await claudeInteractive.confirm(ctx, successor, deadline);
  return {
    method: 'typed-exit+claude-stop',
    called: true,
    exited,
    ms: Date.now() - started,
    ...(r.ok || exited ? {} : { error: r.error }),
  };
}

type Successor = { id: string; pid: number; startedAt: string | null };

async function findSuccessor(ctx: ExitContext, target: ExitTarget, until: number): Promise<Successor | null> {
  const { config } = ctx;
  for (;;) {
    const roster = await (ctx.roster ? ctx.roster() : readRoster(config.fleet.rosterCommand, config.probeTimeout));
    const same = roster.ok ? roster.rows.filter((r) => (target.id !== null && r.id === target.id) || r.sessionId === target.sessionId) : [];
    const next = same.find((r) => r.pid !== null && r.pid !== target.pid && r.kind === 'background');
    if (next) {
      if (next.id === null || unsafeId(next.id) || !(await alive(next.pid!, next.startedAt))) return null;
      return { id: next.id, pid: next.pid!, startedAt: next.startedAt };
    }
    // the session is off the roster (or a pid-less record of a job that is over): it ended
    const pending = !roster.ok || same.some((r) => r.pid === target.pid || (r.pid === null && r.raw.status != null));
    if (!pending || Date.now() >= until) return null;
    await new Promise((r) => setTimeout(r, Math.max(ctx.poll ?? 50, 100)));
  }
}

export const claudeInteractive: ExitPath = {
  name: 'claude-interactive',
  agent: CLAUDE_CODE,
  kind: 'interactive',
  how: '/exit typed into its pane',
  method: 'typed-exit',
  needsPane: true,
  passesId: false,
  keepsTranscript: true,
  ask: (ctx, view, msg) => claudeAsk(ctx, view, msg, () => askInPane(ctx, view, msg.text, claudeInteractive)),
  leave,
  confirm: processEnded,
  resumeCommand: claudeResumeCommand,
  resumeArgv: resumeInTmux,
  draft: (ctx, view) => paneDraft(ctx, view.evidence.pane?.paneId ?? null, draftOnScreen),
  draftOnScreen,
};
