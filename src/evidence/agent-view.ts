// Which background sessions an open agent view lists. `claude agents --cwd <path>` lists only the background
// sessions started under <path>; without it, all (docs/claude-code.md, "People watching"). Nothing on the box
// says which session a person has open in it, so a view protects every session it lists. What is read here
// mirrors the CLI (2.1.328, read and run): the value of its last --cwd, resolved against the view process's own
// folder and then through symlinks (a path that does not exist stays as resolved); a session is listed when its
// job's folder is that path or below it, by whole components. Whatever cannot be told counts as listed.
import { readlinkSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { JobFacts } from '../doctrine/verdict.js';
import type { ProcTable } from './proc.js';
import { claudeArgs } from './clients.js';
import { errorCode } from '../errors.js';

export interface AgentView {
  pid: number;
  /** The folder it is narrowed to (its --cwd, resolved as the CLI resolves it); null = it lists every background session. */
  cwd: string | null;
  /** Its --cwd as typed, where it could not be resolved (the view's own folder, or the path, could not be read): it counts as listing all. */
  cwdUnresolved?: string;
}

/** Options of `claude agents` that take a value (2.1.328, hidden ones too): the word after one is its value, never an option. */
const VALUED = new Set([
  '--cwd',
  '--setting-sources',
  '--add-dir',
  '--plugin-dir',
  '--plugin-dir-no-mcp',
  '--settings',
  '--managed-settings',
  '--mcp-config',
  '--permission-mode',
  '--inherit-permission-mode',
  '--model',
  '--effort',
  '--agent',
]);

/**
 * The --cwd of an agent view as typed, from the words after `agents` (`--cwd P` or `--cwd=P`; the last one wins, as
 * in the CLI); null when it lists everything: no --cwd, an empty one (the CLI ignores it), or words the CLI's two
 * argument parsers could read two ways (an option's value that looks like an option). Pure.
 */
export function cwdArg(args: readonly string[]): string | null {
  let arg: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    if (w === '--') break;
    const eq = w.startsWith('--') ? w.indexOf('=') : -1;
    const name = eq > 0 ? w.slice(0, eq) : w;
    if (!VALUED.has(name)) continue;
    let value: string;
    if (eq > 0) value = w.slice(eq + 1);
    else {
      value = args[++i] ?? '-';
      if (value.startsWith('-')) return null;
    }
    if (name === '--cwd') arg = value;
  }
  return arg === '' ? null : arg;
}

/** How an agent view's narrowing is found: its process's folder, and a path through its symlinks. */
export interface ViewFs {
  /** The process's current folder (/proc/<pid>/cwd); null when it cannot be read or was removed. */
  cwdOf(pid: number): string | null;
  /** The path through its symlinks; 'missing' when it does not exist (the CLI keeps the path as it is); null when it cannot be read. */
  realpath(path: string): string | 'missing' | null;
}

/** The narrowing of the agent view `pid` whose --cwd was typed as `arg` (null: none). */
export function narrowing(pid: number, arg: string | null, fs: ViewFs): AgentView {
  if (arg === null) return { pid, cwd: null };
  let base: string | null = '/';
  if (!isAbsolute(arg)) base = fs.cwdOf(pid);
  if (base === null) return { pid, cwd: null, cwdUnresolved: arg };
  const path = resolve(base, arg);
  const real = fs.realpath(path);
  if (real === null) return { pid, cwd: null, cwdUnresolved: arg };
  return { pid, cwd: real === 'missing' ? path : real };
}

/**
 * The folder the agent view files a background session under, as the CLI does: its job's `originCwd`, else its
 * cwd (the job's, else the roster's), a worktree under `<repo>/.claude/worktrees/` counting as `<repo>`'s. null
 * when it cannot be told (the job's state file unreadable, no cwd at all). Pure.
 */
export function listedFolder(job: JobFacts | null | undefined, rowCwd: string | null): string | null {
  if (job === null) return null;
  if (job?.originCwd) return job.originCwd;
  const cwd = job?.cwd ?? rowCwd;
  if (!cwd) return null;
  return /^(.+?)[/\\]\.claude[/\\]worktrees[/\\]/.exec(cwd)?.[1] ?? cwd;
}

/** Does this view list a session filed under `folder`? Unnarrowed, unresolved or an unknown folder: yes. Pure. */
export function lists(view: AgentView, folder: string | null): boolean {
  if (view.cwd === null || folder === null || !isAbsolute(folder)) return true;
  const rel = relative(view.cwd, folder);
  return rel.split(/[/\\]/, 1)[0] !== '..' && !isAbsolute(rel);
}

/** The real /proc and file system. */
export function liveViewFs(procRoot = '/proc'): ViewFs {
  return {
    cwdOf(pid) {
      try {
        const cwd = readlinkSync(`${procRoot}/${pid}/cwd`);
        return cwd.endsWith(' (deleted)') || !isAbsolute(cwd) ? null : cwd;
      } catch {
        return null;
      }
    },
    realpath(path) {
      try {
        return realpathSync(path);
      } catch (err) {
        // what fails the same way for the CLI leaves the path as it is; anything else (a folder sunset may not read) is unknown
        return errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR' || errorCode(err) === 'ELOOP' ? 'missing' : null;
      }
    },
  };
}

/** The open agent views (their pids, found by findClients) with their narrowing. */
export function agentViewsOf(
  table: ProcTable,
  pids: readonly number[],
  names: ReadonlySet<string>,
  fs: ViewFs = liveViewFs(),
): AgentView[] {
  return pids.map((pid) => {
    const args = claudeArgs(table.procs.get(pid)?.argv ?? [], names) ?? [];
    return narrowing(pid, cwdArg(args.slice(args.indexOf('agents') + 1)), fs);
  });
}

/** One line a person reads per open view: what it lists, and so what is not asked or stopped while it is open. */
export function agentViewLines(views: readonly AgentView[]): string[] {
  return views.map((v) => {
    if (v.cwd !== null)
      return `a person has the agent view open on ${v.cwd} (claude agents --cwd, pid ${v.pid}): the background sessions under it may be on their screen, so none of them is asked or stopped while it is open`;
    const why = v.cwdUnresolved !== undefined ? `; its --cwd ${v.cwdUnresolved} could not be resolved` : '';
    return `a person has the agent view open (claude agents, pid ${v.pid}${why}): every background session may be on their screen, so none is asked or stopped while it is open`;
  });
}
