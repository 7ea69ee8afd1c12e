// The exit paths, one line each: which agent CLI and kind of session each serves. The pipeline finds a
// session's path here (exitPathOf) and never asks which kind it holds. A new path is a file beside these and one
// line below; another agent CLI is a file and its line in AGENT_CLIS (clis.ts), whose interactive path is made here
// from it. (docs/pipeline.md, "Exit paths")
import { claudeBackground } from './claude-background.js';
import { claudeInteractive } from './claude-interactive.js';
import { CLAUDE_CODE } from './claude-code.js';
import { agentInteractive } from './agent-interactive.js';
import type { AgentCli } from './agent-cli.js';
import { AGENT_CLIS, agentCliOf } from './clis.js';
import type { ExitPath } from './types.js';

/** The interactive path of each agent CLI of the table, made once (a CLI added to the table later gets one too). */
const agentPaths = new WeakMap<AgentCli, ExitPath>();
function agentPath(cli: AgentCli): ExitPath {
  let p = agentPaths.get(cli);
  if (!p) agentPaths.set(cli, (p = agentInteractive(cli)));
  return p;
}

export const EXIT_PATHS: Readonly<Record<string, ExitPath>> = {
  'claude-background': claudeBackground,
  'claude-interactive': claudeInteractive,
  // every agent CLI of the table, in a tmux pane: asked and quit by typing into its box (agent-interactive.ts)
  ...Object.fromEntries(Object.values(AGENT_CLIS).map((cli) => [`${cli.name}-interactive`, agentPath(cli)])),
};

/**
 * A session's exit path, by its agent CLI (absent: Claude Code) and its kind. None when that cannot be told (the
 * roster did not say its kind, or no path serves its agent): such a session is protected (kind-unknown), and no
 * person's override reaches it.
 */
export function exitPathOf(s: { kind: string | null; agent?: string | null }): ExitPath | null {
  const agent = s.agent ?? CLAUDE_CODE;
  const listed = Object.values(EXIT_PATHS).find((p) => p.agent === agent && p.kind === s.kind);
  if (listed) return listed;
  const cli = agent === CLAUDE_CODE ? null : agentCliOf(agent);
  return cli && s.kind === 'interactive' ? agentPath(cli) : null;
}
