// The exit path of an agent CLI beside Claude Code (src/agents/clis.ts: Codex, Gemini CLI), a session of it in a tmux
// pane: asked by the one message typed into its empty input box, it leaves by its quit command typed there (`/quit`),
// is seen gone by its process ending, and comes back by its own resume (`codex resume <id>`, `gemini --resume <id>`)
// in its folder, in a tmux window of its own. Nothing is typed over a person's draft (draft and words would go to the
// model as one message, and `/quit` over a draft does not quit), nor while its box is not shown (a permission dialog
// takes the keys: `/quit` + Enter there chose "Allow once" on Gemini CLI). Both TUIs lost keys typed mid-redraw, so
// every line is typed with the box checked before and after Enter (pane-typing.ts). docs/agents/<cli>.md.
import type { Config } from '../config.js';
import type { AgentCli } from './agent-cli.js';
import { agentConfigOf } from './clis.js';
import { typeChecked } from './pane-typing.js';
import { processEnded } from './process-end.js';
import { askInPane, type PaneTyper, paneDraft, quitInPane, resumeInTmux } from './tmux-pane.js';
import type { ExitPath } from './types.js';

/** The interactive exit path of one agent CLI of the table, its input box read by the CLI's own rule (cli.inputBox). */
export function agentInteractive(cli: AgentCli): ExitPath {
  const readBox = cli.inputBox ?? (() => ({ found: false, draft: '' }));
  const typeIntoBox: PaneTyper = (socket, paneId, text, timeoutMs) => typeChecked(socket, paneId, text, readBox, { timeoutMs });
  const path: ExitPath = {
    name: `${cli.name}-interactive`,
    agent: cli.name,
    kind: 'interactive',
    how: `${cli.quit} typed into its pane`,
    method: 'typed-exit',
    needsPane: true,
    passesId: false,
    keepsTranscript: false,
    ask: (ctx, view, msg) => askInPane(ctx, view, msg.text, path, typeIntoBox),
    leave: (ctx, target) => quitInPane(ctx, target, cli.quit, processEnded, typeIntoBox),
    confirm: processEnded,
    resumeCommand: (config: Pick<Config, 'fleet'>, sessionId: string) =>
      cli.resumeCommand(agentConfigOf(config, cli) ?? cli.defaults, sessionId),
    resumeArgv: resumeInTmux,
    draft: (ctx, view) => paneDraft(ctx, view.evidence.pane?.paneId ?? null, cli.draftOnScreen),
    draftOnScreen: cli.draftOnScreen,
  };
  return path;
}
