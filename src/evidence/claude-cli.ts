// Is the `claude` CLI there to run? sunset runs it for the roster (`claude agents --json --all`, unless it reads
// the daemon's files) and for a background session's exit (`claude stop`). When it is missing, `sunset up` says
// so once — what is missing and what sunset does meanwhile — and not at every sweep, scan or job that finds the
// roster failing for that same reason.
import { whichFile } from '../which.js';
import type { Logger } from '../log.js';

/** The command's path: itself when it names a path, else the first executable file of that name on PATH; null: none. */
export function findCommand(command: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | null {
  return whichFile(command, env, cwd);
}

/** The commands of the `claude` CLI this config runs (its claudeCommand, its roster's) that cannot be found. Unique. */
export function missingClaude(
  fleet: { claudeCommand: string; rosterCommand: readonly string[]; rosterFrom?: string },
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const wanted = [fleet.claudeCommand, ...(fleet.rosterFrom === 'files' ? [] : [fleet.rosterCommand[0] ?? ''])].filter(Boolean);
  return [...new Set(wanted)].filter((c) => findCommand(c, env) === null);
}

/** A run that failed because its command could not be found (execa's ENOENT at spawn). */
export function commandMissing(error: string): boolean {
  return /\bENOENT\b/.test(error) && /\bspawn\b/.test(error);
}

/** The one line `sunset up` says about a missing CLI. */
export function missingClaudeLine(commands: readonly string[], env: NodeJS.ProcessEnv = process.env): string {
  const names = commands.map((c) => JSON.stringify(c)).join(' and ');
  return `the Claude Code CLI (${names}) is not installed or not on PATH (${env.PATH ?? 'PATH unset'}): sunset cannot read the roster from it or ask a background session to leave by \`claude stop\`; meanwhile it protects — no session is asked to leave on a roster it cannot read, and none is stopped by the CLI — install Claude Code, or set claudeCommand / fleet.rosterCommand to where it is. Said once; it is used as soon as it is there.`;
}

const said = new WeakMap<Logger, Set<string>>();

/** Run `say` the first time `key` comes up for this logger (one process's `up`: the same logger throughout). */
export function onceFor(log: Logger, key: string, say: () => void): boolean {
  let keys = said.get(log);
  if (!keys) said.set(log, (keys = new Set()));
  if (keys.has(key)) return false;
  keys.add(key);
  say();
  return true;
}

/** Say the missing CLI once for this logger (event claude:missing); true when it was said now. */
export function sayClaudeMissing(log: Logger, commands: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  return onceFor(log, 'claude:missing', () =>
    log.warn({ event: 'claude:missing', commands: [...commands] }, missingClaudeLine(commands, env)),
  );
}
