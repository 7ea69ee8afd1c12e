// The container engine the container test runs on: Debian's Podman (with runc), driven by Debian's docker-compose
// through Podman's Docker API (`podman system service`). Installed with apt when missing (as root), configured
// by a containers.conf of the test's own (CONTAINERS_CONF), nothing under /etc changed.
//
// Why not podman-compose: Debian's (1.0.3) cannot run this compose file. It gives a service of `network_mode: host`
// its project network as well (`--network host … --net <project>_default`: Podman refuses "cannot set multiple
// networks without bridge network mode"), and it drops `pid: host` without a word — sunset would then see none
// of the host's processes. docker-compose 1.29 reads the file as Docker does, and Podman runs what it asks for.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Cached between runs, outside the repo: the stand-in images' inputs and the engine's config. */
export const CACHE = process.env.SUNSET_CONTAINERS_CACHE?.trim() || join(homedir(), '.cache', 'sunset-containers');

// runc, not crun: crun fails on this kind of machine's cgroups. No default ulimits: setting them fails here.
// cgroupfs: there is no systemd to ask for cgroups.
const CONTAINERS_CONF = `# written by the sunset container test (test/containers/engine.ts)
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
`;

/** Debian packages the test needs, and the command each one gives. */
const PACKAGES: Array<{ pkg: string; cmd: string }> = [
  { pkg: 'podman', cmd: 'podman' },
  { pkg: 'runc', cmd: 'runc' },
  { pkg: 'docker-compose', cmd: 'docker-compose' },
  { pkg: 'debootstrap', cmd: 'debootstrap' },
];

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export class CannotRun extends Error {}

/** Run a program (argv, no shell) to its end; never throws for a non-zero exit. */
export function run(
  cmd: string,
  args: string[],
  o: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {},
): Promise<Ran> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: o.cwd,
      env: o.env ?? process.env,
      stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      timeout: o.timeoutMs ?? 600_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
    child.stdin?.end(o.input);
  });
}

/** The same, throwing with the tail of what it said when it fails. */
export async function must(cmd: string, args: string[], o: Parameters<typeof run>[2] = {}): Promise<Ran> {
  const r = await run(cmd, args, o);
  if (r.code !== 0) {
    const said = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-15).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}:\n${said}`);
  }
  return r;
}

const onPath = (cmd: string) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', cmd], { stdio: 'ignore' }).status === 0;

/** Install what is missing (apt-get, as root); a machine that cannot get them cannot run the test. */
export async function ensurePackages(say: (s: string) => void, only?: string[]): Promise<void> {
  if (process.platform !== 'linux') throw new CannotRun(`this is ${process.platform}: the test runs Linux containers with Podman`);
  const missing = PACKAGES.filter((p) => (!only || only.includes(p.pkg)) && !onPath(p.cmd)).map((p) => p.pkg);
  if (!missing.length) return;
  if (process.getuid?.() !== 0 || !onPath('apt-get'))
    throw new CannotRun(
      `${missing.join(', ')} missing, and only root with apt-get can install them here (sudo apt-get install -y ${missing.join(' ')})`,
    );
  say(`installing ${missing.join(' ')} (apt-get)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const upd = await run('apt-get', ['update', '-qq'], { env });
  if (upd.code !== 0) throw new CannotRun(`apt-get update failed: ${upd.stderr.trim().split('\n').pop()}`);
  // with podman's recommends (netavark, catatonit, fuse-overlayfs…), as measured; runc named, so that apt does not
  // take crun for podman's `crun | runc`
  const inst = await run('apt-get', ['install', '-y', '-qq', ...missing], { env });
  if (inst.code !== 0) throw new CannotRun(`apt-get install ${missing.join(' ')} failed: ${inst.stderr.trim().split('\n').pop()}`);
}

export interface Engine extends Podman {
  composeVersion: string;
  /** Podman's Docker API service ended (it is this test's own process). */
  stop(): Promise<void>;
}

/** Podman with the test's containers.conf, for what needs no Docker API (the stand-ins: `npm run container:base-images`). */
export interface Podman {
  /** The environment for podman: CONTAINERS_CONF (and DOCKER_HOST, once the API service runs). */
  env: NodeJS.ProcessEnv;
  podmanVersion: string;
  podman(args: string[], o?: { timeoutMs?: number; input?: string }): Promise<Ran>;
}

/** Write the test's containers.conf and say which Podman answers under it. */
export async function configurePodman(): Promise<Podman> {
  if (process.getuid?.() !== 0) throw new CannotRun("not root: the test runs rootful Podman (pid: host, the host's /tmp), as CI does");
  mkdirSync(CACHE, { recursive: true });
  const conf = join(CACHE, 'containers.conf');
  writeFileSync(conf, CONTAINERS_CONF);
  const env: NodeJS.ProcessEnv = { ...process.env, CONTAINERS_CONF: conf };
  const podman = (args: string[], o: { timeoutMs?: number; input?: string } = {}) => run('podman', args, { env, ...o });
  const v = await podman(['--version']);
  if (v.code !== 0) throw new CannotRun(`podman does not run: ${v.stderr.trim()}`);
  return { env, podmanVersion: v.stdout.trim().replace(/^podman version /, ''), podman };
}

/** Configure Podman, start its Docker API on a socket in runDir, and say which versions answer. */
export async function startEngine(runDir: string): Promise<Engine> {
  const base = await configurePodman();
  const socket = join(runDir, 'podman.sock');
  const env: NodeJS.ProcessEnv = { ...base.env, DOCKER_HOST: `unix://${socket}` };
  const podman = (args: string[], o: { timeoutMs?: number; input?: string } = {}) => run('podman', args, { env, ...o });
  const service: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { env, stdio: 'ignore' });
  const exited = new Promise<void>((r) => service.once('exit', () => r()));
  const deadline = Date.now() + 20_000;
  let composeVersion = '';
  for (;;) {
    if (existsSync(socket)) {
      const c = await run('docker-compose', ['version', '--short'], { env });
      if (c.code === 0) {
        composeVersion = c.stdout.trim();
        break;
      }
    }
    if (service.exitCode !== null || Date.now() > deadline) {
      service.kill('SIGTERM');
      throw new CannotRun(`podman system service did not answer on ${socket}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    env,
    podmanVersion: base.podmanVersion,
    composeVersion,
    podman,
    async stop() {
      if (service.exitCode === null && service.signalCode === null) {
        service.kill('SIGTERM'); // the API service this test started
        await exited;
      }
    },
  };
}

/** Can this machine run a container at all? Throws CannotRun with Podman's first complaint when it cannot. */
export async function assertRuns(engine: Podman, image: string): Promise<void> {
  const r = await engine.podman(['run', '--rm', '--network', 'none', image, 'true'], { timeoutMs: 120_000 });
  if (r.code !== 0)
    throw new CannotRun(
      `podman run fails: ${(
        r.stderr
          .trim()
          .split('\n')
          .find((l) => /error/i.test(l)) ?? r.stderr.trim()
      ).slice(0, 300)}`,
    );
}
