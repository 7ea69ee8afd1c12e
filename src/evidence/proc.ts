// /proc, read once per sweep: every process's parent, state, start time and argv. No child processes.
import { readdir } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { errorCode } from '../errors.js';
import { procCache, readSmall, type KeptArgv, type KeptHome, type ProcCache } from './proc-cache.js';

export interface ProcInfo {
  pid: number;
  ppid: number;
  state: string;
  /** Process start, ms since the epoch. */
  startMs: number;
  /** Process start as the kernel gives it (clock ticks since boot, field 22 of stat): what Claude Code's session files record. */
  startTicks?: string;
  argv: string[];
}

export interface ProcTable {
  procs: Map<number, ProcInfo>;
  children: Map<number, number[]>;
}

const CLK_TCK = 100; // Linux USER_HZ is 100 on every mainstream architecture

/** The page size, derived from our own VmRSS (kB) over our resident pages, so no child process is needed. */
export function pageBytes(): number {
  return procCache.pageBytes();
}

/** Parse /proc/<pid>/stat. The command name may hold spaces and parentheses: fields start after the last ')'. */
export function parseStat(pid: number, text: string): Omit<ProcInfo, 'argv'> | null {
  const s = statFields(text);
  return s ? infoOf(pid, s, procCache) : null;
}

function infoOf(pid: number, s: StatFields, cache: ProcCache): ProcInfo {
  return { pid, ppid: s.ppid, state: s.state, startMs: cache.btime() + (s.start * 1000) / CLK_TCK, startTicks: s.startTicks, argv: [] };
}

interface StatFields {
  state: string;
  ppid: number;
  flags: number;
  start: number;
  startTicks: string;
}

/**
 * The fields a sweep reads from a stat line — state (field 3), ppid (4), flags (9), starttime (22) — found by
 * scanning for the spaces between them: a split made ~50 strings a process, most of a sweep's garbage.
 */
function statFields(text: string): StatFields | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const at: number[] = [close + 2]; // where field 3 + k starts, k = 0 … 20
  for (let k = 1; k <= 20; k++) {
    let sp = text.indexOf(' ', at[k - 1]);
    if (sp < 0 && k === 20) sp = text.trimEnd().length; // starttime the line's last field
    if (sp < 0) return null;
    at.push(sp + 1);
  }
  const field = (k: number) => text.slice(at[k], at[k + 1] - 1);
  const ppid = Number(field(1));
  const startTicks = field(19);
  const start = Number(startTicks);
  if (!Number.isFinite(ppid) || !Number.isFinite(start) || startTicks === '') return null;
  return { state: field(0) || '?', ppid, flags: Number(field(6)), start, startTicks };
}

/** A process younger than this is read every time: a retitle, if any, happens as it starts (src/evidence/proc-cache.ts). */
const ARGV_SETTLE_MS = 10_000;

/** PF_KTHREAD in stat's flags (field 9): a kernel thread, whatever its pid and parent (a container's pid 2 is no kthreadd). */
const PF_KTHREAD = 0x00200000;

function readProc(procRoot: string, pid: number, cache: ProcCache, kept: Map<string, KeptArgv>): ProcInfo | null {
  const real = procRoot === '/proc';
  if (real) {
    const known = cache.knownKthread(pid);
    if (known) return known;
  }
  const at = `${procRoot}/${pid}`;
  try {
    const stat = real ? cache.readKept(`${at}/stat`) : readSmall(`${at}/stat`);
    const f = statFields(stat);
    if (!f) return null;
    const info = infoOf(pid, f, cache);
    if (Number.isFinite(f.flags) && (f.flags & PF_KTHREAD) !== 0) {
      if (real) cache.keepKthread(at, info);
      return info; // a kernel thread has no argv
    }
    const key = `${f.startTicks}|${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}`;
    const hit = cache.argv.get(at);
    if (hit && hit.key === key) {
      kept.set(at, hit);
      info.argv = hit.argv;
      return info;
    }
    let cmd: Buffer;
    try {
      cmd = readFileSync(`${at}/cmdline`);
    } catch {
      cmd = Buffer.alloc(0);
    }
    const argv = cmd.length ? cmd.toString('utf8').replace(/\0$/, '').split('\0') : [];
    // kept once the process is past its start (a retitle happens there; one still exec'ing shows no argv yet)
    if (argv.length && f.state !== 'Z' && Date.now() - info.startMs >= ARGV_SETTLE_MS) kept.set(at, { key, argv });
    info.argv = argv;
    return info;
  } catch {
    return null; // ended between readdir and read
  }
}

// /proc files are made by the kernel on read, never by a disk: plain synchronous reads, in batches that
// yield to the event loop between them, cost a fraction of the thread pool's open/fstat/read/close round
// trips (700 processes: ~4x less CPU here), and a batch blocks for a few ms.
const PROC_BATCH = 128;
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Every process under procRoot, read through `cache` (by default the process's own: src/evidence/proc-cache.ts). */
export async function readProcTable(procRoot = '/proc', cache: ProcCache = procCache): Promise<ProcTable> {
  const names = await readdir(procRoot);
  const pids = names.filter((n) => /^\d+$/.test(n)).map(Number);
  const procs = new Map<number, ProcInfo>();
  const children = new Map<number, number[]>();
  const kept = new Map<string, KeptArgv>();
  for (let i = 0; i < pids.length; i++) {
    if (i > 0 && i % PROC_BATCH === 0) await yieldNow();
    const p = readProc(procRoot, pids[i], cache, kept);
    if (p) procs.set(p.pid, p);
  }
  // only the processes this read saw (another procRoot's entries too: tests read fake /proc folders, one at a time)
  cache.argv = kept;
  if (procRoot === '/proc') cache.dropUnlisted(new Set(names));
  for (const p of procs.values()) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  return { procs, children };
}

/** A pid reused by a process that started over this long after the roster's startedAt is not the session. */
export const PID_REUSE_SLACK_MS = 60_000;

/** alive = exists, not a zombie (nor dead), and not a reused pid. */
export function liveness(table: ProcTable, pid: number, startedAt: string | null): { alive: boolean; why?: string } {
  const p = table.procs.get(pid);
  if (!p) return { alive: false, why: 'no such process' };
  if (p.state === 'Z' || p.state === 'X' || p.state === 'x') return { alive: false, why: 'zombie' };
  const started = startedAt ? Date.parse(startedAt) : NaN;
  if (Number.isFinite(started) && p.startMs > started + PID_REUSE_SLACK_MS) {
    return { alive: false, why: `pid reused: process started ${Math.round((p.startMs - started) / 1000)} s after the session` };
  }
  return { alive: true };
}

/** The pid and all its descendants. */
export function processTree(table: ProcTable, pid: number): number[] {
  const out: number[] = [];
  const stack = [pid];
  const seen = new Set<number>();
  while (stack.length) {
    const p = stack.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    if (table.procs.has(p)) out.push(p);
    for (const c of table.children.get(p) ?? []) stack.push(c);
  }
  return out;
}

/** Is `pid` the process `ancestor` or one of its descendants? */
export function isInTree(table: ProcTable, ancestor: number, pid: number): boolean {
  let p: number | undefined = pid;
  for (let hops = 0; p !== undefined && p > 0 && hops < 64; hops++) {
    if (p === ancestor) return true;
    p = table.procs.get(p)?.ppid;
  }
  return false;
}

/** Resident bytes of each pid (own RSS, no descendants); a pid that cannot be read counts 0. */
export function pidsRss(pids: Iterable<number>, cache: ProcCache = procCache): number {
  let pages = 0;
  for (const p of pids) {
    try {
      pages += Number(cache.readKept(`/proc/${p}/statm`).split(' ', 2)[1]) || 0;
    } catch {
      /* ended meanwhile */
    }
  }
  return pages * cache.pageBytes();
}

/**
 * Is this process a client of the Claude Code home at claudeDir? Its CLAUDE_CONFIG_DIR, else $HOME/.claude,
 * from /proc/<pid>/environ. An environment that cannot be read (another user's process) counts as the same
 * home: unknown protects. A process that has ended since /proc was listed is no one's client.
 */
export function sameClaudeDir(pid: number, claudeDir: string, procRoot = '/proc', startTicks?: string): boolean {
  const home = homeOf(pid, procRoot, startTicks);
  if (home === ENDED) return false;
  return home?.dir == null || normal(home.dir) === normal(claudeDir);
}

/** What homeOf gives for a process that has ended (its /proc folder gone). */
export const ENDED: Readonly<Home> = Object.freeze({ dir: null, config: null });

export type Home = Omit<KeptHome, 'ticks'>;

/**
 * A Claude Code process's home, by pid and start, from /proc/<pid>/environ (the environment it was started with):
 * its CLAUDE_CONFIG_DIR, else $HOME/.claude; and its global config file as the CLI names it (2.1.328):
 * `.claude.json` (`.claude-custom-oauth.json` under CLAUDE_CODE_CUSTOM_OAUTH_URL) in CLAUDE_CONFIG_DIR, else in
 * $HOME. ENDED when the process has ended; null when its environment cannot be read (another user's process).
 */
export function homeOf(pid: number, procRoot = '/proc', startTicks?: string, cache: ProcCache = procCache): Home | null {
  const at = `${procRoot}/${pid}`;
  const hit = startTicks === undefined ? undefined : cache.homes.get(at);
  if (hit && hit.ticks === startTicks) return hit;
  let env: string;
  try {
    env = readFileSync(`${at}/environ`, 'latin1');
  } catch (err) {
    const code = errorCode(err);
    return code === 'ENOENT' || code === 'ESRCH' ? ENDED : null;
  }
  let home: string | null = null;
  let configDir: string | null = null;
  let customOauth = false;
  for (const kv of env.split('\0')) {
    if (kv.startsWith('HOME=')) home = kv.slice(5);
    else if (kv.startsWith('CLAUDE_CONFIG_DIR=')) configDir = kv.slice(18);
    else if (kv.startsWith('CLAUDE_CODE_CUSTOM_OAUTH_URL=')) customOauth = kv.length > 29;
  }
  const dir = configDir || (home ? `${home.replace(/\/+$/, '')}/.claude` : null);
  const base = configDir || home;
  const config = base ? `${base.replace(/\/+$/, '')}/.claude${customOauth ? '-custom-oauth' : ''}.json` : null;
  const kept = { ticks: startTicks ?? '', dir, config };
  if (startTicks !== undefined && env.length) {
    if (cache.homes.size > 4096) cache.homes.clear();
    cache.homes.set(at, kept);
  }
  return kept;
}

const normal = (p: string) => p.replace(/\/+$/, '').replace(/\/+/g, '/');
