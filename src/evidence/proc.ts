// /proc, read once per sweep: every process's parent, state, start time and argv. No child processes.
import { readdir } from 'node:fs/promises';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename } from 'node:path';

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
let bootMs: number | null = null;
let pageSize: number | null = null;

function btime(): number {
  if (bootMs === null) {
    const m = /^btime\s+(\d+)/m.exec(readFileSync('/proc/stat', 'utf8'));
    bootMs = m ? Number(m[1]) * 1000 : 0;
  }
  return bootMs;
}

/** The page size, derived from our own VmRSS (kB) over our resident pages, so no child process is needed. */
export function pageBytes(): number {
  if (pageSize === null) {
    try {
      const statm = readFileSync('/proc/self/statm', 'utf8').split(' ');
      const status = readFileSync('/proc/self/status', 'utf8');
      const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
      const pages = Number(statm[1]);
      const guess = (kb * 1024) / pages;
      pageSize = [4096, 16384, 65536].reduce((a, b) => (Math.abs(b - guess) < Math.abs(a - guess) ? b : a));
    } catch {
      pageSize = 4096;
    }
  }
  return pageSize;
}

/** Parse /proc/<pid>/stat. The command name may hold spaces and parentheses: fields start after the last ')'. */
export function parseStat(pid: number, text: string): Omit<ProcInfo, 'argv'> | null {
  const s = statFields(text);
  return s ? infoOf(pid, s) : null;
}

function infoOf(pid: number, s: StatFields): ProcInfo {
  return { pid, ppid: s.ppid, state: s.state, startMs: btime() + (s.start * 1000) / CLK_TCK, startTicks: s.startTicks, argv: [] };
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

/**
 * A process's argv, kept while its pid, start and command name (stat's comm) stay the same: argv is set at exec
 * (the real CLI starts its helpers with theirs, `claude bg-pty-host …`), and an exec changes comm. A process
 * younger than ARGV_SETTLE_MS is read every time: a retitle, if any, happens as it starts.
 */
const argvCache = new Map<string, { key: string; argv: string[] }>();
const ARGV_SETTLE_MS = 10_000;

/** One small /proc file whole, through one buffer (an open, a read, a close: no fstat, no buffer per file). */
const small = Buffer.allocUnsafe(4096);
function readSmall(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const n = readSync(fd, small, 0, small.length, 0);
    // a stat line is far shorter than the buffer: a full read is a longer file, read the plain way
    return n < small.length ? small.toString('utf8', 0, n) : readFileSync(path, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** PF_KTHREAD in stat's flags (field 9): a kernel thread, whatever its pid and parent (a container's pid 2 is no kthreadd). */
const PF_KTHREAD = 0x00200000;

/**
 * /proc files kept open between sweeps (a process's stat, and its statm where its memory is read): a read at
 * offset 0 of an open /proc file is made anew by the kernel, so a sweep reads a process with one call rather than
 * an open, a read and a close (half the cost). The file is bound to the process, not to its number: once it has
 * ended a read fails (ESRCH), and a pid reused is opened anew. Each sweep closes those of pids its listing no
 * longer shows. At most a quarter of the process's open-file limit is kept (and 2,048); beyond that files are
 * read the plain way. Only the real /proc is kept open (a test's folder of plain files is read anew), and every
 * use is synchronous (claimed, read, put back), so sweeps in flight together share it safely. Files are opened
 * close-on-exec: no child process inherits them.
 */
const held = new Map<string, number>();
let maxHeld: number | null = null;

function heldLimit(): number {
  if (maxHeld === null) {
    let limits = '';
    try {
      limits = readSmall('/proc/self/limits');
    } catch {
      /* unknown: the default below */
    }
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    const soft = m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : 1024;
    maxHeld = Math.max(0, Math.min(2048, Math.floor(soft / 4)));
  }
  return maxHeld;
}

/** A /proc file's text (path under /proc/<pid>/), through the kept file when there is one and its process lives. */
function readKept(path: string): string {
  const fd = held.get(path);
  if (fd !== undefined) {
    held.delete(path);
    try {
      const n = readSync(fd, small, 0, small.length, 0);
      if (n < small.length) {
        held.set(path, fd);
        return small.toString('utf8', 0, n);
      }
    } catch {
      /* ended: the pid, if listed, is another process now */
    }
    closeSync(fd);
  }
  if (keptFull()) return readSmall(path);
  const fresh = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fresh, small, 0, small.length, 0);
  } catch (err) {
    closeSync(fresh);
    throw err;
  }
  if (n >= small.length) {
    closeSync(fresh);
    return readFileSync(path, 'utf8');
  }
  held.set(path, fresh);
  return small.toString('utf8', 0, n);
}

/**
 * Kernel threads, known through a file kept open: a kernel thread's parent, start and argv (none) never change,
 * so the one question a sweep has of it is whether it is still the same thread. Its `cmdline`, kept open, answers
 * that for a fraction of a stat read: a kernel thread has no memory of its own, so the read is empty — and, bound to
 * the thread and not to its number, it fails once the thread has ended (ESRCH): a pid reused reads as the new
 * process. A read that is not empty is a task that has stopped being a kernel thread (before Linux 5.19 a usermode
 * helper was one from its fork to its exec): it is read anew.
 * Its ProcInfo is the one first read (its state as then: no use of a state is about a kernel thread). ~60 of a
 * real 12-session fleet's ~110 processes are kernel threads.
 */
const kthreads = new Map<number, { fd: number; info: ProcInfo }>();

/** A kernel thread's info, while the thread lives; null (and its file closed) once it has ended, or if not known. */
function knownKthread(pid: number): ProcInfo | null {
  const k = kthreads.get(pid);
  if (!k) return null;
  let n = -1;
  try {
    n = readSync(k.fd, small, 0, small.length, 0);
  } catch {
    /* ended */
  }
  if (n === 0) return k.info;
  kthreads.delete(pid);
  closeSync(k.fd);
  return null;
}

/** Keep a kernel thread just read through its kept stat (`at` = /proc/<pid>): its cmdline opened, its stat let go. */
function keepKthread(at: string, info: ProcInfo): void {
  if (keptFull()) return;
  let fd: number;
  try {
    fd = openSync(`${at}/cmdline`, 'r');
  } catch {
    return;
  }
  const stat = held.get(`${at}/stat`);
  try {
    // the stat file, opened before, still reads: the thread lived after cmdline was opened, so both are its own;
    // and cmdline reads empty, as a kernel thread's does
    if (stat === undefined) throw new Error('no kept stat');
    readSync(stat, small, 0, small.length, 0);
    if (readSync(fd, small, 0, small.length, 0) !== 0) throw new Error('not a kernel thread now');
  } catch {
    closeSync(fd);
    return;
  }
  held.delete(`${at}/stat`);
  closeSync(stat);
  kthreads.set(info.pid, { fd, info });
}

/** Are as many files kept open as may be (stat files and kernel threads' cmdline files together)? */
function keptFull(): boolean {
  return held.size + kthreads.size >= heldLimit();
}

/** Close the kept files of processes this listing of /proc does not show: they have ended. */
function dropUnlisted(listed: ReadonlySet<string>): void {
  for (const [path, fd] of held) {
    const pid = path.slice(6, path.indexOf('/', 6)); // '/proc/<pid>/…'
    if (listed.has(pid)) continue;
    held.delete(path);
    closeSync(fd);
  }
  for (const [pid, k] of kthreads) {
    if (listed.has(String(pid))) continue;
    kthreads.delete(pid);
    closeSync(k.fd);
  }
}

function readProc(procRoot: string, pid: number, kept: Map<string, { key: string; argv: string[] }>): ProcInfo | null {
  const real = procRoot === '/proc';
  if (real) {
    const known = knownKthread(pid);
    if (known) return known;
  }
  const at = `${procRoot}/${pid}`;
  try {
    const stat = real ? readKept(`${at}/stat`) : readSmall(`${at}/stat`);
    const f = statFields(stat);
    if (!f) return null;
    const info = infoOf(pid, f);
    if (Number.isFinite(f.flags) && (f.flags & PF_KTHREAD) !== 0) {
      if (real) keepKthread(at, info);
      return info; // a kernel thread has no argv
    }
    const key = `${f.startTicks}|${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}`;
    const hit = argvCache.get(at);
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

export async function readProcTable(procRoot = '/proc'): Promise<ProcTable> {
  const names = await readdir(procRoot);
  const pids = names.filter((n) => /^\d+$/.test(n)).map(Number);
  const procs = new Map<number, ProcInfo>();
  const children = new Map<number, number[]>();
  const kept = new Map<string, { key: string; argv: string[] }>();
  for (let i = 0; i < pids.length; i++) {
    if (i > 0 && i % PROC_BATCH === 0) await yieldNow();
    const p = readProc(procRoot, pids[i], kept);
    if (p) procs.set(p.pid, p);
  }
  // only the processes this read saw (another procRoot's entries too: tests read fake /proc folders, one at a time)
  argvCache.clear();
  for (const [k, v] of kept) argvCache.set(k, v);
  if (procRoot === '/proc') dropUnlisted(new Set(names));
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
export function pidsRss(pids: Iterable<number>): number {
  let pages = 0;
  for (const p of pids) {
    try {
      pages += Number(readKept(`/proc/${p}/statm`).split(' ', 2)[1]) || 0;
    } catch {
      /* ended meanwhile */
    }
  }
  return pages * pageBytes();
}

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
    if (sp > 0 && names.has(basename(a.slice(0, sp)))) return [...a.slice(sp + 1).split(' ').filter(Boolean), ...argv.slice(at + 1)];
  }
  return null;
}

/** The first word that is not an option (`claude --verbose attach x` → attach). */
function verbOf(args: readonly string[]): { verb: string | null; at: number } {
  let i = 0;
  while (i < args.length && args[i].startsWith('-')) i++;
  return { verb: args[i] ?? null, at: i };
}

/** People's clients on the box: `claude attach <words>` processes, and open agent views (`claude agents` without --json). */
export interface Clients {
  /** Each attach client's pid and the words after `attach` (an id, a prefix of one, a sessionId or a name). */
  attach: Array<{ pid: number; words: string[] }>;
  /** Pids of open agent views: a TUI from which a person can open any background session. */
  agentViews: number[];
}

export function findClients(table: ProcTable, names: ReadonlySet<string>, attachArgv: readonly string[], claudeDir: string | null = null): Clients {
  const markers = attachArgv.slice(1);
  const out: Clients = { attach: [], agentViews: [] };
  for (const p of table.procs.values()) {
    if (p.state === 'Z') continue;
    const args = claudeArgs(p.argv, names);
    if (!args) continue;
    // a client of another Claude Code home (another user, another test's fleet) cannot show these sessions
    if (claudeDir !== null && !sameClaudeDir(p.pid, claudeDir, '/proc', p.startTicks)) continue;
    const { verb, at } = verbOf(args);
    if (markers.length && verb === markers[0] && markers.every((m, k) => args[at + k] === m)) {
      const words = args.slice(at + markers.length).filter((w) => w && !w.startsWith('-'));
      out.attach.push({ pid: p.pid, words });
    } else if (verb === 'agents' && !args.includes('--json')) out.agentViews.push(p.pid);
  }
  return out;
}

/**
 * Is this process a client of the Claude Code home at claudeDir? Its CLAUDE_CONFIG_DIR, else $HOME/.claude,
 * from /proc/<pid>/environ. An environment that cannot be read (another user's process) counts as the same
 * home: unknown protects.
 */
export function sameClaudeDir(pid: number, claudeDir: string, procRoot = '/proc', startTicks?: string): boolean {
  const dir = claudeDirOf(pid, procRoot, startTicks);
  return dir === null || normal(dir) === normal(claudeDir);
}

/** Each process's Claude Code home, by pid and start: /proc/<pid>/environ is the environment it was started with. */
const homeCache = new Map<string, { ticks: string; dir: string | null }>();

function claudeDirOf(pid: number, procRoot: string, startTicks?: string): string | null {
  const at = `${procRoot}/${pid}`;
  const hit = startTicks === undefined ? undefined : homeCache.get(at);
  if (hit && hit.ticks === startTicks) return hit.dir;
  let env: string;
  try {
    env = readFileSync(`${at}/environ`, 'latin1');
  } catch {
    return null;
  }
  let home: string | null = null;
  let config: string | null = null;
  for (const kv of env.split('\0')) {
    if (kv.startsWith('HOME=')) home = kv.slice(5);
    else if (kv.startsWith('CLAUDE_CONFIG_DIR=')) config = kv.slice(18);
  }
  const dir = config || (home ? `${home.replace(/\/+$/, '')}/.claude` : null);
  if (startTicks !== undefined && env.length) {
    if (homeCache.size > 4096) homeCache.clear();
    homeCache.set(at, { ticks: startTicks, dir });
  }
  return dir;
}

const normal = (p: string) => p.replace(/\/+$/, '').replace(/\/+/g, '/');

/** Does one of these attach clients name this session: its id, a prefix of its id or sessionId, its sessionId or its name? */
export function attachedTo(clients: Clients['attach'], s: { id: string | null; sessionId: string; name: string | null }): number[] {
  const name = s.name?.toLowerCase() ?? null;
  const hits: number[] = [];
  for (const c of clients) {
    const named = c.words.some(
      (w) => w === s.id || w === s.sessionId || (s.id !== null && s.id.startsWith(w)) || s.sessionId.startsWith(w) || (name !== null && w.toLowerCase() === name),
    );
    if (named) hits.push(c.pid);
  }
  return hits;
}
