// The real agent CLIs of sim/agents/ (Codex, Gemini CLI, …), installed with npm into a cache folder outside
// the repo, once per machine, never a dependency of the product: what sim/real/install.ts is for Claude Code.
//
//   const bin = await ensureAgentCli(SPECS.codex);   // → ~/.cache/sunset-codex/0.171.0/node_modules/@openai/codex/bin/codex.js
//
// Folder: $SUNSET_AGENTS_CACHE/<cli>/<version> when that variable is set, else ~/.cache/sunset-<cli>/<version>.
// Several vitest workers may call this at once: one installs (an O_EXCL lock file beside the folder) into a
// temporary folder that is renamed into place only once `<bin> --version` answers the pinned version; the
// others wait for the lock to go and use the result.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

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

const VERSION_OK = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

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
  return `npm install --prefix ${agentCliDir(s)} --no-save --no-audit --no-fund ${s.pkg}@${s.version}`;
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

/** `<binary> --version` with an empty private HOME; what it printed on stdout, or throw. */
export async function agentCliVersionOf(binary: string): Promise<string> {
  // not under /tmp: Codex refuses to set up its helper links under a temp dir and says so on stderr
  const home = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'sunset-agent-version-'));
  try {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      LANG: process.env.LANG ?? 'C.UTF-8',
      NO_UPDATE_NOTIFIER: '1',
    };
    const r = await run(binary, ['--version'], { env, cwd: home, timeoutMs: 60_000 });
    if (r.error) throw r.error;
    if (r.code !== 0) throw new Error(`${binary} --version exited ${r.code ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(0, 500)}`);
    return r.stdout.trim();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function verify(binary: string, version: string): Promise<void> {
  if (!existsSync(binary)) throw new Error(`${binary} does not exist`);
  const out = await agentCliVersionOf(binary);
  // "codex-cli 0.171.0", "0.61.0", "GitHub Copilot CLI 1.0.102."
  if (!out.split(/\s+/).some((w) => w.replace(/\.$/, '') === version))
    throw new Error(`${binary} --version printed ${JSON.stringify(out)}, expected ${version}`);
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
      try {
        stale = Date.now() - statSync(lock).mtimeMs > 10_000;
      } catch {
        stale = false;
      }
    }
    if (!stale) return false;
    rmSync(lock, { force: true });
  }
  return false;
}

const memo = new Map<string, Promise<string>>();

/**
 * The path of the CLI's entry point at the pinned version, installing it first when this machine has none.
 * Throws (never skips) when it cannot: the message says why and names the command to run by hand.
 */
export function ensureAgentCli(s: InstallSpec): Promise<string> {
  if (!VERSION_OK.test(s.version) || !/^[a-z0-9-]+$/.test(s.cli))
    return Promise.reject(new Error(`ensureAgentCli: bad spec ${JSON.stringify(s)}`));
  const key = `${agentCacheRoot(s.cli)}\0${s.version}`;
  let p = memo.get(key);
  if (!p) {
    p = ensure(s);
    memo.set(key, p);
    p.catch(() => memo.delete(key));
  }
  return p;
}

async function ensure(s: InstallSpec): Promise<string> {
  const dir = agentCliDir(s);
  const binary = join(dir, s.bin);
  if (existsSync(binary)) {
    try {
      await verify(binary, s.version);
      return binary;
    } catch {
      /* broken: reinstall below */
    }
  }
  const root = dirname(dir);
  mkdirSync(root, { recursive: true });
  const lock = join(root, `.${s.version}.lock`);
  const deadline = Date.now() + 20 * 60_000;
  while (!tryLock(lock)) {
    if (Date.now() > deadline)
      throw new Error(`ensureAgentCli: another process has held ${lock} for 20 minutes; remove it if no install is running`);
    await new Promise((r) => setTimeout(r, 500));
  }
  try {
    if (existsSync(binary)) {
      try {
        await verify(binary, s.version);
        return binary;
      } catch {
        /* still broken */
      }
    }
    const tmp = join(root, `.install-${s.version}-${process.pid}-${randomBytes(4).toString('hex')}`);
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
        `${s.pkg}@${s.version}`,
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
            ? `${s.pkg} ${s.version} is not installed in ${dir}, and the npm registry cannot be reached to install it.`
            : `${s.pkg} ${s.version} is not installed in ${dir}, and \`npm install\` failed (exit ${r.code ?? r.signal ?? r.error?.message}).`) +
            `\nInstall it by hand: ${agentInstallCommand(s)}\nnpm said:\n${tail}`,
        );
      }
      // npm 11 runs no install scripts and keeps the mode bits of the tarball: some ship helpers without +x
      for (const f of s.chmod ?? []) if (existsSync(join(tmp, f))) chmodSync(join(tmp, f), 0o755);
      await verify(join(tmp, s.bin), s.version).catch((e: Error) => {
        throw new Error(
          `${s.pkg} ${s.version} was installed by npm but does not run: ${e.message}.\nInstall it by hand: ${agentInstallCommand(s)}`,
        );
      });
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      await verify(binary, s.version);
      return binary;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  } finally {
    rmSync(lock, { force: true });
  }
}
