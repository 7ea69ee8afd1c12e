// The test fleet: a stand-in `claude` CLI and stand-in agent processes, real processes on a private tmux
// server, for sunset's tests, demo and benchmarks. No mocks: sessions leave only by their own exit path
// (`claude stop <id>`, `/exit` + Enter typed into the pane), and every signal they receive is recorded.
//
//   const fleet = await TestFleet.create();            // afterEach: await fleet.destroy()
//   const cfg = parseConfig(fleet.config({ windows: { grace: '100ms' } }));
//   const bg = await fleet.spawnBackground({ mode: 'idle', transcriptAgeMs: 3_600_000 });
//   const it = await fleet.spawnInteractive({ mode: 'stubborn' });
//   ... run sunset ...
//   expect(fleet.ended(bg)[0]?.how).toBe('stop');      // left by `claude stop`
//   expect(fleet.requests(it)).toHaveLength(3);        // three /exit typed, then gave up
//   expect(fleet.signals()).toEqual([]);               // D1: nobody signalled an agent
//   expect(fleet.unexplainedDeaths()).toEqual([]);     // nobody SIGKILLed one either
//
// Registry layout (<root>/registry): agents/<id>.json rows (written atomically by agents and the harness),
// records.jsonl (bulk records), status/<id> (status override), extra/<id>.json (extra row fields, applied
// last), stop/<id> (stop requests), ended/<id>-<pid>.json (clean exits), pids.jsonl (every agent process
// ever started), requests.jsonl, signals.jsonl, typed.jsonl, fault, teardown.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  type Dirent,
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readJsonLines } from '../../src/store/state-files.js';

export type Mode = 'idle' | 'busy' | 'waiting' | 'stubborn';
export type Status = 'busy' | 'waiting' | 'idle';

export interface Agent {
  id: string;
  sessionId: string;
  kind: 'background' | 'interactive';
  /** The pid the harness started (for a bg-on-exit agent: the pane process; see currentPid()). */
  pid: number;
  mode: Mode;
  transcriptPath: string;
  cwd: string;
  tmuxSession?: string;
  paneId?: string;
  /** A benchmark stand-in from spawnLight(): a plain process that cannot respond to stop. */
  light?: boolean;
}

export interface SpawnOptions {
  id?: string;
  sessionId?: string;
  mode?: Mode;
  /** After the first transcript line, set the transcript's mtime this far in the past. */
  transcriptAgeMs?: number;
  /** The agent keeps no transcript at all (sunset must read "transcript unknown"). */
  noTranscript?: boolean;
  /** Extra fields shown on the roster row (e.g. { attached: true }); see setRowField. */
  extra?: Record<string, unknown>;
  cwd?: string;
  /** Hold this many MB resident (memory-pressure tests). */
  ballastMB?: number;
  /** The session's name (the real CLI's `name`; `claude attach <name>` takes it). */
  name?: string;
}

export interface InteractiveOptions extends SpawnOptions {
  /** `/exit` turns the session into a background one (same id, new pid) instead of ending it. */
  bgOnExit?: boolean;
  /** Keep the pane (dead) after its process exits: tmux remain-on-exit. */
  remainOnExit?: boolean;
}

export interface EndedRecord {
  id: string;
  how: string;
  pid: number;
  transcriptBytesBefore: number;
  transcriptBytesAfter: number;
  at: string;
}
export interface RequestRecord {
  id: string;
  pid: number;
  how: string;
  at: string;
}
export interface SignalRecord {
  id: string;
  pid: number;
  signal: string;
  at: string;
}
export interface TypedRecord {
  id: string;
  pid: number;
  line: string | null;
  at: string;
  eof?: boolean;
}
export interface RosterRow {
  id: string;
  sessionId: string;
  kind: 'interactive' | 'background';
  pid: number | null;
  state: string;
  status: string;
  cwd: string;
  startedAt: string;
  [k: string]: unknown;
}
export interface Attachment {
  pid: number;
  close(): Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));

/** Locate a fleet script beside this module (source) or back in sim/fleet/ (compiled into dist/sim/fleet/). */
function locate(name: string): string {
  const candidates = [join(HERE, name), resolve(HERE, '..', '..', '..', 'sim', 'fleet', name)];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`test fleet: cannot find ${name} (looked in ${candidates.join(', ')})`);
}

export const claudeScript = (): string => locate('claude.mjs');
export const agentScript = (): string => locate('agent.mjs');
/** The stand-in Codex TUI (executable, `#!/usr/bin/env node`): fleet.agents.codex.command of a fleet that runs one. */
export const codexScript = (): string => locate('codex.mjs');

/** A stand-in Codex TUI session (spawnCodex): its pane's process, its session id, its rollout. */
export interface CodexAgent {
  id: string;
  sessionId: string;
  pid: number;
  cwd: string;
  tmuxSession: string;
  paneId: string;
  /** Its rollout ($CODEX_HOME/sessions/…/rollout-…-<sessionId>.jsonl), created by its first prompt. */
  rolloutPath: string;
}

/** The first file under dir (recursively) whose name passes `match`; null when none (or dir is missing). */
function findFile(dir: string, match: (name: string) => boolean): string | null {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const f = findFile(p, match);
      if (f) return f;
    } else if (match(e.name)) return p;
  }
  return null;
}

const ID_OK = /^[A-Za-z0-9._-]+$/;
function checkId(id: string): string {
  if (!ID_OK.test(id) || id.includes('..') || id.startsWith('.')) throw new Error(`test fleet: bad id ${JSON.stringify(id)}`);
  return id;
}

const shortId = (): string => randomBytes(4).toString('hex');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** alive = /proc/<pid> exists and is not a zombie. */
export function pidAlive(pid: number | null | undefined): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const i = stat.lastIndexOf(')');
    const state = stat.slice(i + 2, i + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

function pgidOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const g = Number(fields[2]);
    return Number.isInteger(g) && g > 0 ? g : null;
  } catch {
    return null;
  }
}

function cmdline(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((s, i, a) => !(s === '' && i === a.length - 1));
  } catch {
    return null;
  }
}

function writeAtomic(file: string, data: string | Buffer): void {
  const tmp = join(dirname(file), `.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}

function deepMerge(base: Record<string, any>, over: Record<string, unknown>): Record<string, any> {
  const out: Record<string, any> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isPlainObject(v) && isPlainObject(out[k]) ? deepMerge(out[k], v) : v;
  }
  return out;
}

/** Claude's project-folder slug for a cwd: every `/` becomes `-`. */
export function slugOf(cwd: string): string {
  return cwd.replace(/\//g, '-');
}

/** Poll until cond() is true or the deadline passes; returns whether it became true. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

const tmuxEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env.TMUX;
  delete env.TMUX_PANE;
  return env;
};

/** The hosts fleets have handed out in this process (their tests drop their Redis keys after them). */
export const fleetHosts = new Set<string>();

export class TestFleet {
  readonly root: string;
  readonly claudeBin: string;
  readonly registryDir: string;
  readonly tasksDir: string;
  readonly inboxDir: string;
  readonly projectsDir: string;
  readonly stateDir: string;
  /** Claude Code's own folder as the stand-in keeps it: jobs/<id>/state.json, jobs/pins.json. */
  readonly claudeDir: string;
  readonly tmuxSocket: string;
  readonly rosterCommand: string[];

  private readonly agents = new Map<string, Agent>();
  /** Stand-in Codex sessions: apart from `agents` (they keep no registry row nor clean-exit record). */
  private readonly codexAgents = new Map<string, CodexAgent>();
  private readonly lightPids = new Set<number>();
  private readonly lightGroups = new Set<number>();
  private readonly attachPids = new Set<number>();
  private readonly children = new Set<ChildProcess>();
  private destroyed = false;

  private constructor(root: string) {
    this.root = root;
    this.registryDir = join(root, 'registry');
    this.claudeBin = join(root, 'bin', 'claude');
    this.tasksDir = join(root, 'tasks');
    this.inboxDir = join(root, 'inbox');
    this.projectsDir = join(root, 'projects');
    this.stateDir = join(root, 'state');
    this.claudeDir = join(root, '.claude'); // the fleet's root plays its HOME (clients run with HOME=root)
    this.tmuxSocket = `sunset-test-${randomBytes(5).toString('hex')}`;
    this.rosterCommand = [this.claudeBin, 'agents', '--json', '--all'];
  }

  static async create(opts: { root?: string } = {}): Promise<TestFleet> {
    let root: string;
    if (opts.root) {
      root = resolve(opts.root);
      mkdirSync(root, { recursive: true });
    } else {
      root = mkdtempSync(join(tmpdir(), 'sunset-fleet-'));
    }
    const f = new TestFleet(root);
    for (const d of ['registry', 'bin', 'tasks', 'inbox', 'projects', 'work', '.claude/jobs'])
      mkdirSync(join(root, d), { recursive: true });
    for (const d of ['agents', 'stop', 'ended', 'status', 'extra']) mkdirSync(join(f.registryDir, d), { recursive: true });
    const url = pathToFileURL(claudeScript()).href;
    writeFileSync(
      f.claudeBin,
      `#!/usr/bin/env node\n` +
        `// sunset test fleet: stand-in claude CLI\n` +
        `import(${JSON.stringify(url)}).catch((e) => { console.error(e); process.exit(70); });\n`,
    );
    chmodSync(f.claudeBin, 0o755);
    agentScript(); // fail early if it is missing
    return f;
  }

  /** Raw sunset config object pointing at this fleet, deep-merged with overrides. */
  config(overrides: Record<string, unknown> = {}): Record<string, any> {
    const host = `fleet-${basename(this.root)
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(-10)}`;
    fleetHosts.add(host);
    if (typeof overrides.host === 'string') fleetHosts.add(overrides.host);
    const base: Record<string, any> = {
      // its own host: queue names never collide with a real sunset (or another fleet) on the same Redis
      host,
      stateDir: this.stateDir,
      fleet: {
        rosterCommand: [...this.rosterCommand],
        claudeCommand: this.claudeBin,
        tasksDir: this.tasksDir,
        inboxDir: this.inboxDir,
        projectsDir: this.projectsDir,
        claudeDir: this.claudeDir,
        tmuxSocket: this.tmuxSocket,
        attachArgv: ['claude', 'attach'],
      },
    };
    return deepMerge(base, overrides);
  }

  /** Write config(overrides) to <root>/sunset.config.json (for `sunset --config FILE`); returns the path. */
  writeConfig(overrides: Record<string, unknown> = {}): string {
    const file = join(this.root, 'sunset.config.json');
    writeAtomic(file, `${JSON.stringify(this.config(overrides), null, 2)}\n`);
    return file;
  }

  // ---------------------------------------------------------------- spawning

  private prepare(o: SpawnOptions, kind: Agent['kind']): Agent {
    this.assertLive();
    const id = checkId(o.id ?? shortId());
    if (this.agents.has(id) || existsSync(this.rowPath(id))) throw new Error(`test fleet: id ${id} already in use`);
    const sessionId = o.sessionId ?? randomUUID();
    const cwd = o.cwd ?? join(this.root, 'work', id);
    mkdirSync(cwd, { recursive: true });
    const transcriptPath = join(this.projectsDir, slugOf(cwd), `${sessionId}.jsonl`);
    if (o.extra && Object.keys(o.extra).length) writeAtomic(this.extraPath(id), JSON.stringify(o.extra));
    return { id, sessionId, kind, pid: 0, mode: o.mode ?? 'idle', transcriptPath, cwd };
  }

  private agentArgs(a: Agent, o: SpawnOptions & { bgOnExit?: boolean }): string[] {
    const args = [
      agentScript(),
      '--registry',
      this.registryDir,
      '--id',
      a.id,
      '--session-id',
      a.sessionId,
      '--kind',
      a.kind,
      '--mode',
      a.mode,
      '--cwd',
      a.cwd,
      '--claude-dir',
      this.claudeDir,
    ];
    if (o.name) args.push('--name', o.name);
    if (!o.noTranscript) args.push('--transcript', a.transcriptPath);
    if (o.bgOnExit) args.push('--bg-on-exit');
    if (o.ballastMB) args.push('--ballast-mb', String(o.ballastMB));
    return args;
  }

  /** Wait until the agent's row carries a live pid (and, when given, exactly that pid). */
  private async waitForRow(id: string, pid: number | null, child?: ChildProcess): Promise<number> {
    let exited: number | null | undefined;
    child?.once('exit', (code) => (exited = code));
    let found = 0;
    const ok = await waitFor(
      () => {
        const row = this.row(id);
        if (row && typeof row.pid === 'number' && (pid === null || row.pid === pid)) {
          found = row.pid;
          return true;
        }
        return exited !== undefined;
      },
      15_000,
      10,
    );
    if (!ok || !found) throw new Error(`test fleet: agent ${id} did not register${exited !== undefined ? ` (exited with ${exited})` : ''}`);
    return found;
  }

  private afterStart(a: Agent, o: SpawnOptions): void {
    if (o.transcriptAgeMs !== undefined && !o.noTranscript) this.ageTranscript(a, o.transcriptAgeMs);
  }

  /** A background session (like `claude --bg`): resolves once its row is written. */
  async spawnBackground(o: SpawnOptions = {}): Promise<Agent> {
    const a = this.prepare(o, 'background');
    const child = spawn(process.execPath, this.agentArgs(a, o), { detached: true, stdio: 'ignore', cwd: a.cwd });
    if (!child.pid) throw new Error('test fleet: could not spawn agent');
    child.unref();
    a.pid = child.pid;
    this.agents.set(a.id, a);
    await this.waitForRow(a.id, child.pid, child);
    this.afterStart(a, o);
    return a;
  }

  /** An interactive session: the process of a pane in a new tmux session on the private socket. */
  async spawnInteractive(o: InteractiveOptions = {}): Promise<Agent> {
    const a = this.prepare(o, 'interactive');
    const name = `agent-${a.id}`;
    this.tmux(['new-session', '-d', '-s', name, '-x', '200', '-y', '50', '-c', a.cwd, '--', process.execPath, ...this.agentArgs(a, o)]);
    if (o.remainOnExit) this.tmux(['set-option', '-w', '-t', name, 'remain-on-exit', 'on']);
    a.tmuxSession = name;
    a.paneId = this.tmux(['display-message', '-p', '-t', name, '#{pane_id}']).trim();
    const panePid = Number(this.tmux(['display-message', '-p', '-t', a.paneId, '#{pane_pid}']).trim());
    a.pid = panePid;
    this.agents.set(a.id, a);
    await this.waitForRow(a.id, panePid);
    this.afterStart(a, o);
    return a;
  }

  /** The stand-in Codex's home (CODEX_HOME of spawnCodex's sessions): fleet.agents.codex.home. */
  get codexHome(): string {
    return join(this.root, '.codex');
  }

  /**
   * A stand-in Codex TUI session (sim/fleet/codex.mjs) in a pane of the private tmux server, CODEX_HOME=codexHome,
   * started like `codex -C <cwd> "<prompt>"`: the prompt is its first turn and creates its rollout (a real Codex
   * has none before its first prompt). Resolves once that turn is complete (its rollout ends in task_complete).
   */
  async spawnCodex(o: { id?: string; sessionId?: string; prompt?: string } = {}): Promise<CodexAgent> {
    this.assertLive();
    const id = checkId(o.id ?? shortId());
    if (this.agents.has(id) || this.codexAgents.has(id)) throw new Error(`test fleet: id ${id} already in use`);
    const sessionId = o.sessionId ?? randomUUID();
    const cwd = join(this.root, 'work', id);
    mkdirSync(cwd, { recursive: true });
    const name = `codex-${id}`;
    // the script itself (its shebang runs node: argv [node, <script>, …]), as fleet.agents.codex.command names it
    this.tmux([
      'new-session',
      '-d',
      '-s',
      name,
      '-x',
      '200',
      '-y',
      '50',
      '-c',
      cwd,
      '-e',
      `CODEX_HOME=${this.codexHome}`,
      '-e',
      `SUNSET_STANDIN_SESSION_ID=${sessionId}`,
      '--',
      codexScript(),
      '-C',
      cwd,
      o.prompt ?? 'Start on the task',
    ]);
    const paneId = this.tmux(['display-message', '-p', '-t', name, '#{pane_id}']).trim();
    const pid = Number(this.tmux(['display-message', '-p', '-t', paneId, '#{pane_pid}']).trim());
    const a: CodexAgent = { id, sessionId, pid, cwd, tmuxSession: name, paneId, rolloutPath: '' };
    this.codexAgents.set(id, a);
    const sessions = join(this.codexHome, 'sessions');
    const ok = await waitFor(
      () => {
        a.rolloutPath ||= findFile(sessions, (n) => n.endsWith(`-${sessionId}.jsonl`)) ?? '';
        return a.rolloutPath !== '' && readFileSync(a.rolloutPath, 'utf8').includes('"task_complete"');
      },
      15_000,
      20,
    );
    if (!ok) throw new Error(`test fleet: codex stand-in ${id} did not complete its first turn${pidAlive(pid) ? '' : ' (it exited)'}`);
    return a;
  }

  /** The stand-in Codex sessions this fleet spawned. */
  codexList(): CodexAgent[] {
    return [...this.codexAgents.values()];
  }

  /**
   * Benchmark stand-ins: n cheap processes registered as background idle rows, transcripts written by the
   * harness. One detached `sh` forks them all (fast: no per-process spawn from this big process); each is a
   * subshell `while [ -d <registry>/agents ]; do sleep 30; done` (not a bare `sleep 100000`) so a crashed
   * test run leaks nothing for long. They share one process group, killed at destroy(). They cannot
   * respond to `claude stop` (which returns at once for them) nor record signals.
   */
  async spawnLight(n: number, o: { transcriptAgeMs?: number } = {}): Promise<Agent[]> {
    this.assertLive();
    if (n <= 0) return [];
    const script =
      'i=0; while [ "$i" -lt "$1" ]; do ' +
      '( while [ -d "$2" ]; do sleep 30; done ) </dev/null >/dev/null 2>&1 & echo $!; i=$((i+1)); done';
    const helper = spawn('sh', ['-c', script, 'sunset-fleet-light', String(n), join(this.registryDir, 'agents')], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    if (!helper.pid) throw new Error('test fleet: could not spawn light processes');
    this.lightGroups.add(helper.pid);
    let text = '';
    helper.stdout!.on('data', (d: Buffer) => (text += d.toString()));
    const code = await new Promise<number | null>((res) => helper.on('close', (c) => res(c)));
    const pids = text.split('\n').filter(Boolean).map(Number);
    if (code !== 0 || pids.length !== n) throw new Error(`test fleet: light spawn made ${pids.length}/${n} processes (exit ${code})`);
    const out: Agent[] = [];
    const startedAt = new Date().toISOString();
    const cwd = join(this.root, 'work', 'light');
    for (const pid of pids) {
      this.lightPids.add(pid);
      const id = shortId();
      const sessionId = randomUUID();
      const a: Agent = {
        id,
        sessionId,
        kind: 'background',
        pid,
        mode: 'idle',
        cwd,
        light: true,
        transcriptPath: join(this.projectsDir, slugOf(cwd), `${sessionId}.jsonl`),
      };
      mkdirSync(dirname(a.transcriptPath), { recursive: true });
      writeFileSync(a.transcriptPath, `${JSON.stringify({ type: 'start', sessionId, at: startedAt })}\n`);
      if (o.transcriptAgeMs !== undefined) this.ageTranscript(a, o.transcriptAgeMs);
      const row = { id, sessionId, kind: 'background', pid, state: 'working', status: 'idle', cwd, startedAt, _light: true };
      writeAtomic(this.rowPath(id), `${JSON.stringify(row)}\n`);
      this.setJob(id, { state: 'working', tempo: 'idle', needs: null, inFlight: { tasks: 0, queued: 0 } });
      this.agents.set(id, a);
      out.push(a);
    }
    return out;
  }

  /** A pid-less row (a record, e.g. a finished --bg session). */
  addRecord(o: { id?: string; sessionId?: string; kind?: 'background' | 'interactive' } = {}): { id: string; sessionId: string } {
    this.assertLive();
    const id = checkId(o.id ?? shortId());
    const sessionId = o.sessionId ?? randomUUID();
    const row = {
      id,
      sessionId,
      kind: o.kind ?? 'background',
      pid: null,
      state: 'stopped',
      status: 'idle',
      cwd: join(this.root, 'work', id),
      startedAt: new Date(Date.now() - 3_600_000).toISOString(),
    };
    writeAtomic(this.rowPath(id), `${JSON.stringify(row)}\n`);
    return { id, sessionId };
  }

  /** n records at once (one bulk file, read by the stand-in roster). */
  addRecords(n: number): Array<{ id: string; sessionId: string }> {
    this.assertLive();
    const startedAt = new Date(Date.now() - 3_600_000).toISOString();
    const out: Array<{ id: string; sessionId: string }> = [];
    const lines: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = shortId();
      const sessionId = randomUUID();
      out.push({ id, sessionId });
      lines.push(
        JSON.stringify({
          id,
          sessionId,
          kind: 'background',
          pid: null,
          state: 'stopped',
          status: 'idle',
          cwd: join(this.root, 'work', id),
          startedAt,
        }),
      );
    }
    if (lines.length) appendFileSync(join(this.registryDir, 'records.jsonl'), `${lines.join('\n')}\n`);
    return out;
  }

  // ---------------------------------------------------------------- shaping evidence

  /** A background job's state file (<root>/.claude/jobs/<id>/state.json), merged with patch: state, needs, inFlight… */
  setJob(a: Agent | string, patch: Record<string, unknown>): void {
    const id = this.idOf(a);
    const file = join(this.claudeDir, 'jobs', id, 'state.json');
    mkdirSync(dirname(file), { recursive: true });
    let cur: Record<string, unknown> = {};
    try {
      cur = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch {
      /* none yet */
    }
    writeAtomic(file, JSON.stringify({ ...cur, ...patch, updatedAt: Date.now() }, null, 2));
  }

  /** Any bytes as a job's state file (odd shapes, garbage). */
  setJobRaw(a: Agent | string, text: string): void {
    const file = join(this.claudeDir, 'jobs', this.idOf(a), 'state.json');
    mkdirSync(dirname(file), { recursive: true });
    writeAtomic(file, text);
  }

  job(a: Agent | string): Record<string, any> | null {
    try {
      return JSON.parse(readFileSync(join(this.claudeDir, 'jobs', this.idOf(a), 'state.json'), 'utf8')) as Record<string, any>;
    } catch {
      return null;
    }
  }

  /** Claude Code's pins file (jobs/pins.json) as a list of short ids, written as the CLI does (2-space indent, no final newline). */
  setPins(ids: string[]): void {
    writeAtomic(join(this.claudeDir, 'jobs', 'pins.json'), JSON.stringify(ids, null, 2));
  }

  /** Any bytes as the pins file. */
  setPinsRaw(text: string): void {
    writeAtomic(join(this.claudeDir, 'jobs', 'pins.json'), text);
  }

  pinsText(): string | null {
    try {
      return readFileSync(join(this.claudeDir, 'jobs', 'pins.json'), 'utf8');
    } catch {
      return null;
    }
  }

  setStatus(a: Agent | string, s: Status): void {
    writeAtomic(join(this.registryDir, 'status', this.idOf(a)), s);
  }

  /** An extra field on the roster row (e.g. attached: true). Applied last, so it can even override pid. */
  setRowField(a: Agent | string, key: string, value: unknown): void {
    const id = this.idOf(a);
    const file = this.extraPath(id);
    let cur: Record<string, unknown> = {};
    try {
      cur = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch {
      /* none yet */
    }
    if (value === undefined) delete cur[key];
    else cur[key] = value;
    writeAtomic(file, JSON.stringify(cur));
  }

  ageTranscript(a: Agent, ageMs: number): void {
    const t = new Date(Date.now() - ageMs);
    utimesSync(a.transcriptPath, t, t);
  }

  deleteTranscript(a: Agent): void {
    rmSync(a.transcriptPath, { force: true });
  }

  /** A message file in inbox/<sessionId>/; returns its path. */
  addInboxMessage(a: Agent | { sessionId: string }, name?: string): string {
    const dir = join(this.inboxDir, a.sessionId);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, name ?? `msg-${Date.now()}-${randomBytes(3).toString('hex')}.json`);
    writeFileSync(file, `${JSON.stringify({ type: 'message', from: 'test', text: 'hello', at: new Date().toISOString() })}\n`);
    return file;
  }

  inboxFiles(a: Agent | { sessionId: string }): string[] {
    try {
      return readdirSync(join(this.inboxDir, a.sessionId)).sort();
    } catch {
      return [];
    }
  }

  /** tasks/<id>.json, pretty JSON, written atomically; returns its path. */
  writeTask(t: Record<string, unknown> & { id: string }): string {
    return this.writeTaskRaw(`${t.id}.json`, `${JSON.stringify(t, null, 2)}\n`);
  }

  /** Any bytes under any file name in tasks/ (corrupt files, odd names), written atomically. */
  writeTaskRaw(fileName: string, text: string | Buffer): string {
    if (fileName.includes('/') || fileName.includes('\0') || fileName === '..' || fileName === '.')
      throw new Error(`test fleet: bad task file name ${JSON.stringify(fileName)}`);
    mkdirSync(this.tasksDir, { recursive: true });
    const file = join(this.tasksDir, fileName);
    writeAtomic(file, text);
    return file;
  }

  readTask(id: string): Record<string, any> {
    return JSON.parse(readFileSync(join(this.tasksDir, `${id}.json`), 'utf8')) as Record<string, any>;
  }

  setRosterFault(f: 'fail' | 'hang' | 'garbage' | null): void {
    const file = join(this.registryDir, 'fault');
    if (f === null) rmSync(file, { force: true });
    else writeAtomic(file, f);
  }

  // ---------------------------------------------------------------- clients

  /** A client attached to a session: `node <root>/bin/claude attach <id|prefix|name>`, sits until closed. */
  async attach(a: Agent | string): Promise<Attachment> {
    this.assertLive();
    const id = typeof a === 'string' ? a : a.id;
    return this.client(['attach', id], 'attach');
  }

  /**
   * A person's agent view: `claude agents` with no --json (a TUI that can open any background session it lists), sits
   * until closed; `args` such as ['--cwd', 'work/x'] narrow it, `cwd` is the folder it runs in (default: the fleet's root).
   * `argv` opens it another way, the whole argv after `claude`: ['--model', 'opus', 'agents'], or [] (a plain `claude`,
   * which opens it when the fleet's ~/.claude.json says `"defaultToAgentsView": true`: setClaudeJson()).
   */
  agentView(o: { args?: string[]; cwd?: string; argv?: string[] } = {}): Promise<Attachment> {
    this.assertLive();
    const argv = o.argv ?? ['agents', ...(o.args ?? [])];
    // open once the stand-in says so (registry/views/<pid>): its argv shows before it has read its config
    const open = (pid: number) => existsSync(join(this.registryDir, 'views', String(pid)));
    return this.client(argv, o.argv ? (argv.at(-1) ?? this.claudeBin) : 'agents', o.cwd, open);
  }

  /** The fleet's ~/.claude.json (Claude Code's global config: the root plays HOME), as given; null removes it. */
  setClaudeJson(text: string | null): void {
    const file = join(this.root, '.claude.json');
    if (text === null) rmSync(file, { force: true });
    else writeAtomic(file, text);
  }

  private async client(args: string[], marker: string, cwd?: string, ready?: (pid: number) => boolean): Promise<Attachment> {
    const id = args.join(' ');
    const child = spawn(process.execPath, [this.claudeBin, ...args], {
      detached: true,
      stdio: 'ignore',
      cwd: cwd ?? this.root,
      env: { ...process.env, HOME: this.root },
    });
    if (!child.pid) throw new Error('test fleet: could not spawn attach');
    child.unref();
    const pid = child.pid;
    this.attachPids.add(pid);
    const ok = await waitFor(() => (cmdline(pid) ?? []).includes(marker) && (ready?.(pid) ?? true), 10_000, 10);
    if (!ok) throw new Error(`test fleet: attach ${id} did not start`);
    return {
      pid,
      close: async () => {
        this.killGroup(pid, 'SIGTERM');
        await waitFor(() => !pidAlive(pid), 5000, 10);
        this.attachPids.delete(pid);
      },
    };
  }

  /** Whether a real tmux client can be attached here (needs util-linux `script` for a pty). */
  static canAttachTmux(): boolean {
    return spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
  }

  /**
   * A real tmux client on an interactive agent's session, on a pty made by `script -qfc`
   * (`tmux attach` needs a terminal). Resolves once tmux counts the client. Throws when `script`
   * is missing: check TestFleet.canAttachTmux() and skip.
   */
  async attachTmux(a: Agent): Promise<Attachment> {
    this.assertLive();
    if (!a.tmuxSession) throw new Error(`test fleet: ${a.id} is not an interactive agent`);
    if (!TestFleet.canAttachTmux()) throw new Error('test fleet: `script` is not installed; cannot attach a tmux client');
    const before = this.clientsOf(a.tmuxSession);
    // Names are ours (hex socket, agent-<hex id>), so the one shell string script runs is safe.
    const cmd = `exec tmux -L ${this.tmuxSocket} attach-session -t ${a.tmuxSession}`;
    const child = spawn('script', ['-qfc', cmd, '/dev/null'], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'], // an open stdin: script ends on EOF
      env: { ...tmuxEnv(), TERM: 'xterm-256color', SHELL: '/bin/sh' },
    });
    if (!child.pid) throw new Error('test fleet: could not spawn script');
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.children.add(child);
    const pid = child.pid;
    this.attachPids.add(pid);
    const session = a.tmuxSession;
    const ok = await waitFor(() => this.clientsOf(session) > before, 5000, 20);
    if (!ok) {
      this.killGroup(pid, 'SIGKILL');
      throw new Error(`test fleet: tmux client did not attach to ${session}`);
    }
    return {
      pid,
      close: async () => {
        this.killGroup(pid, 'SIGKILL');
        child.stdin?.destroy();
        await waitFor(() => !pidAlive(pid) && this.clientsOf(session) <= before, 5000, 20);
        this.attachPids.delete(pid);
        this.children.delete(child);
      },
    };
  }

  /** How many tmux clients are attached to a session on the private server (0 when none / no server). */
  clientsOf(session: string): number {
    try {
      const out = this.tmux(['display-message', '-p', '-t', session, '#{session_attached}']);
      return Number(out.trim()) || 0;
    } catch {
      return 0;
    }
  }

  // ---------------------------------------------------------------- acting like a person / sunset

  /** Run a tmux command on the private server (argv words, no shell); returns stdout. */
  tmux(args: string[]): string {
    return execFileSync('tmux', ['-L', this.tmuxSocket, ...args], { encoding: 'utf8', env: tmuxEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** Type text into an interactive agent's pane, literally, then Enter (the doctrine's way). */
  typeInto(a: Agent, text: string): void {
    if (!a.paneId) throw new Error(`test fleet: ${a.id} has no pane`);
    this.tmux(['send-keys', '-t', a.paneId, '-l', text]);
    this.tmux(['send-keys', '-t', a.paneId, 'Enter']);
  }

  /** Run the stand-in CLI (`<root>/bin/claude …`) and collect its result. */
  claude(
    args: string[],
    timeoutMs = 10_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
    return new Promise((res, rej) => {
      const child = spawn(this.claudeBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (e) => {
        clearTimeout(t);
        rej(e);
      });
      child.on('close', (code, signal) => {
        clearTimeout(t);
        res({ code, signal, stdout, stderr });
      });
    });
  }

  /** `claude agents --json --all`, parsed. */
  async roster(): Promise<RosterRow[]> {
    const r = await this.claude(['agents', '--json', '--all']);
    if (r.code !== 0) throw new Error(`test fleet: roster failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as RosterRow[];
  }

  /** `claude stop <id>`. */
  stop(a: Agent | string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return this.claude(['stop', this.idOf(a)]);
  }

  // ---------------------------------------------------------------- observing

  /** The stored row (as the agent / harness wrote it, before the roster's liveness normalisation). */
  row(a: Agent | string): Record<string, any> | null {
    try {
      return JSON.parse(readFileSync(this.rowPath(this.idOf(a)), 'utf8')) as Record<string, any>;
    } catch {
      return null;
    }
  }

  /** The pid the row carries now (differs from a.pid after bg-on-exit), or null. */
  currentPid(a: Agent | string): number | null {
    const pid = this.row(a)?.pid;
    return typeof pid === 'number' ? pid : null;
  }

  isAlive(a: Agent | number): boolean {
    return pidAlive(typeof a === 'number' ? a : a.pid);
  }

  /** Wait (polling, with a deadline) for the agent's pid (a.pid) to end. */
  waitForExit(a: Agent | number, timeoutMs: number): Promise<boolean> {
    const pid = typeof a === 'number' ? a : a.pid;
    return waitFor(() => !pidAlive(pid), timeoutMs, 20);
  }

  /** Clean-exit records for an agent (every pid that has carried its id), oldest first. */
  ended(a: Agent | string): EndedRecord[] {
    const id = this.idOf(a);
    const dir = join(this.registryDir, 'ended');
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const out: EndedRecord[] = [];
    for (const n of names) {
      if (n.startsWith('.') || !n.startsWith(`${id}-`) || !n.endsWith('.json')) continue;
      if (!/^\d+$/.test(n.slice(id.length + 1, -5))) continue;
      try {
        out.push(JSON.parse(readFileSync(join(dir, n), 'utf8')) as EndedRecord);
      } catch {
        /* mid-write: atomic, so should not happen */
      }
    }
    return out.sort((x, y) => x.at.localeCompare(y.at));
  }

  /** Messages agents received over their messaging socket (as a real session's model is sent them), in order. */
  messages(a?: Agent | string): Array<{ id: string; pid: number; text: string; at: string }> {
    return this.logOf('messages.jsonl', a);
  }

  /** notify_when_idle requests agents received (accepted: the reply socket sits in their socket folder), in order. */
  idleRequests(
    a?: Agent | string,
  ): Array<{ id: string; pid: number; from: string | null; msgId: string | null; accepted: boolean; at: string }> {
    return this.logOf('notify.jsonl', a);
  }

  /** The peer_idle_notice answers agents sent (state idle or exited), in order. */
  idleNotices(a?: Agent | string): Array<{ id: string; pid: number; to: string; msgId: string; state: 'idle' | 'exited'; at: string }> {
    return this.logOf('notices.jsonl', a);
  }

  /** Agents started after this offer no idle notices (peerFeatures without notify_idle), as an older CLI's sessions. */
  withoutIdleNotices(on = true): void {
    const f = join(this.registryDir, 'no-notify');
    if (on) writeFileSync(f, '1');
    else rmSync(f, { force: true });
  }

  /** Agents started after this keep no messaging socket (and write no sessions/<pid>.json): the ask falls back. */
  withoutSockets(on = true): void {
    const f = join(this.registryDir, 'no-socket');
    if (on) writeFileSync(f, '1');
    else rmSync(f, { force: true });
  }

  /** Exit requests agents received (`stop`, `exit-typed`), in order. */
  requests(a?: Agent | string): RequestRecord[] {
    return this.logOf<RequestRecord>('requests.jsonl', a);
  }

  /** Every signal any agent received. The doctrine says this stays empty. */
  signals(): SignalRecord[] {
    return readJsonLines<SignalRecord>(join(this.registryDir, 'signals.jsonl'));
  }

  /** Lines typed into interactive agents' panes. */
  typed(a?: Agent | string): TypedRecord[] {
    return this.logOf<TypedRecord>('typed.jsonl', a);
  }

  /** A registry log's records, in order: all of them, or one agent's. */
  private logOf<T extends { id: string }>(name: string, a?: Agent | string): T[] {
    const all = readJsonLines<T>(join(this.registryDir, name));
    if (a === undefined) return all;
    const id = this.idOf(a);
    return all.filter((r) => r.id === id);
  }

  /**
   * Agents (not light ones) with a process that is gone without a clean-exit record: something killed
   * them. Each entry is the agent with `pid` set to the dead process (a bg-on-exit successor included).
   */
  unexplainedDeaths(): Agent[] {
    const out: Agent[] = [];
    const seen = new Set<string>();
    const pids = readJsonLines<{ id: string; pid: number }>(join(this.registryDir, 'pids.jsonl'));
    const candidates: Array<{ id: string; pid: number }> = [...pids];
    for (const a of this.agents.values()) if (!a.light && a.pid) candidates.push({ id: a.id, pid: a.pid });
    for (const { id, pid } of candidates) {
      const key = `${id}-${pid}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const a = this.agents.get(id);
      if (!a || a.light) continue;
      if (pidAlive(pid)) continue;
      if (existsSync(join(this.registryDir, 'ended', `${key}.json`))) continue;
      out.push({ ...a, pid });
    }
    return out;
  }

  /** The agents this fleet spawned. */
  list(): Agent[] {
    return [...this.agents.values()];
  }

  /** Whether the private tmux server is running. */
  tmuxServerRunning(): boolean {
    return spawnSync('tmux', ['-L', this.tmuxSocket, 'list-sessions'], { stdio: 'ignore', env: tmuxEnv() }).status === 0;
  }

  /** Pids of every live process belonging to this fleet (agents, successors, light ones, attach clients, stand-in CLI calls). */
  processes(): number[] {
    const out: number[] = [];
    const agentJs = agentScript();
    const codexJs = codexScript();
    const lightDir = join(this.registryDir, 'agents');
    let entries: string[] = [];
    try {
      entries = readdirSync('/proc');
    } catch {
      return out;
    }
    for (const e of entries) {
      if (!/^\d+$/.test(e)) continue;
      const pid = Number(e);
      if (pid === process.pid) continue;
      const argv = cmdline(pid);
      if (!argv || !pidAlive(pid)) continue;
      const isAgent = argv.includes(agentJs) && argv[argv.indexOf('--registry') + 1] === this.registryDir;
      const isCli = argv[1] === this.claudeBin || argv[0] === this.claudeBin;
      const isLight = argv.includes('sunset-fleet-light') && argv.includes(lightDir);
      const isCodex = argv[1] === codexJs && argv.some((w) => w.startsWith(`${this.root}/`));
      // the private tmux server (its argv is the command that started it) and clients, `script` wrappers
      const isTmux =
        (argv.includes(this.tmuxSocket) && basename(argv[0] ?? '') === 'tmux') ||
        argv.some((w) => w.includes(`tmux -L ${this.tmuxSocket} `));
      if (isAgent || isCli || isLight || isCodex || this.attachPids.has(pid) || this.lightPids.has(pid) || isTmux) out.push(pid);
    }
    return out;
  }

  /**
   * Tear down: mark teardown (agents then leave quietly on any signal), SIGKILL every process of this
   * fleet (the harness's own stand-ins), kill the private tmux server, remove the temp root. Idempotent.
   */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    try {
      writeFileSync(join(this.registryDir, 'teardown'), new Date().toISOString());
    } catch {
      /* root already gone */
    }
    const kill = (): number[] => {
      const pids = new Set<number>(this.processes());
      for (const a of this.agents.values()) if (a.pid && this.ours(a.pid)) pids.add(a.pid);
      for (const a of this.codexAgents.values()) if (this.ours(a.pid)) pids.add(a.pid);
      for (const pid of pids) this.killGroup(pid, 'SIGKILL');
      // the light subshells and their `sleep` children: kill each group that still holds one of ours
      const groups = new Set<number>();
      for (const pid of this.lightPids) {
        const g = pgidOf(pid);
        if (g !== null && this.lightGroups.has(g)) groups.add(g);
      }
      for (const g of groups) {
        try {
          process.kill(-g, 'SIGKILL');
        } catch {
          /* group empty */
        }
      }
      return [...pids];
    };
    spawnSync('tmux', ['-L', this.tmuxSocket, 'kill-server'], { stdio: 'ignore', env: tmuxEnv() });
    const first = kill();
    await waitFor(() => first.every((p) => !pidAlive(p)), 5000, 20);
    kill(); // anything spawned meanwhile (a successor mid-spawn)
    await waitFor(() => this.processes().length === 0, 3000, 20);
    for (const c of this.children) c.stdin?.destroy();
    this.children.clear();
    rmSync(this.root, { recursive: true, force: true });
    // The socket file of a killed server can stay behind; remove it.
    const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
    const sock = join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${uid}`, this.tmuxSocket);
    try {
      unlinkSync(sock);
    } catch {
      /* gone */
    }
  }

  // ---------------------------------------------------------------- internals

  /** A pid is ours to kill only while its cmdline still names this fleet (no reused pids). */
  private ours(pid: number): boolean {
    const argv = cmdline(pid);
    if (!argv) return false;
    if (this.lightPids.has(pid) || this.attachPids.has(pid)) return true;
    return argv.some((w) => w.startsWith(`${this.root}/`) || w === this.registryDir);
  }

  /** SIGKILL/SIGTERM a process of ours and its group (all spawned detached: pid == pgid). */
  private killGroup(pid: number, sig: NodeJS.Signals): void {
    try {
      const pgid = pgidOf(pid);
      if (pgid === null) return;
      if (pgid === pid) process.kill(-pid, sig);
      else process.kill(pid, sig);
    } catch {
      /* gone */
    }
  }

  private assertLive(): void {
    if (this.destroyed) throw new Error('test fleet: already destroyed');
  }

  private idOf(a: Agent | string): string {
    return checkId(typeof a === 'string' ? a : a.id);
  }

  private rowPath(id: string): string {
    return join(this.registryDir, 'agents', `${id}.json`);
  }

  private extraPath(id: string): string {
    return join(this.registryDir, 'extra', `${id}.json`);
  }

  /** Size of a transcript in bytes, or null when it does not exist. */
  transcriptSize(a: Agent): number | null {
    try {
      return statSync(a.transcriptPath).size;
    } catch {
      return null;
    }
  }

  transcriptLines(a: Agent): Array<Record<string, any>> {
    return readJsonLines<Record<string, any>>(a.transcriptPath);
  }
}
