// Which processes on the box are Codex TUI sessions, from argv alone (pure over the /proc table). The `codex` bin of
// @openai/codex is a Node wrapper (`node …/@openai/codex/bin/codex.js`) that spawns the native TUI, which starts the
// app-server daemon and its updater (`…/codex app-server …`): the session is the TOP process of that tree — the
// pane's process, which ends when the session ends (docs/agents/codex.md, "Processes"). A native install with no
// wrapper has the native binary on top, and is the same to this rule.
import { basename, resolve } from 'node:path';
import type { ProcInfo, ProcTable } from '../evidence/proc.js';

/** Subcommands of codex 0.171.0 (`codex --help`) that are not an interactive session; resume and fork are. */
const NOT_A_SESSION = new Set([
  'agents',
  'exec',
  'e',
  'review',
  'login',
  'logout',
  'mcp',
  'mcp-server',
  'plugin',
  'app-server',
  'remote-control',
  'completion',
  'update',
  'doctor',
  'sandbox',
  'debug',
  'apply',
  'a',
  'queue',
  'archive',
  'delete',
  'migrate-rollouts',
  'migrate-nfs-db',
  'unarchive',
  'cloud',
  'exec-server',
  'features',
  'help',
  'proto',
]);

/** Options that take a value (the next word, unless written `--opt=value`). */
const WITH_VALUE = new Set([
  '-c',
  '--config',
  '--enable',
  '--disable',
  '--remote',
  '--remote-auth-token-env',
  '-i',
  '--image',
  '-m',
  '--model',
  '--local-provider',
  '-p',
  '--profile',
  '-s',
  '--sandbox',
  '-C',
  '--cd',
  '--add-dir',
  '-a',
  '--ask-for-approval',
]);

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export interface CodexArgs {
  /** An interactive session (no subcommand, a prompt, resume or fork). */
  session: boolean;
  /** resume <uuid>: the id; resume otherwise: 'unknown'; not a resume: null. */
  resume: string | 'unknown' | null;
  /** `-C`/`--cd <dir>`: the folder it works in instead of its cwd. */
  cd: string | null;
}

/** What the words after the program say. */
export function parseCodexArgs(args: string[]): CodexArgs {
  const positional: string[] = [];
  let cd: string | null = null;
  let last = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (a === '-h' || a === '--help' || a === '-V' || a === '--version') return { session: false, resume: null, cd };
    if (a === '--last') last = true;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (WITH_VALUE.has(name)) {
      const value = eq > 0 ? a.slice(eq + 1) : args[++i];
      if ((name === '-C' || name === '--cd') && value !== undefined) cd = value;
      continue;
    }
    if (a.startsWith('-C') && a.length > 2 && !a.startsWith('--')) {
      cd = a.slice(2); // -C<dir>
      continue;
    }
    if (a.startsWith('-') && a !== '-') continue;
    positional.push(a);
  }
  const sub = positional[0];
  if (sub === 'resume') {
    const id = positional[1];
    return { session: true, resume: !last && id !== undefined && UUID.test(id) ? id.toLowerCase() : 'unknown', cd };
  }
  if (sub !== undefined && NOT_A_SESSION.has(sub)) return { session: false, resume: null, cd };
  return { session: true, resume: null, cd };
}

/** How a process runs Codex: the words after the program, or null when it is not Codex. */
export type Recognise = (p: ProcInfo) => string[] | null;

const NODE = /^node(js)?[\d.]*$/;

/**
 * A recogniser for one install: `node <script> …` whose script is @openai/codex's bin (by its package path, or the
 * configured command resolved), or a native `codex` (by its name, or the configured command resolved).
 * `real(path)` resolves symlinks (a global install's `codex` on PATH is a link to the package's codex.js).
 */
export function codexRecogniser(commandPaths: Set<string>, commandName: string, real: (path: string) => string | null): Recognise {
  const names = new Set(['codex', commandName]);
  const isBin = (path: string) => /\/@openai\/codex\/bin\/codex\.js$/.test(path) || commandPaths.has(path);
  return (p) => {
    const [prog, ...rest] = p.argv;
    if (!prog) return null;
    if (NODE.test(basename(prog))) {
      const at = rest.findIndex((w) => !w.startsWith('-'));
      const script = rest[at];
      if (at < 0 || !script) return null;
      const base = basename(script);
      if (!(isBin(script) || names.has(base) || base === 'codex.js')) return null;
      const r = real(script);
      return isBin(script) || (r !== null && isBin(r)) ? rest.slice(at + 1) : null;
    }
    if (names.has(basename(prog))) return rest;
    const r = prog.includes('/') ? real(prog) : null;
    return r !== null && commandPaths.has(r) ? rest : null;
  };
}

export interface CodexProcess {
  pid: number;
  startMs: number;
  startTicks?: string;
  args: CodexArgs;
}

/**
 * The session processes: Codex processes that are interactive sessions and whose parent is no Codex process (the
 * native TUI under the wrapper, the daemon under the TUI are not sessions). `cwdOf` gives the process's working
 * folder (null: unreadable); a session's folder is its `-C <dir>`, resolved there.
 */
export function codexSessions(procs: ProcTable, recognise: Recognise): CodexProcess[] {
  const codexArgs = new Map<number, string[]>();
  for (const p of procs.procs.values()) {
    if (p.state === 'Z' || p.state === 'X') continue;
    const a = recognise(p);
    if (a) codexArgs.set(p.pid, a);
  }
  const out: CodexProcess[] = [];
  for (const [pid, a] of codexArgs) {
    const p = procs.procs.get(pid)!;
    if (codexArgs.has(p.ppid)) continue;
    const args = parseCodexArgs(a);
    if (args.session) out.push({ pid, startMs: p.startMs, startTicks: p.startTicks, args });
  }
  return out;
}

/** The folder a session works in: its `-C <dir>` against its cwd, else its cwd. */
export function sessionCwd(cwd: string, args: CodexArgs): string {
  return args.cd ? resolve(cwd, args.cd) : cwd;
}
