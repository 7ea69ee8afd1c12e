// An agent CLI beside Claude Code (Codex CLI, Gemini CLI): how sunset finds its sessions on this box and reads
// their screens. One file per CLI (src/agents/<cli>.ts), one line in one table (src/agents/clis.ts); its exit path (how
// it is asked, quits and comes back) is made from it by agent-interactive.ts, and EXIT_PATHS holds it by that line.
// What each CLI does was measured on the real one: docs/agents/<cli>.md.
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { AgentInputBox } from '../evidence/agent-input-box.js';
import type { ProcTable } from '../evidence/proc.js';

/** Is this home folder the CLI's default one (`~/<name>`, written so or as a path)? */
export function isDefaultHome(home: string, name: string): boolean {
  return home === `~/${name}` || resolve(home) === resolve(homedir(), name);
}

/** Where one CLI lives: its command (argv[0] or a path) and its home folder (Codex: CODEX_HOME, Gemini: ~/.gemini). */
export interface AgentCliConfig {
  command: string;
  home: string;
}

/** One of its sessions, tied for certain: a live process, its session id and its transcript. */
export interface FoundSession {
  /** The CLI's name in the table: 'codex', 'gemini'. */
  agent: string;
  /** The session's process: the pane's process (the CLI's top process); it ends when the session ends. */
  pid: number;
  sessionId: string;
  cwd: string;
  /** The process's start, ISO. */
  startedAt: string;
  transcript: { path: string; mtimeMs: number };
  /** A turn in flight by its transcript: true, false; null = cannot be told (unknown protects). */
  turnInFlight: boolean | null;
  /** Live processes doing its tool calls (a turn's children), wherever they hang in the tree. */
  toolPids: number[];
}

export interface Discovery {
  sessions: FoundSession[];
  /** What a person should hear: a process of the CLI that could not be tied to one session (not a session: protected by absence), an unreadable file. */
  problems: string[];
}

export interface AgentCli {
  /** Its key in the table and in fleet.agents: 'codex', 'gemini'. */
  name: string;
  /** Its command and home when fleet.agents does not say. */
  defaults: AgentCliConfig;
  /** Every live session of this CLI on the box (its processes read from the table; its files under cfg.home). */
  discover(procs: ProcTable, cfg: AgentCliConfig, now: number): Promise<Discovery>;
  /**
   * Its input box on a screen captured with `capture-pane -p -e` (found, empty, the draft): every key typed is checked
   * by it. Pure. A CLI without one is never typed into (nothing can be checked): it is not asked and does not quit.
   */
  inputBox?(screen: string): AgentInputBox;
  /** A person's draft in its input box, from a screen captured with `capture-pane -p -e`: true, false, null = no box seen. Pure. */
  draftOnScreen(screen: string): boolean | null;
  /** Its busy marker on that screen (a turn in flight): true, false; null = no box seen. Pure. */
  busyOnScreen(screen: string): boolean | null;
  /** Its quit command, typed into an empty box: '/quit'. */
  quit: string;
  /** The argv that resumes a session, run in its cwd: `codex resume <id>`, `gemini --resume <id>`. */
  resumeCommand(cfg: AgentCliConfig, sessionId: string): string[];
}
