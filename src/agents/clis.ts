// The agent CLIs sunset reads beside Claude Code, one line each (src/agents/<cli>.ts). Claude Code is not here: its
// sessions come from its own roster (src/evidence/roster.ts). fleet.agents in the config picks which are read and
// where each lives. A new CLI is a file beside these and a line below; its exit path is made from that line (index.ts).
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { Config } from '../config.js';
import { whichFile } from '../which.js';
import type { AgentCli, AgentCliConfig } from './agent-cli.js';
import { codex } from './codex.js';
import { gemini } from './gemini.js';

export const AGENT_CLIS: Record<string, AgentCli> = { codex, gemini };

export function agentCliOf(name: string): AgentCli | null {
  return Object.hasOwn(AGENT_CLIS, name) ? AGENT_CLIS[name] : null;
}

/**
 * Where one CLI lives by the config: fleet.agents.<name> over its defaults; null when it is not read (false in the
 * config, or not named there and its command not on PATH).
 */
export function agentConfigOf(config: Pick<Config, 'fleet'>, cli: AgentCli, env: NodeJS.ProcessEnv = process.env): AgentCliConfig | null {
  const set = Object.hasOwn(config.fleet.agents, cli.name) ? config.fleet.agents[cli.name] : undefined;
  if (set === false) return null;
  const home = set?.home ?? resolve(cli.defaults.home.replace(/^~(?=$|\/)/, homedir()));
  const command = set?.command ?? cli.defaults.command;
  if (!set && !whichFile(command, env, process.cwd())) return null;
  return { command, home };
}

/** Every CLI that is read, with where it lives. */
export function agentsRead(config: Pick<Config, 'fleet'>, env: NodeJS.ProcessEnv = process.env): { cli: AgentCli; cfg: AgentCliConfig }[] {
  return Object.values(AGENT_CLIS).flatMap((cli) => {
    const cfg = agentConfigOf(config, cli, env);
    return cfg ? [{ cli, cfg }] : [];
  });
}
