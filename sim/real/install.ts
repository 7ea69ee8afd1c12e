// The real Claude Code CLI for sunset's real-client tests: installed with npm into a cache folder outside
// the repo, once per machine, and never a dependency of the product.
//
//   const claude = await ensureClaudeCode();   // → …/node_modules/@anthropic-ai/claude-code/bin/claude.exe
//
// Folder: $SUNSET_CLAUDE_CODE_CACHE/<version> when that variable is set, else ~/.cache/sunset-claude-code/<version>.
// How it installs (one installer at a time, verified before it is put in place): sim/npm-install.ts.
//
// npm 11 does not run the package's postinstall (`node install.cjs`: "install scripts not yet covered by
// allowScripts"), and it does not need to: bin/claude.exe as unpacked is already the native binary (the
// same file as @anthropic-ai/claude-code-linux-x64/claude, which npm installs as an optional dependency).
// The package declares engines node >= 22; npm only warns (EBADENGINE) and the native binary does not
// use the local Node at all.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ensureNpmCli, npmInstallCommand, type NpmCli, VERSION_OK, versionOf } from '../npm-install.js';

/** The Claude Code version sunset's real-client tests are pinned to. */
export const CLAUDE_CODE_VERSION = '2.1.328';
export const CLAUDE_CODE_PACKAGE = '@anthropic-ai/claude-code';

/** The root folder holding one folder per version. */
export function claudeCodeCacheRoot(): string {
  const env = process.env.SUNSET_CLAUDE_CODE_CACHE;
  return env?.trim() ? env : join(homedir(), '.cache', 'sunset-claude-code');
}

/** The install folder of one version (an npm prefix). */
export function claudeCodeDir(version = CLAUDE_CODE_VERSION): string {
  return join(claudeCodeCacheRoot(), version);
}

const BIN = join('node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');

/** Where the binary of a version lives once installed. */
export function claudeCodeBinary(version = CLAUDE_CODE_VERSION): string {
  return join(claudeCodeDir(version), BIN);
}

/** The command a person runs to install a version by hand. */
export function installCommand(version = CLAUDE_CODE_VERSION): string {
  return npmInstallCommand({ dir: claudeCodeDir(version), pkg: CLAUDE_CODE_PACKAGE, version });
}

/**
 * Run `<binary> --version` with an empty private HOME (so nothing touches the real ~/.claude) and return
 * what it printed, or throw.
 */
export function claudeCodeVersionOf(binary: string): Promise<string> {
  const env = { DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
  return versionOf(binary, { env, timeoutMs: 30_000, prefix: 'sunset-cc-version-' });
}

function claudeCode(version: string): NpmCli {
  return {
    label: 'Claude Code',
    pkg: CLAUDE_CODE_PACKAGE,
    version,
    dir: claudeCodeDir(version),
    bin: BIN,
    versionOf: claudeCodeVersionOf,
    says: (out, v) => out.split(/\s+/)[0] === v, // "2.1.328 (Claude Code)"
    brokenHint: (tmp) =>
      `If only the postinstall is missing, run it by hand: (cd ${join(tmp, 'node_modules', '@anthropic-ai', 'claude-code')} && node install.cjs)`,
  };
}

/**
 * The path of the real Claude Code binary of `version`, installing it first when this machine has none.
 * Throws (never skips) when it cannot: the message says why and names the command to run by hand.
 */
export function ensureClaudeCode(version = CLAUDE_CODE_VERSION): Promise<string> {
  if (!VERSION_OK.test(version)) return Promise.reject(new Error(`ensureClaudeCode: bad version ${JSON.stringify(version)}`));
  return ensureNpmCli(claudeCode(version));
}
