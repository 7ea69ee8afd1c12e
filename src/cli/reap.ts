import { runReap, type ReapLine } from '../cap/reap.js';
import { formatDuration } from '../duration.js';
import { createLogger } from '../log.js';
import { EXIT, config, type Command } from './common.js';

export const reapCommand: Command = {
  name: 'reap',
  summary: 'remove tmux sessions whose every pane has been dead for windows.reapAfter',
  usage: `usage: sunset reap [--dry-run] [--json] [--config FILE]

Removes the tmux sessions on fleet.tmuxSocket whose every pane has been dead (remain-on-exit
leftovers) for at least windows.reapAfter, re-checking each in the same tmux command that
removes it. A session with any live pane is never touched; no process is ended. Prints what
it removed (or, with --dry-run, would remove). It also runs with each expire scan.

Exit codes: 0 done, 1 tmux failed, 2 bad usage or config.`,
  options: { 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
  async run({ values }, io) {
    const cfg = config(values, io);
    const r = await runReap(cfg, { dryRun: Boolean(values['dry-run']), log: createLogger('silent') });
    if (values.json) io.out(JSON.stringify(r, null, 2));
    else {
      for (const l of r.lines) io.out(reapLine(l));
      if (!r.ok && r.error) io.err(`sunset reap: ${r.error}`);
      if (r.ok && !r.lines.length) io.err('sunset reap: no tmux session has been all-dead for windows.reapAfter; nothing to remove');
    }
    return r.ok ? EXIT.ok : EXIT.failure;
  },
};

export function reapLine(l: ReapLine): string {
  const what = `${l.sessionId.padEnd(5)} ${JSON.stringify(l.sessionName)} (${l.panes} pane${l.panes === 1 ? '' : 's'}, all dead for ${formatDuration(l.deadMs)})`;
  if (l.action === 'kept') return `kept          ${what}: a pane came back before removal`;
  if (l.action === 'failed') return `failed        ${what}: ${l.error}`;
  return `${l.action.padEnd(13)} ${what}`;
}
