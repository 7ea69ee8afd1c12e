// The real Claude Code CLI for sunset's real-client tests: installed with npm into a cache folder outside
// the repo, once per machine, and never a dependency of the product.
//
//   const claude = await ensureClaudeCode();   // → …/node_modules/@anthropic-ai/claude-code/bin/claude.exe
//
// Folder: $SUNSET_CLAUDE_CODE_CACHE/<version> when that variable is set, else ~/.cache/sunset-claude-code/<version>.
// Several vitest workers may call this at once: one installs (an O_EXCL lock file beside the folder), into a
// temporary folder that is renamed into place only once `claude.exe --version` answers the version; the
// others wait for the lock to go and then use the result.
//
// npm 11 does not run the package's postinstall (`node install.cjs`: "install scripts not yet covered by
// allowScripts"), and it does not need to: bin/claude.exe as unpacked is already the native binary (the
// same file as @anthropic-ai/claude-code-linux-x64/claude, which npm installs as an optional dependency).
// The package declares engines node >= 22; npm only warns (EBADENGINE) and the native binary does not
// use the local Node at all.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The Claude Code version sunset's real-client tests are pinned to. */
export const CLAUDE_CODE_VERSION = '2.1.328';
export const CLAUDE_CODE_PACKAGE = '@anthropic-ai/claude-code';

const VERSION_OK = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** The root folder holding one folder per version. */
export function claudeCodeCacheRoot(): string {
  const env = process.env.SUNSET_CLAUDE_CODE_CACHE;
  return env?.trim() ? env : join(homedir(), '.cache', 'sunset-claude-code');
}

/** The install folder of one version (an npm prefix). */
export function claudeCodeDir(version = CLAUDE_CODE_VERSION): string {
  return join(claudeCodeCacheRoot(), version);
}

/** Where the binary of a version lives once installed. */
export function claudeCodeBinary(version = CLAUDE_CODE_VERSION): string {
  return binaryIn(claudeCodeDir(version));
}

function binaryIn(prefix: string): string {
  return join(prefix, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
}

/** The command a person runs to install a version by hand. */
export function installCommand(version = CLAUDE_CODE_VERSION): string {
  return `npm install --prefix ${claudeCodeDir(version)} --no-save --no-audit --no-fund ${CLAUDE_CODE_PACKAGE}@${version}`;
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  error?: Error;
}

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ code: null, signal: null, stdout, stderr, error: e as Error });
      return;
    }
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, stdout, stderr, error: e });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Run `<binary> --version` with an empty private HOME (so nothing touches the real ~/.claude) and return
 * what it printed, or throw.
 */
export async function claudeCodeVersionOf(binary: string): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'sunset-cc-version-'));
  try {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      LANG: process.env.LANG ?? 'C.UTF-8',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    const r = await run(binary, ['--version'], { env, cwd: home, timeoutMs: 30_000 });
    if (r.error) throw r.error;
    if (r.code !== 0) throw new Error(`${binary} --version exited ${r.code ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(0, 500)}`);
    return r.stdout.trim();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function verify(binary: string, version: string): Promise<void> {
  if (!existsSync(binary)) throw new Error(`${binary} does not exist`);
  const out = await claudeCodeVersionOf(binary);
  // "2.1.328 (Claude Code)"
  if (out.split(/\s+/)[0] !== version) throw new Error(`${binary} --version printed ${JSON.stringify(out)}, expected ${version}`);
}

const NETWORK =
  /E(?:NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)|ETIMEDOUT|network|getaddrinfo|socket hang up|request to .* failed/i;

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Take the O_EXCL lock file; false when another live installer holds it. A stale lock (dead pid, > 20 min) is broken. */
function tryLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o644);
      writeSync(fd, JSON.stringify({ pid: process.pid, at: Date.now() }));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let stale = false;
    try {
      const held = JSON.parse(readFileSync(lock, 'utf8')) as { pid?: number; at?: number };
      stale = !pidAlive(Number(held.pid)) || Date.now() - Number(held.at ?? 0) > 20 * 60_000;
    } catch {
      // being written right now, or garbage: garbage older than 10 s is stale
      try {
        stale = Date.now() - statSync(lock).mtimeMs > 10_000;
      } catch {
        stale = false; // gone meanwhile: try again
      }
    }
    if (!stale) return false;
    rmSync(lock, { force: true });
  }
  return false;
}

const memo = new Map<string, Promise<string>>();

/**
 * The path of the real Claude Code binary of `version`, installing it first when this machine has none.
 * Throws (never skips) when it cannot: the message says why and names the command to run by hand.
 */
export function ensureClaudeCode(version = CLAUDE_CODE_VERSION): Promise<string> {
  if (!VERSION_OK.test(version)) return Promise.reject(new Error(`ensureClaudeCode: bad version ${JSON.stringify(version)}`));
  const key = `${claudeCodeCacheRoot()}\0${version}`;
  let p = memo.get(key);
  if (!p) {
    p = ensure(version);
    memo.set(key, p);
    p.catch(() => memo.delete(key));
  }
  return p;
}

async function ensure(version: string): Promise<string> {
  const dir = claudeCodeDir(version);
  const binary = binaryIn(dir);
  if (existsSync(binary)) {
    try {
      await verify(binary, version);
      return binary;
    } catch {
      /* broken: reinstall below */
    }
  }
  const root = dirname(dir);
  mkdirSync(root, { recursive: true });
  const lock = join(root, `.${version}.lock`);
  const deadline = Date.now() + 20 * 60_000;
  while (!tryLock(lock)) {
    if (Date.now() > deadline)
      throw new Error(`ensureClaudeCode: another process has held ${lock} for 20 minutes; remove it if no install is running`);
    await new Promise((r) => setTimeout(r, 500));
  }
  try {
    // another worker may have finished while we waited for the lock
    if (existsSync(binary)) {
      try {
        await verify(binary, version);
        return binary;
      } catch {
        /* still broken */
      }
    }
    const tmp = join(root, `.install-${version}-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(tmp, { recursive: true });
    try {
      const args = [
        'install',
        '--prefix',
        tmp,
        '--no-save',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        '--loglevel=error',
        '--fetch-timeout=60000',
        '--fetch-retries=1',
        '--fetch-retry-mintimeout=2000',
        '--fetch-retry-maxtimeout=5000',
        `${CLAUDE_CODE_PACKAGE}@${version}`,
      ];
      const r = await run('npm', args, { cwd: tmp, env: { ...process.env, npm_config_update_notifier: 'false' }, timeoutMs: 15 * 60_000 });
      if (r.error || r.code !== 0) {
        const said = `${r.error?.message ?? ''}\n${r.stderr}\n${r.stdout}`.trim();
        const lines = said.split('\n').filter(Boolean);
        const telling = lines.filter((l) => /\b(code|errno|request to|network|ERR!)\b/i.test(l) && !/complete log/.test(l)).slice(0, 4);
        const tail = (telling.length ? telling : lines.slice(-6)).join('\n');
        const unreachable = NETWORK.test(said) || r.signal === 'SIGKILL';
        throw new Error(
          (unreachable
            ? `Claude Code ${version} is not installed in ${dir}, and the npm registry cannot be reached to install it.`
            : `Claude Code ${version} is not installed in ${dir}, and \`npm install\` failed (exit ${r.code ?? r.signal ?? r.error?.message}).`) +
            `\nInstall it by hand: ${installCommand(version)}\nnpm said:\n${tail}`,
        );
      }
      const got = binaryIn(tmp);
      try {
        await verify(got, version);
      } catch (e) {
        throw new Error(
          `Claude Code ${version} was installed by npm but does not run: ${(e as Error).message}.\n` +
            `If only the postinstall is missing, run it by hand: (cd ${join(tmp, 'node_modules', '@anthropic-ai', 'claude-code')} && node install.cjs)\n` +
            `Or install by hand: ${installCommand(version)}`,
        );
      }
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true }); // broken (verified above)
      renameSync(tmp, dir);
      await verify(binary, version);
      return binary;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  } finally {
    rmSync(lock, { force: true });
  }
}
