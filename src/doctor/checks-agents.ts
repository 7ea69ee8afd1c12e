// `sunset doctor`'s check of the agent CLIs beside Claude Code (src/agents/clis.ts): which are read, where each
// lives, and which are not installed or turned off (fleet.agents). It reads; it runs none of them.
import { existsSync } from 'node:fs';
import { AGENT_CLIS, agentConfigOf } from '../agents/clis.js';
import { whichFile } from '../which.js';
import { type DoctorContext, type Finding, ok, warn } from './finding.js';

export function checkAgents({ config: c, env, cwd }: DoctorContext): Finding {
  const read: string[] = [];
  const off: string[] = [];
  const bad: string[] = [];
  for (const cli of Object.values(AGENT_CLIS)) {
    const cfg = agentConfigOf(c, cli, env);
    if (!cfg) {
      off.push(`${cli.name} (${c.fleet.agents[cli.name] === false ? 'turned off' : `${cli.defaults.command} not on PATH`})`);
      continue;
    }
    const path = whichFile(cfg.command, env, cwd);
    if (!path)
      bad.push(
        `${cli.name}: its command ${JSON.stringify(cfg.command)} is not found (its sessions are still found, but resume cannot run it)`,
      );
    else if (!existsSync(cfg.home)) bad.push(`${cli.name}: its home ${cfg.home} does not exist yet (no session has run as this user)`);
    read.push(`${cli.name} (${path ?? cfg.command}, ${cfg.home})`);
  }
  const says = `agent CLIs read beside Claude Code: ${read.length ? read.join(', ') : 'none'}${off.length ? `; not read: ${off.join(', ')}` : ''}`;
  if (bad.length)
    return warn(`${says}. ${bad.join('; ')}`, 'set fleet.agents.<name>.command / .home to where it is (docs/agents/README.md)');
  return ok(says);
}
