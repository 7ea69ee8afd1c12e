// An exit path: how one kind of session, of one agent CLI, is asked to wrap up, leaves, is seen gone, comes back,
// and whether a person's draft is in its way. One implementation per path (src/agents/<path>.ts), one table
// (src/agents/index.ts); the pipeline asks the table, never which kind of session it holds.
import type { Config } from '../config.js';
import type { SessionView } from '../evidence/fleet.js';
import type { Kind, RosterResult } from '../evidence/roster.js';

/** What an exit call is given: the session as fresh evidence showed it just before the call. */
export interface ExitTarget {
  /** The short id `claude stop` takes: background sessions only (interactive ones have none). */
  id: string | null;
  sessionId: string;
  kind: Kind;
  /** The agent CLI that runs it; absent = 'claude-code' (the only one sunset has met so far). */
  agent?: string;
  pid: number;
  startedAt: string | null;
  /** For interactive sessions: the pane that holds the pid, from fresh evidence. */
  paneId?: string | null;
}

/** The ledger's `method`: a public value (DESIGN.md). A path typing its own quit command reports `typed-exit`. */
export type ExitMethod = 'claude-stop' | 'typed-exit' | 'typed-exit+claude-stop';

export interface ExitOutcome {
  method: ExitMethod;
  /** The exit path was invoked (the command ran / the keys were typed). */
  called: boolean;
  /** The process ended within exitConfirm. */
  exited: boolean;
  ms: number;
  error?: string;
}

export type AskVia = 'socket' | 'inbox' | 'pane';

export type Delivered = { ok: true; via: AskVia; path?: string } | { ok: false; via: AskVia; why: string };

/** The one message: its words, the task or job id that names its inbox file, and when it is sent (ms). */
export interface AskMessage {
  id: string;
  text: string;
  at: number;
}

export interface ExitContext {
  config: Config;
  /** How often a wait for the process's end looks again, in ms (default 50). */
  poll?: number;
  /**
   * The CLI's roster (`fleet.rosterCommand`), read after this call began: the exit worker's shares one call with
   * every exit re-checking at that moment. Absent: a call of its own.
   */
  roster?: () => Promise<RosterResult>;
}

/** What `sunset resume` knows of an exited session (a resume-ledger entry). */
export interface ResumeTarget {
  sessionId: string;
  id: string | null;
  cwd: string | null;
  /** Its resume command (resumeCommand's), run in cwd. */
  resume: string[];
}

/** How `sunset resume` runs it, and what a person types to watch it when it runs elsewhere (a tmux session). */
export interface ResumeRun {
  argv: string[];
  attach: string | null;
}

export interface ExitPath {
  /** Its key in EXIT_PATHS: '<agent>-<kind>' by convention ('claude-background', 'codex-interactive'). */
  name: string;
  /** The agent CLI: 'claude-code', and the next ones' names ('codex', 'gemini'). */
  agent: string;
  kind: Kind;
  /** Words for logs and the audit: 'claude stop', '/exit typed into its pane'. */
  how: string;
  /** The method leave() reports when it could not begin (refused, or it threw). */
  method: ExitMethod;
  /** It types into a tmux pane: a session of it in no pane has no way out (no-pane), and a draft is in its way. */
  needsPane: boolean;
  /** It hands the short id to a program (`claude stop <id>`): an id that reads as an option protects (id-unsafe). */
  passesId: boolean;
  /**
   * sunset keeps a gzip copy of its transcript when it leaves (resume.keep, src/store/kept.ts): Claude Code's, whose
   * cleanup deletes transcripts after cleanupPeriodDays. Another CLI's transcript is its own to keep.
   */
  keepsTranscript: boolean;

  /** The one message, by fleet.askVia; a delivery that fails sends nothing. */
  ask(ctx: ExitContext, view: SessionView, msg: AskMessage): Promise<Delivered>;
  /** Take the exit path and wait up to exitConfirm for the process to end. Never a signal (D1). */
  leave(ctx: ExitContext, target: ExitTarget): Promise<ExitOutcome>;
  /** Did it leave by the deadline: the same process is gone. */
  confirm(ctx: ExitContext, target: Pick<ExitTarget, 'pid' | 'startedAt'>, deadline: number): Promise<boolean>;
  /** The command that resumes the conversation, run in its cwd. */
  resumeCommand(config: Pick<Config, 'fleet'>, sessionId: string): string[];
  /** How `sunset resume` runs that command: here, or in a new tmux window for a session that lived in a pane. */
  resumeArgv(config: Pick<Config, 'fleet'>, entry: ResumeTarget, insideTmux: boolean): ResumeRun;
  /** A person's draft in its input box, read live: true, false, null = cannot be told (a dialog, no pane). */
  draft?(ctx: ExitContext, view: SessionView): Promise<boolean | null>;
  /** The same, read from a captured screen (`capture-pane -p -e`): pure, so one sweep can read many panes. */
  draftOnScreen?(screen: string): boolean | null;
}
