// What became of an exit request, in a person's words: `sunset exit --wait` and the web's exit poll
// (GET /api/exit/<jobId>) say it the same way. Apart from exit.ts so that the web need not load the command.
import { REASONS, type Reason } from '../doctrine/verdict.js';
import type { ExitRecord } from '../store/ledger.js';
import { formatDuration } from '../duration.js';

const reasonText = (r: string) => REASONS[r as Reason] ?? r;

/**
 * What became of an exit request, in a person's words: `sunset exit --wait` prints it, and the web page
 * shows it for the exit it requested (GET /api/exit/<jobId>). `exitConfirm` is how long the worker waited.
 */
export function outcomeWords(
  rec: Pick<ExitRecord, 'outcome' | 'method' | 'error' | 'reasons' | 'label' | 'id' | 'sessionId'> & { ms?: number; agent?: unknown },
  exitConfirm?: number,
): string {
  const who = rec.label ?? rec.id ?? rec.sessionId.slice(0, 8);
  // Claude Code's interactive sessions leave by /exit; the other agent CLIs by /quit (src/agents/agent-interactive.ts)
  const quit = typeof rec.agent === 'string' && rec.agent !== 'claude-code' ? '/quit' : '/exit';
  const how =
    rec.method === 'typed-exit'
      ? `${quit} typed into its pane`
      : rec.method === 'claude-stop'
        ? 'claude stop'
        : (rec.method ?? 'its own exit path');
  const waited = exitConfirm ? ` (${formatDuration(exitConfirm)}, windows.exitConfirm)` : '';
  const reasons = (rec.reasons ?? []).map(reasonText).join('; ');
  switch (rec.outcome) {
    case 'exited':
      return `session ${who} exited: it left by its own exit path (${how}); its conversation can be resumed (sunset exited)`;
    case 'still-running':
      return `session ${who} is still running: it was asked to leave (${how}) and had not left when sunset stopped waiting${waited}${rec.error ? ` — ${rec.error}` : ''}. sunset does not force it: a person decides (docs/operations.md, "each exit outcome")`;
    case 'failed':
      return `session ${who} was not exited: its exit path could not be taken (${rec.error ?? 'unknown error'}); nothing was done to it`;
    case 'refused':
      return `session ${who} was not exited: re-checked just before acting, it was refused${reasons ? ` (${reasons})` : ''}; nothing was done to it`;
    case 'spared':
      return `session ${who} was spared: re-checked just before acting${reasons ? ` (${reasons})` : ''}; nothing was done to it`;
    case 'gone':
      return `session ${who} was not running any more: nothing to exit`;
    default:
      return `session ${who}: no outcome yet`;
  }
}
