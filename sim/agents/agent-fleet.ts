// A fleet of REAL agent-CLI sessions (Codex, Gemini CLI) for sunset's real-client tests: the real binary from
// npm (install.ts), a private HOME per fleet, its own stand-in model API (agent-api.ts) and its own tmux server
// (`tmux -L <unique>`). Nothing touches the real ~/.codex, ~/.gemini or the network. What sim/real/real-fleet.ts
// is for Claude Code.
//
//   const fleet = await AgentFleet.create('codex');          // afterAll: await fleet.destroy()
//   const s = await fleet.start('[[slow:5000]] fix the bug');  // interactive, in a pane
//   fleet.screen(s.paneId); fleet.typeInto(s.paneId, '/quit');
//   await fleet.waitForExit(s.pid, 15_000);
//
// Sessions leave by their own exit path (the quit command typed). Only destroy() signals, and only processes of
// this fleet (HOME=<ours> in their environment, or our tmux server), by pid.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { cmdline, environHas, fdTargets, livePids, pidAlive, procStat, rssKb, sleep, waitFor } from '../proc.js';
import { AgentApi } from './agent-api.js';
import { SPECS, type AgentCli, type AgentSpec, type TranscriptHead } from './agent-specs.js';
import { ensureAgentCli } from './install.js';
import { readAgentInputBox, type AgentInputBox } from './input-box.js';

export { AgentApi } from './agent-api.js';
export { SPECS, type AgentCli, type AgentSpec, type TranscriptHead } from './agent-specs.js';

export interface AgentSession {
  cli: AgentCli;
  /** the pane's process: what tmux started (for Codex the node wrapper; see docs/agents/codex.md) */
  pid: number;
  paneId: string;
  tmuxSession: string;
  cwd: string;
  argv: string[];
}

export interface FleetProcess {
  pid: number;
  ppid: number;
  argv: string[];
  /** VmRSS, KiB */
  rssKb: number;
  /** field 22 of /proc/<pid>/stat (clock ticks after boot) */
  starttime: number;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

// ------------------------------------------------------------------ /proc helpers

export { cmdline, pidAlive, waitFor } from '../proc.js';

/** The files a process holds open (readlink of /proc/<pid>/fd/*), sockets and pipes left out. */
export function openFiles(pid: number): string[] {
  return [...new Set(fdTargets(pid).filter((t) => t.startsWith('/')))];
}

export function cwdOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}

/** Every file under dir (recursively), with its size; [] when dir is missing. */
export function filesUnder(dir: string): Array<{ path: string; size: number }> {
  const out: Array<{ path: string; size: number }> = [];
  const walk = (d: string): void => {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        const st = statSync(p);
        if (st.isDirectory()) walk(p);
        else out.push({ path: p, size: st.size });
      } catch {
        /* gone */
      }
    }
  };
  walk(dir);
  return out;
}

/** The first line of a file (up to 1 MiB read), '' when unreadable. */
export function firstLine(file: string): string {
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(1 << 20);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const text = buf.subarray(0, n).toString('utf8');
      const i = text.indexOf('\n');
      return i >= 0 ? text.slice(0, i) : text;
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

const ROOT_PREFIX = 'sunset-agents-';
// Codex will not set up its helper links (apply_patch, …) under the temp dir and warns on every start; so the
// fleet lives in /var/tmp where there is one
const ROOT_BASE = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
const escapeRe = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ------------------------------------------------------------------ the fleet

export class AgentFleet {
  readonly spec: AgentSpec;
  readonly root: string;
  readonly home: string;
  readonly workRoot: string;
  readonly binary: string;
  readonly api: AgentApi;
  readonly tmuxSocket: string;
  readonly env: NodeJS.ProcessEnv;
  private readonly homeEntry: Buffer;
  /** The tmux server is this fleet's own (else another fleet's, shared: only this fleet's sessions on it are ended). */
  private readonly ownsTmux: boolean;
  private readonly tmuxSessions = new Set<string>();
  private destroyed = false;
  private seq = 0;

  private constructor(o: { spec: AgentSpec; root: string; binary: string; api: AgentApi; env: NodeJS.ProcessEnv; tmuxSocket?: string }) {
    this.spec = o.spec;
    this.root = o.root;
    this.home = join(o.root, 'home');
    this.workRoot = join(o.root, 'work');
    this.binary = o.binary;
    this.api = o.api;
    this.env = o.env;
    this.ownsTmux = !o.tmuxSocket;
    this.tmuxSocket = o.tmuxSocket ?? `sunset-agents-${randomBytes(5).toString('hex')}`;
    this.homeEntry = Buffer.from(`HOME=${this.home}\0`);
  }

  /**
   * A fleet of one CLI. `tmuxSocket`: run its panes on another fleet's tmux server (one server for a mixed fleet, as
   * sunset reads one); destroy() then ends only this fleet's tmux sessions there, not the server.
   */
  static async create(
    cli: AgentCli,
    opts: { binary?: string; env?: Record<string, string>; tmuxSocket?: string } = {},
  ): Promise<AgentFleet> {
    const spec = SPECS[cli];
    if (!spec) throw new Error(`agent fleet: unknown CLI ${JSON.stringify(cli)} (known: ${Object.keys(SPECS).join(', ')})`);
    const binary = opts.binary ?? (await ensureAgentCli(spec));
    await AgentFleet.reapOrphans();
    const root = mkdtempSync(join(ROOT_BASE, ROOT_PREFIX));
    writeFileSync(
      join(root, 'owner.json'),
      `${JSON.stringify({ pid: process.pid, procStart: procStat(process.pid)?.starttime ?? null })}\n`,
    );
    let api: AgentApi | undefined;
    try {
      api = await AgentApi.start();
      const home = join(root, 'home');
      const work = join(root, 'work');
      const base: NodeJS.ProcessEnv = {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        LANG: process.env.LANG ?? 'C.UTF-8',
        TERM: 'xterm-256color',
        SHELL: '/bin/bash',
        USER: process.env.USER ?? 'root',
        LOGNAME: process.env.LOGNAME ?? process.env.USER ?? 'root',
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        XDG_CACHE_HOME: join(home, '.cache'),
        XDG_DATA_HOME: join(home, '.local', 'share'),
        XDG_STATE_HOME: join(home, '.local', 'state'),
        NO_UPDATE_NOTIFIER: '1',
        NO_BROWSER: '1',
      };
      for (const d of [home, work, base.XDG_CONFIG_HOME!, base.XDG_CACHE_HOME!, base.XDG_DATA_HOME!, base.XDG_STATE_HOME!])
        mkdirSync(d, { recursive: true });
      const apiKey = `sk-standin-${randomBytes(12).toString('hex')}`;
      const extra = spec.setup({ home, apiUrl: api.url, apiKey, trusted: [work] });
      return new AgentFleet({ spec, root, binary, api, env: { ...base, ...extra, ...opts.env }, tmuxSocket: opts.tmuxSocket });
    } catch (e) {
      await api?.close();
      rmSync(root, { recursive: true, force: true });
      throw e;
    }
  }

  /** End what crashed runs left: processes whose HOME is a fleet home whose owner process is gone. */
  static async reapOrphans(): Promise<number[]> {
    const homeRe = new RegExp(`^${escapeRe(join(ROOT_BASE, ROOT_PREFIX))}[^/]+/home$`);
    const byRoot = new Map<string, number[]>();
    for (const pid of livePids()) {
      if (pid === process.pid || !pidAlive(pid)) continue;
      let env: string;
      try {
        env = readFileSync(`/proc/${pid}/environ`, 'utf8');
      } catch {
        continue;
      }
      const home = env
        .split('\0')
        .find((e) => e.startsWith('HOME='))
        ?.slice(5);
      if (!home || !homeRe.test(home)) continue;
      const list = byRoot.get(dirname(home)) ?? [];
      list.push(pid);
      byRoot.set(dirname(home), list);
    }
    const ended: number[] = [];
    for (const [root, pids] of byRoot) {
      let owner: { pid?: number; procStart?: number | null } | null = null;
      try {
        owner = JSON.parse(readFileSync(join(root, 'owner.json'), 'utf8'));
      } catch {
        owner = null;
      }
      const ownerAlive = !!owner?.pid && pidAlive(owner.pid) && (!owner.procStart || procStat(owner.pid)?.starttime === owner.procStart);
      if (ownerAlive) continue;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
          ended.push(pid);
        } catch {
          /* gone */
        }
      }
      await waitFor(() => pids.every((p) => !pidAlive(p)), 5_000, 25);
      rmSync(root, { recursive: true, force: true });
    }
    return ended;
  }

  // ---------------------------------------------------------------- folders

  /** A new working folder under the fleet's (trusted) work root. */
  workdir(name?: string): string {
    const n = name ?? `w${++this.seq}-${randomBytes(2).toString('hex')}`;
    if (!/^[A-Za-z0-9._-]+$/.test(n)) throw new Error(`agent fleet: bad folder name ${JSON.stringify(n)}`);
    const d = join(this.workRoot, n);
    mkdirSync(d, { recursive: true });
    return d;
  }

  // ---------------------------------------------------------------- running the CLI

  /** Run the CLI once, not in tmux (e.g. `--version`, `exec`), with the fleet's env. */
  run(args: string[], opts: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RunResult> {
    this.assertLive();
    const t0 = Date.now();
    return new Promise((res, rej) => {
      const child = spawn(this.binary, args, {
        cwd: opts.cwd ?? this.workRoot,
        env: { ...this.env, ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const t = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
      child.on('error', (e) => {
        clearTimeout(t);
        rej(e);
      });
      child.on('close', (code, signal) => {
        clearTimeout(t);
        res({ code, signal, stdout, stderr, ms: Date.now() - t0 });
      });
    });
  }

  /**
   * An interactive session in a pane of a new tmux session (200×50) on the private server: the CLI started with
   * `spec.startArgs(prompt)` plus args. Resolves once its input box is drawn (unless waitReady is false).
   */
  async start(
    prompt?: string,
    opts: { cwd?: string; args?: string[]; waitReady?: boolean; timeoutMs?: number } = {},
  ): Promise<AgentSession> {
    return this.startArgv([...this.spec.startArgs(prompt), ...(opts.args ?? [])], opts);
  }

  /** The CLI's own resume of a session id, interactively, in a new pane (run it in the session's cwd). */
  async resume(sessionId: string, opts: { cwd: string; args?: string[]; waitReady?: boolean; timeoutMs?: number }): Promise<AgentSession> {
    if (!/^[A-Za-z0-9_-]{4,80}$/.test(sessionId)) throw new Error(`agent fleet: bad session id ${JSON.stringify(sessionId)}`);
    return this.startArgv([...this.spec.resumeArgs(sessionId), ...(opts.args ?? [])], opts);
  }

  private async startArgv(args: string[], opts: { cwd?: string; waitReady?: boolean; timeoutMs?: number }): Promise<AgentSession> {
    this.assertLive();
    const cwd = opts.cwd ? resolve(opts.cwd) : this.workdir();
    mkdirSync(cwd, { recursive: true });
    const tmuxSession = `${this.spec.cli}-${++this.seq}-${randomBytes(3).toString('hex')}`;
    const argv = [this.binary, ...args];
    const out = this.tmux([
      'new-session',
      '-d',
      '-P',
      '-F',
      '#{pane_id} #{pane_pid}',
      '-s',
      tmuxSession,
      '-x',
      '200',
      '-y',
      '50',
      '-c',
      cwd,
      // on another fleet's server the pane would get that server's environment (its HOME): this fleet's goes with it
      ...(this.ownsTmux ? [] : Object.entries(this.env).flatMap(([k, v]) => (v === undefined ? [] : ['-e', `${k}=${v}`]))),
      '--',
      ...argv,
    ]);
    const [paneId, pidText] = out.trim().split(' ');
    const pid = Number(pidText);
    if (!/^%\d+$/.test(paneId) || !Number.isInteger(pid)) throw new Error(`agent fleet: tmux new-session printed ${JSON.stringify(out)}`);
    this.tmuxSessions.add(tmuxSession);
    const s: AgentSession = { cli: this.spec.cli, pid, paneId, tmuxSession, cwd, argv };
    if (opts.waitReady !== false) await this.waitReady(s, opts.timeoutMs ?? 60_000);
    return s;
  }

  /** Wait until the pane shows the CLI's input box (throws at the deadline with the screen). */
  async waitReady(s: AgentSession, timeoutMs = 60_000): Promise<string> {
    let screen = '';
    const ok = await waitFor(
      () => {
        if (!pidAlive(s.pid)) throw new Error('exited');
        return this.spec.ready((screen = this.screen(s.paneId)));
      },
      timeoutMs,
      100,
    );
    if (!ok)
      throw new Error(
        `agent fleet: ${this.spec.cli} in pane ${s.paneId} not ready after ${timeoutMs} ms${pidAlive(s.pid) ? '' : ' (it exited)'}; screen:\n${screen}`,
      );
    return screen;
  }

  // ---------------------------------------------------------------- tmux

  tmux(args: string[]): string {
    const r = spawnSync('tmux', ['-L', this.tmuxSocket, ...args], { encoding: 'utf8', env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${(r.stderr || '').trim() || `exit ${r.status}`}`);
    return r.stdout;
  }

  /** Type text literally, then Enter as a key of its own (what sunset does). */
  typeInto(paneId: string, text: string): void {
    this.tmux(['send-keys', '-t', paneId, '-l', text]);
    this.tmux(['send-keys', '-t', paneId, 'Enter']);
  }

  /**
   * Type a message and send it, as sunset's ask does: the text literally, then, once the screen shows it, Enter.
   * (Codex reads keys that arrive in one burst as a paste, where Enter is a newline: seen while its TUI was
   * still loading. Waiting for the echo keeps Enter a key of its own.) Never call it with a '?' first.
   */
  async send(paneId: string, text: string, timeoutMs = 10_000): Promise<void> {
    const tail = text.trim().split('\n').pop()!.slice(-24);
    const deadline = Date.now() + timeoutMs;
    const flat = (x: string): string => x.replace(/\s+/g, '');
    const draft = (): string => flat(this.inputBox(paneId).draft);
    // Gemini CLI 0.61 takes a '?' that arrives in the same burst as the first keys into an empty box as "show
    // the shortcuts" and drops it: the first character goes alone, and the rest once the box shows it. Keys
    // typed in the moment a TUI redraws were seen lost (Gemini CLI just after a resume, on a loaded box: the
    // first character): the first one is typed again until the box holds it, and the whole text is checked in
    // the box before Enter.
    const first = flat(text.slice(0, 1));
    for (let attempt = 0; ; attempt++) {
      this.tmux(['send-keys', '-t', paneId, '-l', text.slice(0, 1)]);
      if (!first || (await waitFor(() => draft() === first, 1_000, 20))) break;
      const now = draft();
      if (now === first) break;
      if (now !== '' || attempt >= 4 || Date.now() >= deadline) {
        throw new Error(
          `agent fleet: the first key of ${JSON.stringify(tail)} did not show in pane ${paneId}; screen:\n${this.screen(paneId)}`,
        );
      }
    }
    if (text.length > 1) this.tmux(['send-keys', '-t', paneId, '-l', text.slice(1)]);
    if (!(await waitFor(() => draft() === flat(text), Math.max(0, deadline - Date.now()), 50))) {
      throw new Error(
        `agent fleet: ${JSON.stringify(tail)} did not show whole in the box of pane ${paneId}; screen:\n${this.screen(paneId)}`,
      );
    }
    await sleep(150);
    // an Enter that lands while the TUI redraws (Gemini CLI just after a resume, on a loaded box) was seen lost:
    // the text stayed in the box and no request went out. Press it again while the box still holds the text.
    for (let press = 0; press < 3; press++) {
      this.tmux(['send-keys', '-t', paneId, 'Enter']);
      // sent: the box is drawn without the text, or the pane is gone (a quit command ends it)
      const gone = await waitFor(
        () => {
          if (!this.hasPane(paneId)) return true;
          const box = this.inputBox(paneId);
          return box.found && !box.draft.includes(tail);
        },
        3_000,
        50,
      );
      if (gone) return;
    }
    throw new Error(`agent fleet: Enter did not send ${JSON.stringify(tail)} in pane ${paneId}; screen:\n${this.screen(paneId)}`);
  }

  /** Wait until the pane shows the input box and no turn in flight, and the screen holds still for 300 ms. */
  async waitIdle(s: AgentSession, timeoutMs = 30_000): Promise<void> {
    let last = '';
    let since = Date.now();
    const ok = await waitFor(
      () => {
        const sc = this.screen(s.paneId);
        if (sc !== last) {
          last = sc;
          since = Date.now();
        }
        return this.spec.ready(sc) && !this.spec.busy.test(sc) && Date.now() - since >= 300;
      },
      timeoutMs,
      50,
    );
    if (!ok) throw new Error(`agent fleet: pane ${s.paneId} not idle after ${timeoutMs} ms; screen:\n${last}`);
  }

  /** Type text and leave it in the box: a person's draft. */
  typeDraft(paneId: string, text: string): void {
    this.tmux(['send-keys', '-t', paneId, '-l', text]);
  }

  pressKeys(paneId: string, ...keys: string[]): void {
    this.tmux(['send-keys', '-t', paneId, ...keys]);
  }

  /** The visible screen, plain (`capture-pane -p`), or with SGR attributes kept (`-e`). */
  screen(paneId: string, opts: { ansi?: boolean } = {}): string {
    try {
      return this.tmux(['capture-pane', '-p', ...(opts.ansi ? ['-e'] : []), '-t', paneId]);
    } catch (e) {
      return `(no screen: ${(e as Error).message})`;
    }
  }

  /** The pane's input box: empty, or the draft a person left (sim/agents/input-box.ts). */
  inputBox(paneId: string): AgentInputBox {
    return readAgentInputBox(this.spec.cli, this.screen(paneId, { ansi: true }));
  }

  async waitForScreen(paneId: string, re: RegExp, timeoutMs = 30_000, check?: () => void): Promise<string> {
    let screen = '';
    const ok = await waitFor(
      () => {
        check?.();
        return re.test((screen = this.screen(paneId)));
      },
      timeoutMs,
      100,
    );
    if (!ok) throw new Error(`agent fleet: ${re} did not show in pane ${paneId} within ${timeoutMs} ms; screen:\n${screen}`);
    return screen;
  }

  /** tmux's count of clients attached to a session (a person watching). */
  attachedClients(tmuxSession: string): number {
    return Number(this.tmux(['display-message', '-p', '-t', tmuxSession, '#{session_attached}']).trim());
  }

  hasPane(paneId: string): boolean {
    const r = spawnSync('tmux', ['-L', this.tmuxSocket, 'display-message', '-p', '-t', paneId, '#{pane_id}'], {
      encoding: 'utf8',
      env: this.env,
    });
    return r.status === 0 && r.stdout.trim() === paneId;
  }

  hasTmuxSession(name: string): boolean {
    return spawnSync('tmux', ['-L', this.tmuxSocket, 'has-session', '-t', name], { stdio: 'ignore', env: this.env }).status === 0;
  }

  // ---------------------------------------------------------------- observing

  /** Every live process of this fleet: HOME=<ours> in its environment, or our tmux server. */
  processes(): FleetProcess[] {
    const out: FleetProcess[] = [];
    for (const pid of livePids()) {
      if (pid === process.pid) continue;
      const st = procStat(pid);
      if (!st || st.state === 'Z' || st.state === 'X') continue;
      const argv = cmdline(pid);
      if (!argv) continue;
      const isTmux = this.ownsTmux && basename(argv[0] ?? '') === 'tmux' && argv.includes(this.tmuxSocket);
      if (!isTmux && !environHas(pid, this.homeEntry)) continue;
      out.push({ pid, ppid: st.ppid, argv, rssKb: rssKb(pid), starttime: st.starttime });
    }
    return out;
  }

  /** pid and its descendants among the fleet's processes, parents first. */
  tree(pid: number): FleetProcess[] {
    const all = this.processes();
    const out: FleetProcess[] = [];
    const add = (p: number): void => {
      const me = all.find((x) => x.pid === p);
      if (!me) return;
      out.push(me);
      for (const c of all.filter((x) => x.ppid === p)) add(c.pid);
    };
    add(pid);
    return out;
  }

  /** Every transcript the CLI wrote under this HOME, with what its first line says (unreadable heads: null). */
  transcripts(): Array<{ path: string; size: number; head: TranscriptHead | null }> {
    return filesUnder(this.spec.transcriptRoot(this.home))
      .filter((f) => this.spec.transcriptName.test(basename(f.path)))
      .map((f) => ({ ...f, head: this.spec.transcriptHead(firstLine(f.path)) }));
  }

  /** The transcript of a session id, or undefined. */
  transcriptOf(sessionId: string): { path: string; size: number; head: TranscriptHead | null } | undefined {
    return this.transcripts().find((t) => t.head?.sessionId === sessionId);
  }

  waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
    return waitFor(cond, timeoutMs, everyMs);
  }

  waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
    return waitFor(() => !pidAlive(pid), timeoutMs, 50);
  }

  // ---------------------------------------------------------------- teardown

  /** End every process of this fleet by pid, the tmux server, the API; remove the root. Throws if one stays. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    // lock files the CLI keeps outside HOME (Codex's app-server daemon: /tmp/codex-daemon-<uid>/<hash>.lock)
    const outside = new Set(
      this.processes()
        .flatMap((p) => openFiles(p.pid))
        .filter((f) => /^\/tmp\/codex-daemon-\d+\/[0-9a-f]+\.lock$/.test(f)),
    );
    if (this.ownsTmux) spawnSync('tmux', ['-L', this.tmuxSocket, 'kill-server'], { stdio: 'ignore', env: this.env });
    else
      for (const name of this.tmuxSessions)
        spawnSync('tmux', ['-L', this.tmuxSocket, 'kill-session', '-t', name], { stdio: 'ignore', env: this.env });
    for (let round = 0; round < 6; round++) {
      const procs = this.processes();
      if (!procs.length) break;
      for (const p of procs) this.kill(p.pid);
      await waitFor(() => procs.every((p) => !pidAlive(p.pid)), 3_000, 25);
    }
    await this.api.close();
    const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
    if (this.ownsTmux) rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${uid}`, this.tmuxSocket), { force: true });
    // …and the unix socket named like each lock, beside it
    for (const f of outside) for (const g of [f, f.replace(/\.lock$/, '')]) rmSync(g, { force: true });
    rmSync(this.root, { recursive: true, force: true });
    const left = this.processes();
    if (left.length)
      throw new Error(`agent fleet: processes left after destroy: ${left.map((p) => `${p.pid} ${p.argv.join(' ')}`).join('; ')}`);
  }

  private kill(pid: number): void {
    const argv = cmdline(pid);
    if (!argv) return;
    const ours = (this.ownsTmux && basename(argv[0] ?? '') === 'tmux' && argv.includes(this.tmuxSocket)) || environHas(pid, this.homeEntry);
    if (!ours) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  private assertLive(): void {
    if (this.destroyed) throw new Error('agent fleet: already destroyed');
  }
}
