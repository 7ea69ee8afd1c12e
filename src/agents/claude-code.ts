// What Claude Code's two exit paths share: `claude stop <id>` (a background session's own exit), the one
// message by fleet.askVia (its messaging socket, else its inbox folder; docs/claude-code.md), and
// `claude --resume <sessionId>` (fleet.resumeCommand overrides it).
import type { Config } from '../config.js';
import type { SessionView } from '../evidence/fleet.js';
import { errorMessage } from '../errors.js';
import { sendUserMessage } from '../pipeline/socket.js';
import { run } from '../run.js';
import { askInInbox } from './inbox.js';
import type { AskMessage, Delivered, ExitContext } from './types.js';

export const CLAUDE_CODE = 'claude-code';

/** `<claude> stop <id>`: one argv word for the id, which the caller has checked (unsafeId). */
export async function claudeStop(ctx: ExitContext, id: string) {
  const { claudeCommand } = ctx.config.fleet;
  const r = await run([claudeCommand, 'stop', id], { timeoutMs: ctx.config.probeTimeout });
  return r.ok ? r : { ...r, error: `${claudeCommand} stop failed: ${r.error}${r.stderr.trim() ? ` (${r.stderr.trim()})` : ''}` };
}

/**
 * The one message, by fleet.askVia: over the session's messaging socket (`socket`; `auto` where it names one), so
 * its model reads it; else a file in its inbox folder (`inbox`; `auto`'s fallback); `pane` is the path's own
 * typing (none: no pane holds a background session).
 */
export async function claudeAsk(
  ctx: ExitContext,
  view: SessionView,
  msg: AskMessage,
  inPane: (() => Promise<Delivered>) | null,
): Promise<Delivered> {
  const how = ctx.config.fleet.askVia;
  if (how === 'pane') return inPane ? inPane() : { ok: false, via: 'pane', why: 'no pane holds this session' };
  const socket = view.evidence.socket;
  if (how === 'socket' || (how === 'auto' && socket)) {
    if (!socket) return { ok: false, via: 'socket', why: 'the session names no messaging socket (~/.claude/sessions/<pid>.json)' };
    try {
      await sendUserMessage(socket, msg.text, ctx.config.probeTimeout);
      return { ok: true, via: 'socket', path: socket };
    } catch (err) {
      return { ok: false, via: 'socket', why: errorMessage(err) };
    }
  }
  return askInInbox(ctx, view, msg);
}

/** `claude --resume <sessionId>`, or fleet.resumeCommand with `{sessionId}` filled. */
export function claudeResumeCommand(config: Pick<Config, 'fleet'>, sessionId: string): string[] {
  const argv = config.fleet.resumeCommand ?? [config.fleet.claudeCommand, '--resume', '{sessionId}'];
  return argv.map((w) => w.replace(/\{sessionId\}/g, sessionId));
}
