// A background Claude Code session (`claude --bg`, a row with a short id): it leaves by `claude stop <id>`, which
// lets it flush its transcript and end; it comes back with `claude --resume <sessionId>`, run where `sunset
// resume` runs. No pane holds it, so nothing is ever typed into one.
import { unsafeId } from '../doctrine/ids.js';
import { CLAUDE_CODE, claudeAsk, claudeResumeCommand, claudeStop } from './claude-code.js';
import { processEnded } from './process-end.js';
import type { ExitContext, ExitOutcome, ExitPath, ExitTarget } from './types.js';

async function leave(ctx: ExitContext, target: ExitTarget): Promise<ExitOutcome> {
  const started = Date.now();
  // a last check before the id becomes an argv word (the verdict protects such a session already: id-unsafe)
  const bad = unsafeId(target.id ?? '');
  if (bad) return { method: 'claude-stop', called: false, exited: false, ms: 0, error: `refused: ${bad}` };
  const r = await claudeStop(ctx, target.id!);
  const exited = await claudeBackground.confirm(ctx, target, started + ctx.config.windows.exitConfirm);
  return { method: 'claude-stop', called: true, exited, ms: Date.now() - started, ...(r.ok || exited ? {} : { error: r.error }) };
}

export const claudeBackground: ExitPath = {
  name: 'claude-background',
  agent: CLAUDE_CODE,
  kind: 'background',
  how: 'claude stop',
  method: 'claude-stop',
  needsPane: false,
  passesId: true,
  keepsTranscript: true,
  ask: (ctx, view, msg) => claudeAsk(ctx, view, msg, null),
  leave,
  confirm: processEnded,
  resumeCommand: claudeResumeCommand,
  resumeArgv: (_config, e) => ({ argv: e.resume, attach: null }),
};
