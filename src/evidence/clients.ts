// People's clients on the box, found in /proc: `claude attach <x>` processes and open agent views (docs/claude-code.md,
// "People watching"). Nothing on the box but a client's argv (and, for a plain `claude`, the person's global config)
// says what it is; src/evidence/cli-argv.ts reads argv as the CLI does.
import { basename } from 'node:path';
import { readClientArgv } from './cli-argv.js';
import { readCachedParsed } from './file-cache.js';
import { ENDED, homeOf, sameClaudeDir, type ProcTable } from './proc.js';

/** The command names a Claude Code process may carry in argv: `claude`, the native `claude.exe`, the configured command's basename. */
export function claudeNames(claudeCommand: string, attachArgv: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const n of [basename(claudeCommand), attachArgv[0] ?? 'claude', 'claude']) {
    out.add(n);
    out.add(n.endsWith('.exe') ? n.slice(0, -4) : `${n}.exe`);
  }
  return out;
}

/**
 * The words after the command name when argv runs a Claude Code binary (directly, or after an interpreter such
 * as node); else null. The real CLI retitles its helpers: argv[0] becomes one word with spaces, such as
 * "claude bg-pty-host" or "claude bg-spare", whose first part is the name and the rest its first words.
 */
export function claudeArgs(argv: readonly string[], names: ReadonlySet<string>): string[] | null {
  for (const at of [0, 1]) {
    const a = argv[at];
    if (!a) continue;
    if (names.has(basename(a))) return argv.slice(at + 1);
    const sp = a.indexOf(' ');
    if (sp > 0 && names.has(basename(a.slice(0, sp))))
      return [
        ...a
          .slice(sp + 1)
          .split(' ')
          .filter(Boolean),
        ...argv.slice(at + 1),
      ];
  }
  return null;
}

/** People's clients on the box: `claude attach <words>` processes, and open agent views. */
export interface Clients {
  /** Each attach client's pid and the words after `attach` (an id, a prefix of one, a sessionId or a name). */
  attach: Array<{ pid: number; words: string[] }>;
  /** Pids of open agent views: a TUI from which a person can open any background session. */
  agentViews: number[];
}

export interface ClientsOptions {
  /** The fleet's Claude Code home: a client of another (another user's, another fleet's) cannot show its sessions. */
  claudeDir?: string | null;
  /** Is this pid a session of the roster? A plain `claude` that is one is an interactive session, not an agent view. */
  isSession?: (pid: number) => boolean;
  /** Does a plain `claude` (this pid) open the agent view: true, false, or null when that cannot be told. */
  opensAgentView?: (pid: number, startTicks?: string) => boolean | null;
}

export function findClients(table: ProcTable, names: ReadonlySet<string>, attachArgv: readonly string[], o: ClientsOptions = {}): Clients {
  const markers = attachArgv.slice(1);
  const claudeDir = o.claudeDir ?? null;
  const out: Clients = { attach: [], agentViews: [] };
  for (const p of table.procs.values()) {
    if (p.state === 'Z') continue;
    const args = claudeArgs(p.argv, names);
    if (!args) continue;
    // a client of another Claude Code home (another user, another test's fleet) cannot show these sessions
    if (claudeDir !== null && !sameClaudeDir(p.pid, claudeDir, '/proc', p.startTicks)) continue;
    const c = readClientArgv(args, markers);
    if (c.attach) out.attach.push({ pid: p.pid, words: c.attach });
    if (c.agentView) out.agentViews.push(p.pid);
    // a plain `claude` is an agent view where its person's config says so, or cannot be read (unknown protects)
    else if (c.agentViewIfDefault && !o.isSession?.(p.pid) && (o.opensAgentView ?? opensAgentView)(p.pid, p.startTicks) !== false)
      out.agentViews.push(p.pid);
  }
  return out;
}

/**
 * Does a plain `claude` of this process open the agent view? Its global config (`.claude.json`, from its own
 * environment: src/evidence/proc.ts homeOf) says `"defaultToAgentsView": true`. The CLI may read an older
 * `.config.json` in its home instead: either saying so counts. No file is the CLI's default (no); a file that
 * cannot be read or does not parse, or an environment that cannot be read, is null: unknown.
 */
export function opensAgentView(pid: number, startTicks?: string, procRoot = '/proc'): boolean | null {
  const home = homeOf(pid, procRoot, startTicks);
  if (home === ENDED) return false; // it has ended: it shows nothing
  if (!home?.config) return null;
  const says = defaultToAgentsView(home.config);
  return says === false && home.dir ? defaultToAgentsView(`${home.dir.replace(/\/+$/, '')}/.config.json`) : says;
}

/** A global config file's `defaultToAgentsView`: false when there is no such file (the CLI's default), null when it is unknown. */
function defaultToAgentsView(file: string): boolean | null {
  const r = readCachedParsed(file, saysDefaultView);
  if (!r.ok) return r.missing ? false : null;
  return r.value;
}

/** Pure: a global config's text → its defaultToAgentsView (true only when it is `true`, as the CLI reads it); null when it does not parse. */
export function saysDefaultView(text: string): boolean | null {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>).defaultToAgentsView === true : null;
}

/** Does one of these attach clients name this session: its id, a prefix of its id or sessionId, its sessionId or its name? */
export function attachedTo(clients: Clients['attach'], s: { id: string | null; sessionId: string; name: string | null }): number[] {
  const name = s.name?.toLowerCase() ?? null;
  const hits: number[] = [];
  for (const c of clients) {
    const named = c.words.some(
      (w) =>
        w === s.id || w === s.sessionId || s.id?.startsWith(w) || s.sessionId.startsWith(w) || (name !== null && w.toLowerCase() === name),
    );
    if (named) hits.push(c.pid);
  }
  return hits;
}
