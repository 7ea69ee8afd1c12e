// A fleet of REAL Claude Code sessions for sunset's real-client tests: the real `claude` binary (see
// install.ts), a private HOME per fleet, its own stand-in Messages API (messages-api.ts) and its own tmux
// server (`tmux -L <unique>`). Nothing touches the real ~/.claude or the network.
//
//   const fleet = await RealFleet.create();                 // afterAll/afterEach: await fleet.destroy()
//   const bg = await fleet.startBackground('[[state:done]] tidy up');
//   await fleet.waitFor(async () => (await fleet.rosterRow(bg.shortId))?.state === 'done', 30_000);
//   const it = await fleet.startInteractive();
//   fleet.typeInto(it.paneId, '/exit');
//   fleet.api.userTextsSeen(bg.sessionId);
//
// Sessions leave by their own exit path (`claude stop <id>`, `/exit` typed). The harness itself only
// signals processes of its own fleet, by pid, in destroy().
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { cmdline, environHas, fdTargets, livePids, pidAlive, procStat, rssKb, sleep, waitFor } from '../proc.js';
import { ensureClaudeCode, CLAUDE_CODE_VERSION } from './install.js';
import { MessagesApi } from './messages-api.js';

export { CLAUDE_CODE_VERSION } from './install.js';
export { MessagesApi } from './messages-api.js';

// ------------------------------------------------------------------ types

/** A row of `claude agents --json --all` (2.1.328). */
export interface RosterRow {
  /** the session process; absent on a record and for ~1 s after `claude --bg` */
  pid?: number;
  /** background only: the 8-hex short id */
  id?: string;
  cwd: string;
  kind: 'background' | 'interactive' | string;
  /** epoch milliseconds */
  startedAt: number;
  sessionId: string;
  name?: string;
  /** live rows only: idle | busy | waiting */
  status?: string;
  waitingFor?: string;
  /** background only: working | blocked | done | failed | stopped */
  state?: string;
  [k: string]: unknown;
}

export interface BackgroundSession {
  kind: 'background';
  shortId: string;
  sessionId: string;
  pid: number;
  cwd: string;
  name: string | undefined;
  /** what `claude --bg` printed */
  output: string;
}

export interface InteractiveSession {
  kind: 'interactive';
  sessionId: string;
  pid: number;
  paneId: string;
  tmuxSession: string;
  cwd: string;
  name: string | undefined;
}

/** A person's client (`claude attach <x>`, the agent view), in a pane of its own on the private tmux server. */
export interface ClientHandle {
  pid: number;
  argv: string[];
  paneId: string;
  tmuxSession: string;
  close(): Promise<void>;
}

export type ProcessRole =
  | 'daemon'
  | 'pty-host'
  | 'spare-pty-host'
  | 'session'
  | 'spare'
  /** the session an open agent view claims from the spare for its "new session" box (hidden from the roster) */
  | 'view-session'
  | 'view-pty-host'
  | 'interactive'
  | 'attach'
  | 'agent-view'
  | 'cli'
  | 'tmux'
  | 'other';

export interface FleetProcess {
  pid: number;
  ppid: number;
  argv: string[];
  role: ProcessRole;
  /** resident set, KiB (VmRSS) */
  rssKb: number;
  /** the session id, for session / interactive processes (from sessions/<pid>.json) */
  sessionId?: string;
  /** background short id, for session and pty-host processes */
  shortId?: string;
}

export interface MemoryReport {
  /** MiB per group; each entry lists the pids counted */
  daemon: { mb: number; pids: number[] };
  ptyHosts: { mb: number; pids: number[] };
  sessions: { mb: number; pids: number[] };
  spare: { mb: number; pids: number[] };
  /** a person's clients: `claude attach`, the agent view */
  clients: { mb: number; pids: number[] };
  /** what an open agent view holds besides itself: the session (and its pty host) claimed for its input box */
  viewSessions: { mb: number; pids: number[] };
  other: { mb: number; pids: number[] };
  totalMb: number;
  /** per process: pid → { role, mb } */
  byPid: Record<number, { role: ProcessRole; mb: number }>;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface RealFleetOptions {
  /** Claude Code version (default: the pinned one) */
  version?: string;
  /** a binary to use instead of ensureClaudeCode(version) */
  binary?: string;
  /** extra entries merged into ~/.claude/settings.json */
  settings?: Record<string, unknown>;
  /** Bash permission rules allowed without a prompt (default: sleep and true — what [[bg:…]] uses) */
  allow?: string[];
  /** extra env for every child */
  env?: Record<string, string>;
}

// ------------------------------------------------------------------ /proc helpers

export { cmdline, pidAlive } from '../proc.js';

/** Unix socket inodes a process holds open (from /proc/<pid>/fd). */
export function socketInodes(pid: number): number[] {
  return fdTargets(pid).flatMap((t) => {
    const m = /^socket:\[(\d+)\]$/.exec(t);
    return m ? [Number(m[1])] : [];
  });
}

/** Poll until cond() is true or the deadline passes; returns whether it became true. */
export { waitFor } from '../proc.js';

export function slugOf(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, '-');
}

// key names whose string values are secrets: rvAuth, ptyAuth, peerToken, nonce, CLAUDE_BG_SESSION_CREDENTIAL, …
// ("tokens", a count, is not one); "env-key" is the credential's *kind*, not a secret, and is kept
const SECRET_KEY = /(auth|token|secret|password|apikey|api_key|credential|nonce|key)$/i;
const NOT_SECRET = new Set(['env-key']);

/** A deep copy with the values of secret-looking keys replaced by "REDACTED". */
export function redact<T>(v: T): T {
  if (Array.isArray(v)) return v.map((x) => redact(x)) as T;
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      out[k] = SECRET_KEY.test(k) && typeof x === 'string' && !NOT_SECRET.has(x) ? 'REDACTED' : redact(x);
    }
    return out as T;
  }
  return v;
}

function readJson<T = any>(file: string): T | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

function writeAtomic(file: string, data: string): void {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

const NAME_OK = /^[A-Za-z0-9._-]+$/;
const ROOT_PREFIX = 'sunset-real-';
const escapeRe = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ------------------------------------------------------------------ the fleet

export class RealFleet {
  readonly root: string;
  readonly home: string;
  /** $HOME/.claude */
  readonly claudeDir: string;
  readonly workRoot: string;
  readonly binary: string;
  readonly version: string;
  readonly api: MessagesApi;
  readonly tmuxSocket: string;
  readonly apiKey: string;
  /** the environment every child of this fleet gets */
  readonly env: NodeJS.ProcessEnv;
  /** `claude agents --json --all` as argv */
  readonly rosterCommand: string[];

  private readonly homeEntry: Buffer;
  private readonly seenPids = new Set<number>();
  private readonly clients = new Map<number, ClientHandle>();
  private destroyed = false;
  private seq = 0;

  private constructor(o: { root: string; binary: string; version: string; api: MessagesApi; env: NodeJS.ProcessEnv; apiKey: string }) {
    this.root = o.root;
    this.home = join(o.root, 'home');
    this.claudeDir = join(this.home, '.claude');
    this.workRoot = join(o.root, 'work');
    this.binary = o.binary;
    this.version = o.version;
    this.api = o.api;
    this.env = o.env;
    this.apiKey = o.apiKey;
    this.tmuxSocket = `sunset-real-${randomBytes(5).toString('hex')}`;
    this.homeEntry = Buffer.from(`HOME=${this.home}\0`);
    this.rosterCommand = [this.binary, 'agents', '--json', '--all'];
  }

  static async create(opts: RealFleetOptions = {}): Promise<RealFleet> {
    const version = opts.version ?? CLAUDE_CODE_VERSION;
    const binary = opts.binary ?? (await ensureClaudeCode(version));
    await RealFleet.reapOrphans();
    const root = mkdtempSync(join(tmpdir(), ROOT_PREFIX));
    writeFileSync(
      join(root, 'owner.json'),
      `${JSON.stringify({ pid: process.pid, procStart: procStat(process.pid)?.starttime ?? null })}\n`,
    );
    let api: MessagesApi | undefined;
    try {
      api = await MessagesApi.start();
      const home = join(root, 'home');
      const apiKey = `sk-ant-api03-standin-${randomBytes(12).toString('hex')}`;
      const vars: Record<string, string> = {
        ANTHROPIC_BASE_URL: api.url,
        ANTHROPIC_API_KEY: apiKey,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
        DISABLE_BUG_COMMAND: '1',
        CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
        ...opts.env,
      };
      const env: NodeJS.ProcessEnv = {
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
        ...vars,
      };
      const f = new RealFleet({ root, binary, version, api, env, apiKey });
      for (const d of [f.claudeDir, f.workRoot, env.XDG_CONFIG_HOME!, env.XDG_CACHE_HOME!, env.XDG_DATA_HOME!, env.XDG_STATE_HOME!]) {
        mkdirSync(d, { recursive: true });
      }
      const allow = opts.allow ?? ['Bash(sleep:*)', 'Bash(true)'];
      const settings: Record<string, unknown> = {
        env: vars,
        apiKeyHelper: `echo ${apiKey}`,
        permissions: { allow },
        ...opts.settings,
      };
      writeFileSync(join(f.claudeDir, 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
      // trust walks up the folder tree: trusting the work root (and HOME) trusts every folder below it
      const trusted = { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true };
      writeFileSync(
        join(home, '.claude.json'),
        `${JSON.stringify(
          {
            hasCompletedOnboarding: true,
            lastOnboardingVersion: version,
            numStartups: 1,
            theme: 'dark',
            autoUpdates: false,
            bypassPermissionsModeAccepted: true,
            customApiKeyResponses: { approved: [apiKey.slice(-20), apiKey], rejected: [] },
            projects: { [f.workRoot]: trusted, [root]: trusted, [home]: trusted },
          },
          null,
          2,
        )}\n`,
      );
      return f;
    } catch (e) {
      await api?.close();
      rmSync(root, { recursive: true, force: true });
      throw e;
    }
  }

  /**
   * End what crashed test runs left: processes whose HOME is a fleet home (<tmp>/sunset-real-XXXXXX/home) whose
   * owner (the process that created the fleet, root/owner.json) is gone. Live fleets of other processes are
   * left alone. Returns the pids ended. Called by create().
   */
  static async reapOrphans(): Promise<number[]> {
    const homeRe = new RegExp(`^${escapeRe(join(tmpdir(), ROOT_PREFIX))}[^/]+/home$`);
    const byRoot = new Map<string, Array<{ pid: number; daemon: boolean }>>();
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
      const root = dirname(home);
      const list = byRoot.get(root) ?? [];
      list.push({
        pid,
        daemon:
          argvWords(cmdline(pid) ?? [])
            .slice(1, 3)
            .join(' ') === 'daemon run',
      });
      byRoot.set(root, list);
    }
    const ended: number[] = [];
    for (const [root, list] of byRoot) {
      const owner = readJson<{ pid?: number; procStart?: number | string | null }>(join(root, 'owner.json'));
      // (a string, from an owner.json of an earlier harness)
      const ownerAlive =
        !!owner?.pid && pidAlive(owner.pid) && (!owner.procStart || String(procStat(owner.pid)?.starttime) === String(owner.procStart));
      if (ownerAlive) continue;
      const ordered = [...list.filter((x) => x.daemon), ...list.filter((x) => !x.daemon)];
      for (const { pid } of ordered) {
        try {
          process.kill(pid, 'SIGKILL');
          ended.push(pid);
        } catch {
          /* gone */
        }
      }
      await waitFor(() => list.every((x) => !pidAlive(x.pid)), 5_000, 25);
      for (const { pid } of list) rmSync(join('/tmp', 'cc-socks', `${pid}.sock`), { force: true });
      const claudeDir = join(root, 'home', '.claude');
      const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
      rmSync(join('/tmp', `cc-daemon-${uid}`, createHash('sha256').update(claudeDir).digest('hex').slice(0, 8)), {
        recursive: true,
        force: true,
      });
      rmSync(root, { recursive: true, force: true });
    }
    return ended;
  }

  // ---------------------------------------------------------------- folders and files

  /** A new working folder under the fleet's (trusted) work root. */
  workdir(name?: string): string {
    const n = name ?? `w${++this.seq}-${randomBytes(2).toString('hex')}`;
    if (!NAME_OK.test(n)) throw new Error(`real fleet: bad folder name ${JSON.stringify(n)}`);
    const d = join(this.workRoot, n);
    mkdirSync(d, { recursive: true });
    return d;
  }

  /** Make a folder outside the work root trusted (read-modify-write of ~/.claude.json: do it while no session runs). */
  trust(dir: string): void {
    const file = join(this.home, '.claude.json');
    const cur = readJson<Record<string, any>>(file) ?? {};
    cur.projects = { ...(cur.projects ?? {}), [resolve(dir)]: { ...(cur.projects?.[resolve(dir)] ?? {}), hasTrustDialogAccepted: true } };
    writeAtomic(file, `${JSON.stringify(cur, null, 2)}\n`);
  }

  /** Set keys of ~/.claude.json, Claude Code's global config (read-modify-write: do it while no session runs). */
  setGlobalConfig(patch: Record<string, unknown>): void {
    const file = join(this.home, '.claude.json');
    writeAtomic(file, `${JSON.stringify({ ...(readJson<Record<string, unknown>>(file) ?? {}), ...patch }, null, 2)}\n`);
  }

  private cwdFor(cwd?: string): string {
    if (!cwd) return this.workdir();
    const abs = resolve(cwd);
    mkdirSync(abs, { recursive: true });
    if (!`${abs}/`.startsWith(`${this.workRoot}/`) && !`${abs}/`.startsWith(`${this.root}/`)) this.trust(abs);
    return abs;
  }

  /** ~/.claude/sessions/<pid>.json of every live-or-dead session file, parsed (key files left out). */
  sessionFiles(): Array<Record<string, any>> {
    const dir = join(this.claudeDir, 'sessions');
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const out: Array<Record<string, any>> = [];
    for (const n of names) {
      if (!/^\d+\.json$/.test(n)) continue;
      const j = readJson(join(dir, n));
      if (j) out.push(j);
    }
    return out;
  }

  /** ~/.claude/sessions/<pid>.json, or null. */
  sessionFile(pid: number): Record<string, any> | null {
    return readJson(join(this.claudeDir, 'sessions', `${pid}.json`));
  }

  /** ~/.claude/jobs/<shortId>/state.json, or null. */
  jobState(shortId: string): Record<string, any> | null {
    if (!/^[0-9a-f]{8}$/.test(shortId)) throw new Error(`real fleet: bad short id ${shortId}`);
    return readJson(join(this.claudeDir, 'jobs', shortId, 'state.json'));
  }

  /** ~/.claude/jobs/<shortId>/timeline.jsonl, parsed. */
  jobTimeline(shortId: string): Array<Record<string, any>> {
    if (!/^[0-9a-f]{8}$/.test(shortId)) throw new Error(`real fleet: bad short id ${shortId}`);
    try {
      return readFileSync(join(this.claudeDir, 'jobs', shortId, 'timeline.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .flatMap((l) => {
          try {
            return [JSON.parse(l)];
          } catch {
            return [];
          }
        });
    } catch {
      return [];
    }
  }

  /** ~/.claude/daemon/roster.json, secrets REDACTED unless raw is asked for (never print a raw one). */
  daemonRoster(opts: { raw?: boolean } = {}): Record<string, any> | null {
    const j = readJson(join(this.claudeDir, 'daemon', 'roster.json'));
    return j && !opts.raw ? redact(j) : j;
  }

  /** The transcript file of a session. */
  transcriptPath(sessionId: string, cwd: string): string {
    return join(this.claudeDir, 'projects', slugOf(cwd), `${sessionId}.jsonl`);
  }

  /** The daemon's runtime folder for this HOME: /tmp/cc-daemon-<uid>/<sha256(~/.claude)[0:8]>. */
  daemonRuntimeDir(): string {
    const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
    return join('/tmp', `cc-daemon-${uid}`, createHash('sha256').update(this.claudeDir).digest('hex').slice(0, 8));
  }

  // ---------------------------------------------------------------- running the CLI

  /** Run the real CLI with the fleet's env (cwd default: a fresh work folder) and collect its result. */
  claude(args: string[], opts: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RunResult> {
    this.assertLive();
    const cwd = opts.cwd ?? this.workRoot;
    const t0 = Date.now();
    return new Promise((res, rej) => {
      const child = spawn(this.binary, args, { cwd, env: { ...this.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
      if (child.pid) this.seenPids.add(child.pid);
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

  /** `claude agents --json --all`, parsed. */
  async roster(): Promise<RosterRow[]> {
    const r = await this.claude(['agents', '--json', '--all'], { timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`real fleet: claude agents --json --all exited ${r.code ?? r.signal}: ${r.stderr.trim()}`);
    return JSON.parse(r.stdout) as RosterRow[];
  }

  /** The roster row of a session (by short id, sessionId or pid), or undefined. */
  async rosterRow(key: string | number): Promise<RosterRow | undefined> {
    const rows = await this.roster();
    return rows.find((r) => r.id === key || r.sessionId === key || r.pid === key);
  }

  /**
   * Poll the roster until the row of `key` (short id, sessionId or pid) satisfies pred; returns that row.
   * Throws at the deadline with the last row seen.
   */
  async waitForRow(
    key: string | number,
    pred: (row: RosterRow | undefined) => boolean,
    timeoutMs = 30_000,
  ): Promise<RosterRow | undefined> {
    let row: RosterRow | undefined;
    const ok = await this.waitFor(async () => pred((row = await this.rosterRow(key))), timeoutMs, 200);
    if (!ok)
      throw new Error(`real fleet: roster row ${key} did not reach the expected shape in ${timeoutMs} ms; last: ${JSON.stringify(row)}`);
    return row;
  }

  /** `claude stop <id>`. */
  stop(shortId: string): Promise<RunResult> {
    return this.claude(['stop', shortId], { timeoutMs: 30_000 });
  }

  /** Pinned short ids (~/.claude/jobs/pins.json; [] when there is none). */
  pins(): string[] {
    const j = readJson(join(this.claudeDir, 'jobs', 'pins.json'));
    return Array.isArray(j) ? j.filter((x) => typeof x === 'string') : [];
  }

  /**
   * Pin a session the way the CLI writes it: ~/.claude/jobs/pins.json, a 2-space-indented JSON array with no
   * final newline. (A person pins with ctrl+t in the agent view; this writes the same file directly.)
   */
  pin(shortId: string): void {
    if (!/^[0-9a-f]{8}$/.test(shortId)) throw new Error(`real fleet: bad short id ${shortId}`);
    const cur = this.pins();
    if (cur.includes(shortId)) return;
    mkdirSync(join(this.claudeDir, 'jobs'), { recursive: true });
    writeAtomic(join(this.claudeDir, 'jobs', 'pins.json'), JSON.stringify([...cur, shortId], null, 2));
  }

  /**
   * Toggle a pin the way a person does: open the agent view, move the cursor to the session's row (by its
   * roster name) and press ctrl+t; resolves once pins.json changed, then closes the view. Returns the pins.
   */
  async togglePinInAgentView(shortId: string, timeoutMs = 20_000): Promise<string[]> {
    const row = await this.rosterRow(shortId);
    if (!row?.name) throw new Error(`real fleet: no named roster row for ${shortId}`);
    const name = row.name;
    const before = JSON.stringify(this.pins());
    const view = await this.agentView();
    try {
      await this.waitForScreen(view.paneId, new RegExp(escapeRe(name)), timeoutMs);
      const cursorOn = (): boolean => {
        const line = this.capturePaneSafe(view.paneId)
          .split('\n')
          .find((l) => /^\s*❯\s/.test(l) && !/describe a task/.test(l));
        return !!line && line.includes(name);
      };
      for (const key of ['Up', 'Down']) {
        for (let i = 0; i < 30 && !cursorOn(); i++) {
          this.pressKeys(view.paneId, key);
          await sleep(120);
        }
        if (cursorOn()) break;
      }
      if (!cursorOn())
        throw new Error(`real fleet: could not put the agent view's cursor on ${name}; screen:\n${this.capturePaneSafe(view.paneId)}`);
      this.pressKeys(view.paneId, 'C-t');
      if (!(await this.waitFor(() => JSON.stringify(this.pins()) !== before, timeoutMs, 50)))
        throw new Error(`real fleet: ctrl+t did not change pins.json`);
      return this.pins();
    } finally {
      await view.close();
    }
  }

  unpin(shortId: string): void {
    const cur = this.pins();
    if (!cur.includes(shortId)) return;
    writeAtomic(
      join(this.claudeDir, 'jobs', 'pins.json'),
      JSON.stringify(
        cur.filter((x) => x !== shortId),
        null,
        2,
      ),
    );
    rmSync(join(this.claudeDir, 'jobs', shortId, 'order'), { force: true });
  }

  // ---------------------------------------------------------------- starting sessions

  /**
   * `claude --bg <prompt>` (plus `--name <name>` when given and any extra args); resolves once the roster
   * shows the session with a pid.
   */
  async startBackground(
    prompt: string,
    opts: { cwd?: string; name?: string; args?: string[]; timeoutMs?: number } = {},
  ): Promise<BackgroundSession> {
    this.assertLive();
    const cwd = this.cwdFor(opts.cwd);
    const args = ['--bg', ...(opts.name !== undefined ? ['--name', opts.name] : []), ...(opts.args ?? []), prompt];
    const r = await this.claude(args, { cwd, timeoutMs: opts.timeoutMs ?? 60_000 });
    const m = /backgrounded\s+·\s+([0-9a-f]{8})/.exec(r.stdout);
    if (r.code !== 0 || !m)
      throw new Error(`real fleet: claude --bg exited ${r.code ?? r.signal}: ${(r.stdout + r.stderr).trim().slice(0, 800)}`);
    const shortId = m[1];
    let row: RosterRow | undefined;
    const ok = await this.waitFor(
      async () => {
        row = await this.rosterRow(shortId);
        return typeof row?.pid === 'number';
      },
      opts.timeoutMs ?? 60_000,
      150,
    );
    if (!ok || !row || typeof row.pid !== 'number')
      throw new Error(`real fleet: background session ${shortId} did not show a pid in the roster`);
    this.seenPids.add(row.pid);
    return { kind: 'background', shortId, sessionId: row.sessionId, pid: row.pid, cwd: row.cwd, name: row.name, output: r.stdout };
  }

  /**
   * The real `claude` in a pane of a new tmux session on the private server (200×50). Resolves once the
   * roster shows it (and, unless waitReady is false, its input box is drawn).
   */
  async startInteractive(
    prompt?: string,
    opts: { cwd?: string; name?: string; args?: string[]; waitReady?: boolean; timeoutMs?: number } = {},
  ): Promise<InteractiveSession> {
    this.assertLive();
    const cwd = this.cwdFor(opts.cwd);
    const tmuxSession = `cc-${++this.seq}-${randomBytes(3).toString('hex')}`;
    const args = [...(opts.name !== undefined ? ['--name', opts.name] : []), ...(opts.args ?? [])];
    if (prompt !== undefined) args.push(prompt);
    const { paneId, panePid } = this.newTmuxSession(tmuxSession, cwd, [this.binary, ...args]);
    this.seenPids.add(panePid);
    const timeoutMs = opts.timeoutMs ?? 60_000;
    let row: RosterRow | undefined;
    const ok = await this.waitFor(
      async () => {
        if (!pidAlive(panePid)) throw new Error('gone');
        row = (await this.roster()).find((r) => r.pid === panePid);
        return !!row;
      },
      timeoutMs,
      150,
    );
    if (!ok || !row) {
      const screen = this.capturePaneSafe(paneId);
      throw new Error(
        `real fleet: interactive claude in ${tmuxSession} did not appear in the roster${pidAlive(panePid) ? '' : ' (it exited)'}; screen:\n${screen}`,
      );
    }
    const s: InteractiveSession = { kind: 'interactive', sessionId: row.sessionId, pid: panePid, paneId, tmuxSession, cwd, name: row.name };
    if (opts.waitReady !== false) await this.waitReady(paneId, timeoutMs);
    return s;
  }

  /** Wait until a pane running claude draws its input box (throws at the deadline, with the screen). */
  async waitReady(paneId: string, timeoutMs = 30_000): Promise<void> {
    const ok = await this.waitFor(() => isReadyScreen(this.capturePaneSafe(paneId)), timeoutMs, 100);
    if (!ok)
      throw new Error(`real fleet: pane ${paneId} not ready for input after ${timeoutMs} ms; screen:\n${this.capturePaneSafe(paneId)}`);
  }

  // ---------------------------------------------------------------- tmux

  /** Run a tmux command on the private server (argv words, no shell); returns stdout. Throws on failure. */
  tmux(args: string[]): string {
    const r = spawnSync('tmux', ['-L', this.tmuxSocket, ...args], { encoding: 'utf8', env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${(r.stderr || '').trim() || `exit ${r.status}`}`);
    return r.stdout;
  }

  private newTmuxSession(name: string, cwd: string, argv: string[]): { paneId: string; panePid: number } {
    const out = this.tmux([
      'new-session',
      '-d',
      '-P',
      '-F',
      '#{pane_id} #{pane_pid}',
      '-s',
      name,
      '-x',
      '200',
      '-y',
      '50',
      '-c',
      cwd,
      '--',
      ...argv,
    ]);
    const [paneId, pid] = out.trim().split(' ');
    const panePid = Number(pid);
    if (!/^%\d+$/.test(paneId) || !Number.isInteger(panePid))
      throw new Error(`real fleet: tmux new-session printed ${JSON.stringify(out)}`);
    return { paneId, panePid };
  }

  /** Type text into a pane literally, then Enter (separately, as the doctrine says). */
  typeInto(paneId: string, text: string): void {
    this.tmux(['send-keys', '-t', paneId, '-l', text]);
    this.tmux(['send-keys', '-t', paneId, 'Enter']);
  }

  /** Type text into a pane literally and leave it there: a person's draft, no Enter. */
  typeDraft(paneId: string, text: string): void {
    this.tmux(['send-keys', '-t', paneId, '-l', text]);
  }

  /** Press keys by tmux name (e.g. 'Enter', 'Escape', 'C-t', 'Down'). */
  pressKeys(paneId: string, ...keys: string[]): void {
    this.tmux(['send-keys', '-t', paneId, ...keys]);
  }

  /** The visible screen of a pane (plain text). */
  capturePane(paneId: string): string {
    return this.tmux(['capture-pane', '-p', '-t', paneId]);
  }

  private capturePaneSafe(paneId: string): string {
    try {
      return this.capturePane(paneId);
    } catch (e) {
      return `(no screen: ${(e as Error).message})`;
    }
  }

  /** Whether the tmux session still exists on the private server. */
  hasTmuxSession(name: string): boolean {
    return spawnSync('tmux', ['-L', this.tmuxSocket, 'has-session', '-t', name], { stdio: 'ignore', env: this.env }).status === 0;
  }

  /** Wait until screen text matching re shows in a pane. */
  async waitForScreen(paneId: string, re: RegExp, timeoutMs = 30_000): Promise<string> {
    let screen = '';
    const ok = await this.waitFor(() => re.test((screen = this.capturePaneSafe(paneId))), timeoutMs, 100);
    if (!ok) throw new Error(`real fleet: ${re} did not show in pane ${paneId} within ${timeoutMs} ms; screen:\n${screen}`);
    return screen;
  }

  // ---------------------------------------------------------------- a person's clients

  /** `claude attach <idOrName>` in its own pane (it needs a TTY); resolves once its process runs. */
  attach(idOrName: string, opts: { cwd?: string } = {}): Promise<ClientHandle> {
    return this.startClient(['attach', idOrName], opts.cwd);
  }

  /**
   * The agent view: `claude agents` with no --json, in its own pane. `argv` opens it another way, the whole argv
   * after the binary: ['--model', 'opus', 'agents'], or [] (a plain `claude`: the agent view once
   * setGlobalConfig({ defaultToAgentsView: true }), else an interactive session).
   */
  agentView(opts: { cwd?: string; args?: string[]; argv?: string[] } = {}): Promise<ClientHandle> {
    return this.startClient(opts.argv ?? ['agents', ...(opts.args ?? [])], opts.cwd);
  }

  /** The clients opened with attach() / agentView() and not closed yet. */
  openClients(): ClientHandle[] {
    return [...this.clients.values()];
  }

  private async startClient(args: string[], cwd?: string): Promise<ClientHandle> {
    this.assertLive();
    const tmuxSession = `client-${++this.seq}-${randomBytes(3).toString('hex')}`;
    const dir = cwd ? this.cwdFor(cwd) : this.workRoot;
    const { paneId, panePid } = this.newTmuxSession(tmuxSession, dir, [this.binary, ...args]);
    this.seenPids.add(panePid);
    let argv: string[] = [];
    // the client process is the pane's process (tmux execs the argv given after --)
    const ok = await this.waitFor(
      () => {
        argv = cmdline(panePid) ?? [];
        // the binary's own argv (a pane's process shows tmux's until it execs)
        return argv[0] === this.binary && (args.length === 0 || argv.includes(args[0]));
      },
      10_000,
      50,
    );
    if (!ok) throw new Error(`real fleet: client ${args.join(' ')} did not start; screen:\n${this.capturePaneSafe(paneId)}`);
    const handle: ClientHandle = {
      pid: panePid,
      argv,
      paneId,
      tmuxSession,
      close: async () => {
        // a person closes the terminal: the pane's tty goes away (SIGHUP from tmux), like closing a window
        if (this.hasTmuxSession(tmuxSession)) {
          try {
            this.tmux(['kill-session', '-t', tmuxSession]);
          } catch {
            /* gone meanwhile */
          }
        }
        await this.waitFor(() => !pidAlive(panePid), 10_000, 50);
        this.clients.delete(panePid);
      },
    };
    this.clients.set(panePid, handle);
    return handle;
  }

  // ---------------------------------------------------------------- observing processes

  /** Every live process of this fleet: HOME=<ours> in its environment, or the private tmux server. */
  processes(): FleetProcess[] {
    const sessionsByPid = new Map<number, Record<string, any>>();
    for (const s of this.sessionFiles()) if (typeof s.pid === 'number') sessionsByPid.set(s.pid, s);
    const roster = this.daemonRoster({ raw: true });
    const hostOf = new Map<number, string>(); // pty host pid → short id
    const replOf = new Map<number, string>(); // session pid → short id
    const viewShorts = new Set<string>(); // claimed by an agent view, no job yet
    for (const [short, w] of Object.entries<any>(roster?.workers ?? {})) {
      if (typeof w?.pid === 'number') hostOf.set(w.pid, short);
      if (typeof w?.replPid === 'number') replOf.set(w.replPid, short);
      if (w?.dispatch?.source === 'spare' && /^[0-9a-f]{8}$/.test(short) && !existsSync(join(this.claudeDir, 'jobs', short, 'state.json')))
        viewShorts.add(short);
    }
    const procs: FleetProcess[] = [];
    for (const pid of livePids()) {
      if (pid === process.pid) continue;
      const st = procStat(pid);
      if (!st || st.state === 'Z' || st.state === 'X') continue;
      const argv = cmdline(pid);
      if (!argv) continue;
      const isTmuxServer = basename(argv[0] ?? '') === 'tmux' && argv.includes(this.tmuxSocket);
      if (!isTmuxServer && !environHas(pid, this.homeEntry)) continue;
      this.seenPids.add(pid);
      procs.push({ pid, ppid: st.ppid, argv, role: 'other', rssKb: rssKb(pid) });
    }
    for (const p of procs) {
      const a = argvWords(p.argv);
      const sess = sessionsByPid.get(p.pid);
      if (basename(a[0] ?? '') === 'tmux') p.role = 'tmux';
      else if (a[1] === 'daemon' && a[2] === 'run') p.role = 'daemon';
      else if (a[1] === 'bg-pty-host') p.role = 'pty-host';
      else if (a[1] === 'bg-spare') p.role = sess || replOf.has(p.pid) ? 'session' : 'spare';
      else if (sess) p.role = sess.kind === 'bg' ? 'session' : 'interactive';
      else if (replOf.has(p.pid)) p.role = 'session';
      else if (a[0] === this.binary || a[0] === 'claude') {
        if (a[1] === 'attach') p.role = 'attach';
        else if (a[1] === 'agents' && !a.includes('--json')) p.role = 'agent-view';
        else p.role = 'cli';
      }
      if (sess && typeof sess.sessionId === 'string') p.sessionId = sess.sessionId;
      if (replOf.has(p.pid)) p.shortId = replOf.get(p.pid);
      else if (typeof sess?.jobId === 'string') p.shortId = sess.jobId;
      if (hostOf.has(p.pid)) p.shortId = hostOf.get(p.pid);
    }
    // a pty host whose child is not a session is the warm spare's
    for (const p of procs) {
      if (p.role !== 'pty-host') continue;
      const kids = procs.filter((c) => c.ppid === p.pid);
      if (!hostOf.has(p.pid) && !kids.some((c) => c.role === 'session')) p.role = 'spare-pty-host';
      if (!p.shortId) p.shortId = kids.find((c) => c.shortId)?.shortId;
    }
    // the agent view's claimed session says so in its sessions/<pid>.json ("spare": true, "agent": "claude")
    for (const p of procs) if (sessionsByPid.get(p.pid)?.spare === true && p.shortId) viewShorts.add(p.shortId);
    for (const p of procs) {
      if (!p.shortId || !viewShorts.has(p.shortId)) continue;
      if (p.role === 'session') p.role = 'view-session';
      else if (p.role === 'pty-host') p.role = 'view-pty-host';
    }
    return procs;
  }

  /** The pty host of a background session (its parent process), or null. */
  ptyHostOf(sessionPid: number): number | null {
    const st = procStat(sessionPid);
    if (!st) return null;
    const a = cmdline(st.ppid);
    return a && argvWords(a)[1] === 'bg-pty-host' ? st.ppid : null;
  }

  /** RSS of the fleet's processes, grouped as daemon / pty hosts / sessions / warm spare / clients / other. */
  memory(): MemoryReport {
    const g = (): { mb: number; pids: number[] } => ({ mb: 0, pids: [] });
    const rep: MemoryReport = {
      daemon: g(),
      ptyHosts: g(),
      sessions: g(),
      spare: g(),
      clients: g(),
      viewSessions: g(),
      other: g(),
      totalMb: 0,
      byPid: {},
    };
    for (const p of this.processes()) {
      const mb = p.rssKb / 1024;
      const bucket =
        p.role === 'daemon'
          ? rep.daemon
          : p.role === 'pty-host'
            ? rep.ptyHosts
            : p.role === 'session' || p.role === 'interactive'
              ? rep.sessions
              : p.role === 'spare' || p.role === 'spare-pty-host'
                ? rep.spare
                : p.role === 'attach' || p.role === 'agent-view'
                  ? rep.clients
                  : p.role === 'view-session' || p.role === 'view-pty-host'
                    ? rep.viewSessions
                    : rep.other;
      bucket.mb += mb;
      bucket.pids.push(p.pid);
      rep.totalMb += mb;
      rep.byPid[p.pid] = { role: p.role, mb: Math.round(mb * 10) / 10 };
    }
    for (const k of ['daemon', 'ptyHosts', 'sessions', 'spare', 'clients', 'viewSessions', 'other'] as const)
      rep[k].mb = Math.round(rep[k].mb * 10) / 10;
    rep.totalMb = Math.round(rep.totalMb * 10) / 10;
    return rep;
  }

  /** Polling with a deadline (see waitFor). */
  waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
    return waitFor(cond, timeoutMs, everyMs);
  }

  /** Wait for a pid to end (not alive, or a zombie). */
  waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
    return waitFor(() => !pidAlive(pid), timeoutMs, 50);
  }

  // ---------------------------------------------------------------- teardown

  /**
   * End every process of this fleet by pid (the daemon first: a background session signalled is restarted
   * by it), kill the private tmux server, stop the API, remove the temp root and the CLI's runtime files of
   * this HOME under /tmp. Idempotent; waits until no process of the fleet is left (throws if one stays).
   */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    const killAll = (): number[] => {
      const procs = this.processes();
      const daemons = procs.filter((p) => p.role === 'daemon');
      for (const p of daemons) this.kill(p.pid);
      for (const p of procs) if (p.role !== 'daemon') this.kill(p.pid);
      return procs.map((p) => p.pid);
    };
    spawnSync('tmux', ['-L', this.tmuxSocket, 'kill-server'], { stdio: 'ignore', env: this.env });
    let left: FleetProcess[] = [];
    for (let round = 0; round < 6; round++) {
      const pids = killAll();
      if (!pids.length) break;
      await waitFor(() => pids.every((p) => !pidAlive(p)), 3_000, 25);
      left = this.processes();
      if (!left.length) break;
    }
    await this.api.close();
    const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
    for (const pid of this.seenPids) rmSync(join('/tmp', 'cc-socks', `${pid}.sock`), { force: true });
    rmSync(this.daemonRuntimeDir(), { recursive: true, force: true });
    // the Bash tool's output folders for our cwds: /tmp/claude-<uid>/<slug of cwd>
    try {
      const prefix = slugOf(this.root);
      for (const n of readdirSync(join('/tmp', `claude-${uid}`)))
        if (n.startsWith(prefix)) rmSync(join('/tmp', `claude-${uid}`, n), { recursive: true, force: true });
    } catch {
      /* none */
    }
    rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${uid}`, this.tmuxSocket), { force: true });
    rmSync(this.root, { recursive: true, force: true });
    left = this.processesAfterDestroy();
    if (left.length)
      throw new Error(`real fleet: processes left after destroy: ${left.map((p) => `${p.pid} ${p.argv.join(' ')}`).join('; ')}`);
  }

  /** After destroy: anything still carrying our HOME (should be nothing). */
  private processesAfterDestroy(): FleetProcess[] {
    const out: FleetProcess[] = [];
    for (const pid of livePids()) {
      if (pid === process.pid || !pidAlive(pid)) continue;
      const argv = cmdline(pid);
      if (!argv) continue;
      const isTmuxServer = basename(argv[0] ?? '') === 'tmux' && argv.includes(this.tmuxSocket);
      if (isTmuxServer || environHas(pid, this.homeEntry)) out.push({ pid, ppid: procStat(pid)?.ppid ?? 0, argv, role: 'other', rssKb: 0 });
    }
    return out;
  }

  /** SIGKILL one process of ours (checked again right before: HOME=<ours> or our tmux server). */
  private kill(pid: number): void {
    const argv = cmdline(pid);
    if (!argv) return;
    const ours = (basename(argv[0] ?? '') === 'tmux' && argv.includes(this.tmuxSocket)) || environHas(pid, this.homeEntry);
    if (!ours) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  private assertLive(): void {
    if (this.destroyed) throw new Error('real fleet: already destroyed');
  }
}

/**
 * argv as words: the CLI's helper processes rewrite their process title, so /proc/<pid>/cmdline's first
 * entry reads "claude bg-pty-host" / "claude bg-spare" (one entry with a space) and the rest are the
 * arguments. This splits such a first entry, so words[1] is always the subcommand.
 */
export function argvWords(argv: string[]): string[] {
  const a0 = argv[0] ?? '';
  if (/^claude [a-z-]+$/.test(a0)) return [...a0.split(' '), ...argv.slice(1)];
  return argv;
}

/** Whether a captured claude screen shows the input box ready for typing. */
export function isReadyScreen(screen: string): boolean {
  // the prompt box: a line starting with the prompt glyph between two rules
  return /^\s*[>❯]\s/m.test(screen) && /[─━]{10,}/.test(screen);
}
