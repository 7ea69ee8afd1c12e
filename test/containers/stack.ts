// What the container test does to sunset, in the container and on the host, as an operator would: the compose
// file run by docker-compose with the variables its header names; the staged package's own `sunset` on the host;
// one config file in ~/.config/sunset that both read (SUNSET_CONFIG); task files in ~/.claude/jobs/tasks.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RealFleet } from '../../sim/real/real-fleet.js';
import { must, run, type Engine, type Ran } from './engine.js';

export interface StackOptions {
  root: string;
  /** The staging folder, in root (the build context): the test's own, never the operator's .container-stage. */
  stage: string;
  project: string;
  image: string;
  nodeImage: string;
  redisImage: string;
  fleet: RealFleet;
  engine: Engine;
}

/** The fleet's HOME laid out as the compose file's header asks, and the config both sides read. */
export class Stack {
  readonly home: string;
  readonly configFile: string;
  readonly tasksDir: string;
  readonly stateDir: string;
  /** A folder holding `claude` (the fleet's binary), put first on the host sunset's PATH. */
  readonly hostBin: string;
  readonly hostSunset: string;
  readonly uid = process.getuid?.() ?? 0;
  readonly gid = process.getgid?.() ?? 0;

  constructor(readonly o: StackOptions) {
    this.home = o.fleet.home;
    this.configFile = join(this.home, '.config', 'sunset', 'sunset.config.json');
    this.tasksDir = join(this.home, '.claude', 'jobs', 'tasks');
    this.stateDir = join(this.home, '.local', 'state', 'sunset');
    for (const d of [join(this.home, '.config', 'sunset'), this.stateDir, this.tasksDir]) mkdirSync(d, { recursive: true });
    this.hostBin = join(o.fleet.root, 'host-bin');
    mkdirSync(this.hostBin, { recursive: true });
    symlinkSync(o.fleet.binary, join(this.hostBin, 'claude'));
    this.hostSunset = join(o.root, o.stage, 'sunset', 'usr', 'local', 'bin', 'sunset');
  }

  /** The config, every path left to its default under HOME (~/.claude, ~/.local/state/sunset): the operator's layout. */
  writeConfig(c: { host: string; windows?: Record<string, number> }): void {
    const cfg = {
      host: c.host,
      probeTimeout: 20_000,
      web: { port: 0 },
      log: { level: 'debug' },
      fleet: { tmuxSocket: this.o.fleet.tmuxSocket },
      ...(c.windows ? { windows: c.windows } : {}),
    };
    writeFileSync(this.configFile, `${JSON.stringify(cfg, null, 2)}\n`);
  }

  writeTask(t: Record<string, unknown> & { id: string }): void {
    const file = join(this.tasksDir, `${t.id}.json`);
    writeFileSync(`${file}.tmp`, `${JSON.stringify(t, null, 2)}\n`);
    renameSync(`${file}.tmp`, file);
  }

  readTask(id: string): Record<string, any> {
    return JSON.parse(readFileSync(join(this.tasksDir, `${id}.json`), 'utf8'));
  }

  /** The variables the compose file reads, as an operator exports them (HOME is the fleet's); no SUNSET_REDIS_URL:
   * the stack's own Redis, on its socket. The caller's COMPOSE_* would change which project and files are run. */
  composeEnv(redis: { url?: string }): NodeJS.ProcessEnv {
    const env = Object.fromEntries(Object.entries(this.o.engine.env).filter(([k]) => !k.startsWith('COMPOSE_')));
    return {
      ...env,
      HOME: this.home,
      SUNSET_UID: String(this.uid),
      SUNSET_GID: String(this.gid),
      SUNSET_IMAGE: this.o.image,
      SUNSET_STAGE: this.o.stage,
      SUNSET_NODE_IMAGE: this.o.nodeImage,
      SUNSET_REDIS_IMAGE: this.o.redisImage,
      ...(redis.url ? { SUNSET_REDIS_URL: redis.url } : {}),
    };
  }

  /** `docker-compose -p <project> <args>` in the checkout, on Podman's Docker API. */
  compose(args: string[], redis: { url?: string }, o: { timeoutMs?: number; check?: boolean } = {}): Promise<Ran> {
    const argv = ['-p', this.o.project, '-f', join(this.o.root, 'docker-compose.yml'), ...args];
    const opts = { cwd: this.o.root, env: this.composeEnv(redis), timeoutMs: o.timeoutMs ?? 600_000 };
    return o.check === false ? run('docker-compose', argv, opts) : must('docker-compose', argv, opts);
  }

  /** The host's environment for the staged `sunset`: the fleet's HOME, its claude first on PATH, nothing of npm. */
  hostEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!/^npm_/i.test(k) && !['NODE_OPTIONS', 'REDIS_URL', 'SUNSET_CONFIG', 'MALLOC_ARENA_MAX'].includes(k)) env[k] = v;
    return {
      ...env,
      HOME: this.home,
      PATH: `${this.hostBin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      SUNSET_CONFIG: this.configFile,
      ...extra,
    };
  }

  /** `sunset <args>` on the host: the same package the image holds, run by its own bin (node's options and all). */
  hostRun(args: string[]): Promise<Ran> {
    return run(this.hostSunset, args, { env: this.hostEnv(), timeoutMs: 120_000 });
  }

  /** `sunset up` on the host, as a child of this test; its stderr (JSON lines) collected. */
  hostUp(redisUrl: string): { child: ChildProcess; log: () => string; stop: () => Promise<void> } {
    let log = '';
    const child = spawn(this.hostSunset, ['up'], { env: this.hostEnv({ REDIS_URL: redisUrl }), stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    return {
      child,
      log: () => log,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM'); // the sunset this test started
        await exited;
      },
    };
  }

  /** The host pid of the compose service's main process (pid: host: the same number inside and out). */
  async containerPid(service: string): Promise<number> {
    const r = await this.o.engine.podman(['inspect', '--format', '{{.State.Pid}}', `${this.o.project}_${service}_1`]);
    const pid = Number(r.stdout.trim());
    if (r.code !== 0 || !pid) throw new Error(`no running container for ${service}: ${r.stderr.trim()}`);
    return pid;
  }

  /** The stack's Redis socket as the host sees it: in the redis-socket volume, a folder of Podman's store. */
  async stackSocket(): Promise<{ path: string; url: string }> {
    const volume = `${this.o.project}_redis-socket`;
    const r = await this.o.engine.podman(['volume', 'inspect', '--format', '{{.Mountpoint}}', volume]);
    if (r.code !== 0 || !r.stdout.trim()) throw new Error(`no volume ${volume}: ${r.stderr.trim()}`);
    const path = join(r.stdout.trim(), 'redis.sock');
    return { path, url: `unix://${path}` };
  }

  /** One field of `podman inspect` of a service's container. */
  async inspect(service: string, format: string): Promise<string> {
    return (await this.o.engine.podman(['inspect', '--format', format, `${this.o.project}_${service}_1`])).stdout.trim();
  }

  async containerLog(service: string): Promise<string> {
    const r = await this.o.engine.podman(['logs', `${this.o.project}_${service}_1`]);
    return r.stdout + r.stderr;
  }
}

/** VmRSS of a process, in MB (0 once it is gone). */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s*kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** A process's argv and whether MALLOC_ARENA_MAX=2 is in its environment. */
export function howRun(pid: number): { argv: string[]; arenas: boolean } {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  return { argv, arenas: env.includes('MALLOC_ARENA_MAX=2') };
}

/** Sample a process's RSS every `everyMs` for `forMs`: median, min, max, last (MB). */
export async function sampleRss(
  pid: number,
  forMs: number,
  everyMs = 2_000,
): Promise<{ median: number; min: number; max: number; last: number; n: number }> {
  const xs: number[] = [];
  const end = Date.now() + forMs;
  while (Date.now() < end) {
    xs.push(rssMb(pid));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  xs.push(rssMb(pid));
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1], last: xs[xs.length - 1], n: xs.length };
}

/** Poll until cond() holds or the deadline passes; throws `what` at the deadline. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await cond()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
