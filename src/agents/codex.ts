// OpenAI's Codex CLI (@openai/codex, measured on 0.171.0: docs/agents/codex.md): its TUI sessions on this box, tied
// to their session ids and transcripts, and its screen read for a draft or a turn in flight. The session's process
// is the pane's (the Node wrapper, or a native codex on top); a person's CODEX_HOME decides whose it is. Its exit
// path is agentInteractive(codex) in src/agents/agent-interactive.ts.
import { readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { normalize } from 'node:path';
import { isDefaultHome } from './agent-cli.js';
import { type AgentInputBox, cellsOf, readAgentInputBox } from '../evidence/agent-input-box.js';
import type { ProcTable } from '../evidence/proc.js';
import { errorCode } from '../errors.js';
import { whichFile } from '../which.js';
import type { AgentCli, AgentCliConfig, Discovery, FoundSession } from './agent-cli.js';
import { dayOf, Rollouts } from './codex-rollouts.js';
import { codexRecogniser, codexSessions, sessionCwd, type CodexProcess } from './codex-procs.js';
import { tieCodex, type CodexCandidate } from './codex-tie.js';

export const CODEX = 'codex';

/** What a process's environment (as it was started) says for Codex. ENDED: gone; null: unreadable. */
interface CodexEnv {
  /** Its CODEX_HOME, else $HOME/.codex; null when neither is set. */
  home: string | null;
  /** CODEX_THREAD_ID: set in a tool call's command, naming the session that runs it. */
  threadId: string | null;
}
const ENDED = 'ended' as const;

function readEnv(pid: number): CodexEnv | typeof ENDED | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch (err) {
    const code = errorCode(err);
    return code === 'ENOENT' || code === 'ESRCH' ? ENDED : null;
  }
  let home: string | null = null;
  let codexHome: string | null = null;
  let threadId: string | null = null;
  for (const kv of text.split('\0')) {
    if (kv.startsWith('HOME=')) home = kv.slice(5);
    else if (kv.startsWith('CODEX_HOME=')) codexHome = kv.slice(11);
    else if (kv.startsWith('CODEX_THREAD_ID=')) threadId = kv.slice(16);
  }
  const dir = codexHome || (home ? `${home.replace(/\/+$/, '')}/.codex` : null);
  return { home: dir, threadId: threadId || null };
}

const real = (p: string): string | null => {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
};
const samePath = (a: string, b: string) => normalize(`${a}/`) === normalize(`${b}/`) || (real(a) ?? a) === (real(b) ?? b);

const KEEP = 8_192;
const DAY_MS = 86_400_000;

/** Codex read through caches of its own (environments by pid and start, rollouts' first lines per home). */
export function createCodex(env: NodeJS.ProcessEnv = process.env): AgentCli {
  const envs = new Map<number, { ticks: string; env: CodexEnv | null }>();
  const rollouts = new Map<string, Rollouts>();

  const envOf = (pid: number, ticks: string | undefined): CodexEnv | typeof ENDED | null => {
    const hit = envs.get(pid);
    if (hit && ticks !== undefined && hit.ticks === ticks) return hit.env;
    const e = readEnv(pid);
    if (e === ENDED) return e;
    if (ticks !== undefined) {
      if (envs.size > KEEP) envs.clear();
      envs.set(pid, { ticks, env: e });
    }
    return e;
  };

  const rolloutsOf = (home: string): Rollouts => {
    let r = rollouts.get(home);
    if (!r) rollouts.set(home, (r = new Rollouts(home)));
    return r;
  };

  async function discover(procs: ProcTable, cfg: AgentCliConfig, now: number): Promise<Discovery> {
    const problems: string[] = [];
    for (const pid of envs.keys()) if (!procs.procs.has(pid)) envs.delete(pid);
    const found = whichFile(cfg.command, env, process.cwd());
    const commandPaths = new Set([found, found && real(found)].filter((p): p is string => !!p));
    const recognise = codexRecogniser(commandPaths, cfg.command.split('/').pop() ?? 'codex', real);

    // the session processes of this home, each with the folder it works in
    const candidates: CodexCandidate[] = [];
    const procOf = new Map<number, CodexProcess>();
    for (const p of codexSessions(procs, recognise)) {
      const e = envOf(p.pid, p.startTicks);
      if (e === ENDED) continue;
      if (e === null || e.home === null) {
        problems.push(`codex pid ${p.pid}: its environment cannot be read, so whose CODEX_HOME it uses cannot be told: not a session`);
        continue;
      }
      if (!samePath(e.home, cfg.home)) continue;
      let cwd: string;
      try {
        cwd = readlinkSync(`/proc/${p.pid}/cwd`);
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'ENOENT' && code !== 'ESRCH') problems.push(`codex pid ${p.pid}: its working folder cannot be read: not a session`);
        continue;
      }
      procOf.set(p.pid, p);
      candidates.push({ pid: p.pid, startMs: p.startMs, cwd: sessionCwd(cwd, p.args), resume: p.args.resume });
    }
    if (!candidates.length) return { sessions: [], problems };

    // the transcripts that could be theirs: those filed since the earliest start (a day and a half before it, for
    // time zones), and each resumed id's wherever it is
    const files = rolloutsOf(cfg.home);
    const earliest = Math.min(...candidates.map((c) => c.startMs));
    const { heads, unreadable } = files.headsSince(dayOf(Math.min(earliest, now) - 1.5 * DAY_MS));
    for (const path of unreadable.slice(0, 5)) problems.push(`codex transcript ${path}: its first line does not read as a session_meta`);
    for (const c of candidates) if (c.resume !== null && c.resume !== 'unknown') c.resumed = files.findById(c.resume);

    const tied = tieCodex(candidates, heads);
    problems.push(...tied.problems);
    const tools = toolPidsByThread(procs, new Set(procOf.keys()), earliest, envOf);
    const sessions: FoundSession[] = [];
    for (const t of tied.ties) {
      const look = files.look(t.head.path);
      if (!look) {
        problems.push(`codex pid ${t.pid}: its transcript ${t.head.path} cannot be read: not a session`);
        continue;
      }
      const p = procOf.get(t.pid)!;
      sessions.push({
        agent: CODEX,
        pid: t.pid,
        sessionId: t.head.sessionId,
        cwd: candidates.find((c) => c.pid === t.pid)!.cwd,
        startedAt: new Date(p.startMs).toISOString(),
        transcript: { path: t.head.path, mtimeMs: look.mtimeMs },
        turnInFlight: look.turnInFlight,
        toolPids: tools.get(t.head.sessionId.toLowerCase()) ?? [],
      });
    }
    return { sessions, problems };
  }

  return {
    name: CODEX,
    defaults: { command: 'codex', home: '~/.codex' },
    discover,
    inputBox,
    draftOnScreen,
    busyOnScreen,
    quit: '/quit',
    // a home moved by fleet.agents.codex.home is the resumed TUI's CODEX_HOME too
    resumeCommand: (cfg, sessionId) => [
      ...(isDefaultHome(cfg.home, '.codex') ? [] : ['env', `CODEX_HOME=${cfg.home}`]),
      cfg.command,
      'resume',
      sessionId,
    ],
  };
}

/**
 * A tool call's command carries its session in CODEX_THREAD_ID (it runs under the app-server daemon, or under the
 * TUI with the daemon off, or wherever it was reparented): every live process that started after the earliest
 * session, other than the sessions themselves, by the thread it names.
 */
function toolPidsByThread(
  procs: ProcTable,
  sessions: Set<number>,
  since: number,
  envOf: (pid: number, ticks: string | undefined) => CodexEnv | typeof ENDED | null,
): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const p of procs.procs.values()) {
    if (sessions.has(p.pid) || p.argv.length === 0 || p.state === 'Z' || p.state === 'X') continue;
    if (p.startMs < since - 2_000) continue;
    const e = envOf(p.pid, p.startTicks);
    if (e === ENDED || e === null || e.threadId === null) continue;
    const id = e.threadId.toLowerCase();
    out.set(id, [...(out.get(id) ?? []), p.pid]);
  }
  return out;
}

/** Codex's input box on a screen captured with `capture-pane -p -e` (agent-input-box.ts: the rule measured). */
export function inputBox(screen: string): AgentInputBox {
  return readAgentInputBox('codex', screen);
}

/** A person's draft in Codex's input box (`capture-pane -p -e`): null when no box is seen. */
export function draftOnScreen(screen: string): boolean | null {
  const box = inputBox(screen);
  return box.found ? !box.empty : null;
}

/** Codex's busy marker, `• Working (8s • esc to interrupt)`, above its input box: null when no box is seen. */
export function busyOnScreen(screen: string): boolean | null {
  if (!inputBox(screen).found) return null;
  // the word may be drawn letter by letter (a shimmer): read it plain; the bullet may be a spinner's frame
  return screen.split('\n').some((line) =>
    /^.{0,3}Working \(.*esc to interrupt\)/.test(
      cellsOf(line)
        .map((c) => c.ch)
        .join(''),
    ),
  );
}

export const codex: AgentCli = createCodex();
