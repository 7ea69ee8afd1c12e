// A real agent CLI from npm (Claude Code for sim/real/, Codex and Gemini CLI for sim/agents/), installed into a
// cache folder outside the repo, once per machine, never a dependency of the product. Several vitest workers
// may ask at once: one installs (an O_EXCL lock file beside the folder) into a temporary folder that is renamed
// into place only once `<bin> --version` answers the pinned version; the others wait for the lock to go and use
// the result. Fails (never skips) when it cannot, saying why and the command to run by hand.
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
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pidAlive } from './proc.js';

export const VERSION_OK = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** One CLI at one version, and where it goes. */
export interface NpmCli {
  /** How it is named in a message ("Claude Code", "@openai/codex"). */
  label: string;
  pkg: string;
  version: string;
  /** The install prefix: <cache root>/<version>. */
  dir: string;
  /** The entry point inside the prefix. */
  bin: string;
  /** Files npm unpacks without their execute bit that the CLI runs (made executable after install). */
  chmod?: string[];
  /** Runs `<bin> --version` and returns what it printed (see versionOf). */
  versionOf(binary: string): Promise<string>;
  /** Whether that output names the version. */
  says(out: string, version: string): boolean;
  /** A hint added when npm installed it but it does not run, for the folder it was installed into. */
  brokenHint?(installedIn: string): string;
}

/** The command a person runs to install it by hand. */
export function npmInstallCommand(c: Pick<NpmCli, 'dir' | 'pkg' | 'version'>): string {
  return `npm install --prefix ${c.dir} --no-save --no-audit --no-fund ${c.pkg}@${c.version}`;
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
 * `<binary> --version` in an empty private HOME made under `homeBase` (so nothing touches a real one), with `env`
 * beside PATH, HOME and LANG; what it printed on stdout, or throw.
 */
export async function versionOf(
  binary: string,
  o: { env: NodeJS.ProcessEnv; homeBase?: string; timeoutMs: number; prefix: string },
): Promise<string> {
  const home = mkdtempSync(join(o.homeBase ?? tmpdir(), o.prefix));
  try {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      LANG: process.env.LANG ?? 'C.UTF-8',
      ...o.env,
    };
    const r = await run(binary, ['--version'], { env, cwd: home, timeoutMs: o.timeoutMs });
    if (r.error) throw r.error;
    if (r.code !== 0) throw new Error(`${binary} --version exited ${r.code ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(0, 500)}`);
    return r.stdout.trim();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function verify(c: NpmCli, binary: string): Promise<void> {
  if (!existsSync(binary)) throw new Error(`${binary} does not exist`);
  const out = await c.versionOf(binary);
  if (!c.says(out, c.version)) throw new Error(`${binary} --version printed ${JSON.stringify(out)}, expected ${c.version}`);
}

const NETWORK =
  /E(?:NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)|ETIMEDOUT|network|getaddrinfo|socket hang up|request to .* failed/i;

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

/** The path of the CLI's entry point at its pinned version, installing it first when this machine has none. */
export function ensureNpmCli(c: NpmCli): Promise<string> {
  if (!VERSION_OK.test(c.version)) return Promise.reject(new Error(`${c.label}: bad version ${JSON.stringify(c.version)}`));
  const key = `${c.dir}\0${c.bin}`;
  let p = memo.get(key);
  if (!p) {
    p = ensure(c);
    memo.set(key, p);
    p.catch(() => memo.delete(key));
  }
  return p;
}

async function ensure(c: NpmCli): Promise<string> {
  const binary = join(c.dir, c.bin);
  const works = (b: string) =>
    verify(c, b).then(
      () => true,
      () => false, // broken: (re)installed below
    );
  if (existsSync(binary) && (await works(binary))) return binary;
  const root = dirname(c.dir);
  mkdirSync(root, { recursive: true });
  const lock = join(root, `.${c.version}.lock`);
  const deadline = Date.now() + 20 * 60_000;
  while (!tryLock(lock)) {
    if (Date.now() > deadline)
      throw new Error(`${c.label}: another process has held ${lock} for 20 minutes; remove it if no install is running`);
    await new Promise((r) => setTimeout(r, 500));
  }
  try {
    // another worker may have finished while we waited for the lock
    if (existsSync(binary) && (await works(binary))) return binary;
    const tmp = join(root, `.install-${c.version}-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(tmp, { recursive: true });
    try {
      await npmInstall(c, tmp);
      // npm 11 runs no install scripts and keeps the mode bits of the tarball: some ship helpers without +x
      for (const f of c.chmod ?? []) if (existsSync(join(tmp, f))) chmodSync(join(tmp, f), 0o755);
      await verify(c, join(tmp, c.bin)).catch((e: Error) => {
        throw new Error(
          `${c.label} ${c.version} was installed by npm but does not run: ${e.message}.\n` +
            (c.brokenHint ? `${c.brokenHint(tmp)}\n` : '') +
            `Install it by hand: ${npmInstallCommand(c)}`,
        );
      });
      if (existsSync(c.dir)) rmSync(c.dir, { recursive: true, force: true }); // broken (verified above)
      renameSync(tmp, c.dir);
      await verify(c, binary);
      return binary;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  } finally {
    rmSync(lock, { force: true });
  }
}

async function npmInstall(c: NpmCli, prefix: string): Promise<void> {
  const args = [
    'install',
    '--prefix',
    prefix,
    '--no-save',
    '--no-audit',
    '--no-fund',
    '--no-package-lock',
    '--loglevel=error',
    '--fetch-timeout=60000',
    '--fetch-retries=1',
    '--fetch-retry-mintimeout=2000',
    '--fetch-retry-maxtimeout=5000',
    `${c.pkg}@${c.version}`,
  ];
  const r = await run('npm', args, { cwd: prefix, env: { ...process.env, npm_config_update_notifier: 'false' }, timeoutMs: 15 * 60_000 });
  if (!r.error && r.code === 0) return;
  const said = `${r.error?.message ?? ''}\n${r.stderr}\n${r.stdout}`.trim();
  const lines = said.split('\n').filter(Boolean);
  const telling = lines.filter((l) => /\b(code|errno|request to|network|ERR!)\b/i.test(l) && !/complete log/.test(l)).slice(0, 4);
  const tail = (telling.length ? telling : lines.slice(-6)).join('\n');
  const unreachable = NETWORK.test(said) || r.signal === 'SIGKILL';
  throw new Error(
    (unreachable
      ? `${c.label} ${c.version} is not installed in ${c.dir}, and the npm registry cannot be reached to install it.`
      : `${c.label} ${c.version} is not installed in ${c.dir}, and \`npm install\` failed (exit ${r.code ?? r.signal ?? r.error?.message}).`) +
      `\nInstall it by hand: ${npmInstallCommand(c)}\nnpm said:\n${tail}`,
  );
}
