// The real agent CLIs of sim/agents/ (Codex, Gemini CLI, …), installed with npm into a cache folder outside
// the repo, once per machine, never a dependency of the product: what sim/real/install.ts is for Claude Code,
// by the same installer (sim/npm-install.ts).
//
//   const bin = await ensureAgentCli(SPECS.codex);   // → ~/.cache/sunset-codex/0.171.0/node_modules/@openai/codex/bin/codex.js
//
// Folder: $SUNSET_AGENTS_CACHE/<cli>/<version> when that variable is set, else ~/.cache/sunset-<cli>/<version>.
import { existsSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNpmCli, npmInstallCommand, VERSION_OK, versionOf } from '../npm-install.js';

export interface InstallSpec {
  /** short name: the cache folder is sunset-<cli> */
  cli: string;
  /** the npm package */
  pkg: string;
  /** the pinned version */
  version: string;
  /** the entry point inside the install prefix (the package's `bin`) */
  bin: string;
  /** files npm unpacks without their execute bit that the CLI runs (made executable after install) */
  chmod?: string[];
}

export function agentCacheRoot(cli: string): string {
  const env = process.env.SUNSET_AGENTS_CACHE;
  return env?.trim() ? join(env, cli) : join(homedir(), '.cache', `sunset-${cli}`);
}

export function agentCliDir(s: InstallSpec): string {
  return join(agentCacheRoot(s.cli), s.version);
}

export function agentCliBinary(s: InstallSpec): string {
  return join(agentCliDir(s), s.bin);
}

export function agentInstallCommand(s: InstallSpec): string {
  return npmInstallCommand({ dir: agentCliDir(s), pkg: s.pkg, version: s.version });
}

/** `<binary> --version` with an empty private HOME; what it printed on stdout, or throw. */
export function agentCliVersionOf(binary: string): Promise<string> {
  // not under /tmp: Codex refuses to set up its helper links under a temp dir and says so on stderr
  const homeBase = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
  return versionOf(binary, { env: { NO_UPDATE_NOTIFIER: '1' }, homeBase, timeoutMs: 60_000, prefix: 'sunset-agent-version-' });
}

/**
 * The path of the CLI's entry point at the pinned version, installing it first when this machine has none.
 * Throws (never skips) when it cannot: the message says why and names the command to run by hand.
 */
export function ensureAgentCli(s: InstallSpec): Promise<string> {
  if (!VERSION_OK.test(s.version) || !/^[a-z0-9-]+$/.test(s.cli))
    return Promise.reject(new Error(`ensureAgentCli: bad spec ${JSON.stringify(s)}`));
  return ensureNpmCli({
    label: s.pkg,
    pkg: s.pkg,
    version: s.version,
    dir: agentCliDir(s),
    bin: s.bin,
    ...(s.chmod ? { chmod: s.chmod } : {}),
    versionOf: agentCliVersionOf,
    // "codex-cli 0.171.0", "0.61.0", "GitHub Copilot CLI 1.0.102."
    says: (out, v) => out.split(/\s+/).some((w) => w.replace(/\.$/, '') === v),
  });
}
