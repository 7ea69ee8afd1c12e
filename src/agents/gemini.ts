// Gemini CLI (@google/gemini-cli 0.61.0) beside Claude Code: its interactive sessions on this box, tied each to its
// session id and transcript, and its screen read for a draft and a turn in flight. Measured on the real CLI:
// docs/agents/gemini.md ("What sunset reads and does").
//
// The session's process is the CLI's top node process (the pane's): it relaunches itself with a larger heap and
// waits for that child, which has the same script in its argv; the top one ends when the child does. Nothing names
// the session in a process (no per-process file, no open file; argv only for `--resume <id>` / `--session-id <id>`),
// so a process is tied to a transcript by its folder (/proc/<pid>/cwd → projects.json → tmp/<short>/chats/) and
// time: the CLI writes a new session's first line a few seconds after it starts. A process with no such transcript,
// or with two, or a transcript two processes could own, is no session: a problem line, and left out.
import { readlinkSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { isDefaultHome } from './agent-cli.js';
import { cellsOf, readAgentInputBox } from '../evidence/agent-input-box.js';
import { ENDED } from '../evidence/proc.js';
import type { ProcInfo, ProcTable } from '../evidence/proc.js';
import { errorCode } from '../errors.js';
import { whichFile } from '../which.js';
import type { AgentCli, AgentCliConfig, Discovery, FoundSession } from './agent-cli.js';
import { type ChatFile, readChats, readProjects, shortNameOf, turnInFlightOf } from './gemini-files.js';

/** A new session's first line is written this long at most after its process started (seen: 5–9 s; a loaded box is slower). */
export const TIE_WINDOW_MS = 120_000;
/** /proc's start time and the CLI's clock, rounded differently. */
const SLACK_MS = 1_000;

const PACKAGE_SCRIPT = /\/@google\/gemini-cli\/bundle\/gemini\.js$/;
const BUSY = /\(esc to cancel, \d+[smh]?[^)]*\)/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Options that take a value (0.61.0 `--help`): the word after one is not a prompt nor a subcommand. */
const VALUED = new Set([
  '-m',
  '--model',
  '-p',
  '--prompt',
  '-i',
  '--prompt-interactive',
  '-w',
  '--worktree',
  '--approval-mode',
  '--policy',
  '--admin-policy',
  '--allowed-mcp-server-names',
  '--allowed-tools',
  '-e',
  '--extensions',
  '-r',
  '--resume',
  '--session-file',
  '--session-id',
  '--delete-session',
  '--include-directories',
  '-o',
  '--output-format',
]);
/** Runs that are no interactive session: headless, ACP, a listing, a subcommand. */
const NOT_A_SESSION = new Set([
  '-p',
  '--prompt',
  '--acp',
  '--experimental-acp',
  '-v',
  '--version',
  '-h',
  '--help',
  '-l',
  '--list-extensions',
]);
const NOT_A_SESSION_EXIT = new Set(['--list-sessions', '--delete-session']);
// (one string: the doctrine test reads a quoted 'skill' as a kill command)
const SUBCOMMANDS = new Set('mcp extensions extension skills skill hooks hook gemma'.split(' '));

/** The script a node process runs (the first word after node's own options), or argv[0] for anything else. */
function scriptOf(argv: string[]): { script: string; rest: string[] } | null {
  if (!argv.length) return null;
  if (!/^node(js)?(\d+)?$/.test(basename(argv[0]))) return { script: argv[0], rest: argv.slice(1) };
  const i = argv.findIndex((a, k) => k > 0 && !a.startsWith('-'));
  return i < 0 ? null : { script: argv[i], rest: argv.slice(i + 1) };
}

/** What its argv says: not the CLI (null), or the CLI with whether it is a session and the id it names. */
export function readGeminiArgv(argv: string[], commands: Set<string>): { session: boolean; id: string | null } | null {
  const s = scriptOf(argv);
  if (!s || !(PACKAGE_SCRIPT.test(s.script) || commands.has(s.script) || commands.has(basename(s.script)))) return null;
  let id: string | null = null;
  for (let k = 0; k < s.rest.length; k++) {
    const [flag, inline] = s.rest[k].startsWith('--') && s.rest[k].includes('=') ? s.rest[k].split(/=(.*)/s, 2) : [s.rest[k], undefined];
    if (NOT_A_SESSION.has(flag) || NOT_A_SESSION_EXIT.has(flag)) return { session: false, id: null };
    if (k === 0 && SUBCOMMANDS.has(flag)) return { session: false, id: null };
    if (VALUED.has(flag)) {
      const value = inline ?? s.rest[++k];
      if ((flag === '-r' || flag === '--resume' || flag === '--session-id') && value && UUID.test(value)) id = value.toLowerCase();
    }
  }
  return { session: true, id };
}

/** The names and paths the configured command goes by: itself, its basename, where PATH finds it, and that file's real path. */
function commandNames(command: string): Set<string> {
  const names = new Set([command, basename(command)]);
  const found = whichFile(command, process.env, process.cwd());
  if (found) {
    names.add(found);
    try {
      names.add(realpathSync(found));
    } catch {
      /* a dangling link */
    }
  }
  return names;
}

const norm = (p: string): string => p.replace(/\/+$/, '').replace(/\/+/g, '/');

type Home = string | null | typeof ENDED;

/** Its Gemini home by its environment: $GEMINI_CLI_HOME/.gemini, else $HOME/.gemini. null: cannot be read. */
function geminiHomeOf(pid: number, cache: Map<string, Home>, ticks: string | undefined): Home {
  const key = `${pid}|${ticks ?? ''}`;
  if (ticks !== undefined && cache.has(key)) return cache.get(key)!;
  let env: string;
  try {
    env = readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch (err) {
    const code = errorCode(err);
    return code === 'ENOENT' || code === 'ESRCH' ? ENDED : null;
  }
  let home: string | null = null;
  let cliHome: string | null = null;
  for (const kv of env.split('\0')) {
    if (kv.startsWith('HOME=')) home = kv.slice(5);
    else if (kv.startsWith('GEMINI_CLI_HOME=')) cliHome = kv.slice(16);
  }
  const base = cliHome || home;
  const dir = base ? norm(`${base}/.gemini`) : null;
  if (ticks !== undefined && env.length) {
    if (cache.size > 4096) cache.clear();
    cache.set(key, dir);
  }
  return dir;
}

interface Proc {
  info: ProcInfo;
  cwd: string;
  id: string | null;
}

/** A session's files, newest (where it grows) last. */
interface ChatSession {
  id: string;
  files: ChatFile[];
}

/** Tie each process of one folder to one session: by the id its argv names, else by the one transcript begun just after it started. */
export function tieFolder(
  procs: Proc[],
  files: ChatFile[],
): { ties: Array<{ proc: Proc; session: ChatSession }>; untied: Array<{ proc: Proc; why: string }> } {
  const byId = new Map<string, ChatSession>();
  for (const f of files) {
    if (!f.head) continue;
    const s = byId.get(f.head.sessionId) ?? { id: f.head.sessionId, files: [] };
    s.files.push(f);
    byId.set(s.id, s);
  }
  for (const s of byId.values()) s.files.sort((a, b) => a.mtimeMs - b.mtimeMs);
  const unknown = files.filter((f) => !f.head);
  const named = new Map<string, number>();
  for (const p of procs) if (p.id) named.set(p.id, (named.get(p.id) ?? 0) + 1);

  const candidates = new Map<Proc, ChatSession[]>();
  const owners = new Map<ChatSession, Proc[]>();
  const untied: Array<{ proc: Proc; why: string }> = [];
  for (const p of procs) {
    if (p.id) {
      const s = byId.get(p.id);
      if (!s) untied.push({ proc: p, why: `its argv names session ${p.id}, which has no transcript in ${p.cwd}'s chats` });
      else if (named.get(p.id)! > 1) untied.push({ proc: p, why: `another process also names session ${p.id}` });
      else candidates.set(p, [s]);
      continue;
    }
    const start = p.info.startMs;
    const mine = [...byId.values()].filter(
      (s) => !named.has(s.id) && s.files.some((f) => f.head!.startMs >= start - SLACK_MS && f.head!.startMs <= start + TIE_WINDOW_MS),
    );
    if (unknown.some((f) => f.mtimeMs >= start - SLACK_MS)) {
      untied.push({ proc: p, why: `a transcript in ${p.cwd}'s chats written since it started does not read` });
      continue;
    }
    candidates.set(p, mine);
    for (const s of mine) owners.set(s, [...(owners.get(s) ?? []), p]);
  }
  const ties: Array<{ proc: Proc; session: ChatSession }> = [];
  for (const [p, list] of candidates) {
    if (p.id) ties.push({ proc: p, session: list[0] });
    else if (list.length === 0) untied.push({ proc: p, why: 'no transcript begun after it started (not written yet)' });
    else if (list.length > 1)
      untied.push({ proc: p, why: `${list.length} transcripts could be its own (${list.map((s) => s.id).join(', ')})` });
    else if (owners.get(list[0])!.length > 1) untied.push({ proc: p, why: `session ${list[0].id} could be another process's too` });
    else ties.push({ proc: p, session: list[0] });
  }
  return { ties, untied };
}

/** The processes under pid that are not the CLI itself (its relaunched child): its tool calls' shells. */
function toolPidsOf(procs: ProcTable, pid: number, cli: Set<number>): number[] {
  const out: number[] = [];
  const stack = [...(procs.children.get(pid) ?? [])];
  const seen = new Set<number>();
  while (stack.length) {
    const p = stack.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    const info = procs.procs.get(p);
    if (!info) continue;
    if (!cli.has(p) && info.state !== 'Z') out.push(p);
    stack.push(...(procs.children.get(p) ?? []));
  }
  return out.sort((a, b) => a - b);
}

function createGemini(): AgentCli {
  const homes = new Map<string, Home>();

  async function discover(procs: ProcTable, cfg: AgentCliConfig, _now: number): Promise<Discovery> {
    const problems: string[] = [];
    const home = norm(cfg.home);
    const commands = commandNames(cfg.command);
    const cliPids = new Set<number>();
    const sessionsArgv = new Map<number, { session: boolean; id: string | null }>();
    for (const p of procs.procs.values()) {
      if (p.state === 'Z' || p.state === 'X') continue;
      const a = readGeminiArgv(p.argv, commands);
      if (!a) continue;
      cliPids.add(p.pid);
      sessionsArgv.set(p.pid, a);
    }
    const byFolder = new Map<string, Proc[]>();
    for (const [pid, a] of sessionsArgv) {
      const info = procs.procs.get(pid)!;
      if (cliPids.has(info.ppid) || !a.session) continue; // the relaunched child, or no interactive session
      const h = geminiHomeOf(pid, homes, info.startTicks);
      if (h === ENDED || h === null || h !== home) continue; // ended, another user's, or another home
      let cwd: string;
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'ENOENT' && code !== 'ESRCH')
          problems.push(`gemini pid ${pid}: its folder cannot be read (${code ?? 'error'}): not a session`);
        continue;
      }
      byFolder.set(cwd, [...(byFolder.get(cwd) ?? []), { info, cwd, id: a.id }]);
    }
    if (!byFolder.size) return { sessions: [], problems };

    const projects = readProjects(home);
    if (!projects.ok) {
      for (const list of byFolder.values()) for (const p of list) problems.push(`gemini pid ${p.info.pid}: ${projects.why}: not a session`);
      return { sessions: [], problems };
    }
    const sessions: FoundSession[] = [];
    for (const [cwd, list] of byFolder) {
      const short = shortNameOf(projects.byFolder, cwd);
      const chats = short
        ? readChats(home, short, Math.min(...list.map((p) => p.info.startMs)))
        : { ok: false as const, why: `${cwd} is not in ${home}/projects.json yet` };
      if (!chats.ok) {
        for (const p of list) problems.push(`gemini pid ${p.info.pid} in ${cwd}: ${chats.why}: not a session`);
        continue;
      }
      const { ties, untied } = tieFolder(list, chats.files);
      for (const u of untied) problems.push(`gemini pid ${u.proc.info.pid} in ${cwd}: ${u.why}: not a session`);
      for (const { proc, session } of ties) {
        const newest = session.files[session.files.length - 1];
        sessions.push({
          agent: 'gemini',
          pid: proc.info.pid,
          sessionId: session.id,
          cwd,
          startedAt: new Date(proc.info.startMs).toISOString(),
          transcript: { path: newest.path, mtimeMs: newest.mtimeMs },
          turnInFlight: turnInFlightOf(newest.path),
          toolPids: toolPidsOf(procs, proc.info.pid, cliPids),
        });
      }
    }
    sessions.sort((a, b) => a.pid - b.pid);
    return { sessions, problems };
  }

  return {
    name: 'gemini',
    defaults: { command: 'gemini', home: '~/.gemini' },
    discover,
    inputBox: (screen) => readAgentInputBox('gemini', screen),
    draftOnScreen(screen) {
      const box = readAgentInputBox('gemini', screen);
      return box.found ? !box.empty : null;
    },
    busyOnScreen(screen) {
      const box = readAgentInputBox('gemini', screen);
      if (!box.found) return null;
      return screen.split('\n').some((line) =>
        BUSY.test(
          cellsOf(line)
            .map((c) => c.ch)
            .join(''),
        ),
      );
    },
    quit: '/quit',
    // a home moved by fleet.agents.gemini.home (<dir>/.gemini) is found by the resumed CLI through GEMINI_CLI_HOME
    resumeCommand: (cfg, sessionId) => [
      ...(isDefaultHome(cfg.home, '.gemini') || basename(cfg.home) !== '.gemini' ? [] : ['env', `GEMINI_CLI_HOME=${dirname(cfg.home)}`]),
      cfg.command,
      '--resume',
      sessionId,
    ],
  };
}

export const gemini: AgentCli = createGemini();
