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

/** One small /proc file whole, through one buffer (an open, a read, a close: no fstat, no buffer per file). */
const small = Buffer.allocUnsafe(4096);
function readSmall(path: string): string {
  const n = readSmallInto(path);
  // a stat line is far shorter than the buffer: a full read is a longer file, read the plain way
  return n < small.length ? small.toString('utf8', 0, n) : readFileSync(path, 'utf8');
}

/** A small file's bytes into `small` (how many; small.length: longer than the buffer). */
function readSmallInto(path: string): number {
  const fd = openSync(path, 'r');
  try {
    return readSync(fd, small, 0, small.length, 0);
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
let statFds = 0; // the stat files kept open in `seen` (held counts the rest)
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
const mayKeep = () => held.size + statFds < heldLimit();

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
  if (!mayKeep()) return readSmall(path);
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
 * What the last sweep found of each process, by pid, for each folder read as /proc. A process whose stat shows the
 * same parent, state, flags, start and command name as last time, and whose argv is settled, is the same ProcInfo
 * object as last time: a sweep reads each stat and compares its bytes, and makes nothing for a process at rest (a
 * sweep's garbage was ~0.8 MB on 12 real sessions, most of it the process table made anew; each scavenge it caused
 * cost ~1 ms). When every process is as it was, the table itself is last sweep's.
 *
 * argv is kept while pid, start and command name (stat's comm) stay the same: argv is set at exec (the real CLI
 * starts its helpers with theirs, `claude bg-pty-host …`), and an exec changes comm. A process younger than
 * ARGV_SETTLE_MS, or a zombie, or one that showed no argv, is read every time: a retitle, if any, happens as it starts.
 */
interface Seen {
  info: ProcInfo;
  /** stat's comm, as bytes. */
  comm: Buffer;
  flags: number;
  /** argv may be kept (see above). */
  settled: boolean;
  /** The stat file kept open (the real /proc only). */
  fd: number | null;
}
interface RootState {
  seen: Map<number, Seen>;
  last: ProcTable | null;
}
const roots = new Map<string, RootState>();
const ARGV_SETTLE_MS = 10_000;

function rootState(procRoot: string): RootState {
  let st = roots.get(procRoot);
  if (!st) {
    // one test folder at a time besides the real /proc (each test makes its own)
    for (const [k, v] of roots) if (k !== '/proc') dropRoot(k, v);
    st = { seen: new Map(), last: null };
    roots.set(procRoot, st);
  }
  return st;
}

function dropRoot(root: string, st: RootState): void {
  st.seen.forEach((e) => closeStat(e));
  roots.delete(root);
}

function closeStat(e: Seen): void {
  if (e.fd === null) return;
  closeSync(e.fd);
  e.fd = null;
  statFds--;
}

/** The process's stat into `small`: through its kept file (real /proc), else opened anew; how many bytes. */
function readStat(procRoot: string, pid: number, prev: Seen | undefined): { n: number; fd: number | null } {
  if (prev?.fd != null) {
    try {
      const n = readSync(prev.fd, small, 0, small.length, 0);
      if (n < small.length) return { n, fd: prev.fd };
    } catch {
      /* ended: the pid, if listed, is another process now */
    }
    closeStat(prev);
  }
  const path = `${procRoot}/${pid}/stat`;
  if (procRoot !== '/proc' || !mayKeep()) return { n: readSmallInto(path), fd: null };
  const fd = openSync(path, 'r');
  try {
    const n = readSync(fd, small, 0, small.length, 0);
    if (n < small.length) {
      statFds++;
      return { n, fd };
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  closeSync(fd);
  return { n: small.length, fd: null };
}

const SPACE = 0x20;

/** Does small[from, to) hold the digits of `text`? */
function sameDigits(from: number, to: number, text: string | undefined): boolean {
  if (text === undefined || text.length !== to - from) return false;
  for (let i = 0; i < text.length; i++) if (small[from + i] !== text.charCodeAt(i)) return false;
  return true;
}

/** Does small[from, to) hold the bytes of `bytes`? (Buffer#compare with offsets makes garbage on every call.) */
function sameBytes(from: number, to: number, bytes: Buffer): boolean {
  if (bytes.length !== to - from) return false;
  for (let i = 0; i < bytes.length; i++) if (small[from + i] !== bytes[i]) return false;
  return true;
}

/** A non-negative integer field of small[from, to); NaN if it is not one. */
function intAt(from: number, to: number): number {
  if (to <= from) return NaN;
  let v = 0;
  for (let i = from; i < to; i++) {
    const c = small[i] - 0x30;
    if (c < 0 || c > 9) return NaN;
    v = v * 10 + c;
  }
  return v;
}

/** Where a stat line's fields are in `small` (filled by statAt: one object for every process, no garbage). */
const at = { open: 0, close: 0, ppid: 0, flags: 0, startFrom: 0, startTo: 0 };

/**
 * Find the fields a sweep reads in the stat line in small[0, n): the comm between the first '(' and the last ')'
 * (it may hold either), then field 3 state, 4 ppid, 9 flags, 22 starttime. Scanned by hand: Buffer#indexOf and a
 * string's split make garbage on every call. False when the line is not one.
 */
function statAt(n: number): boolean {
  let open = 0;
  while (open < n && small[open] !== 0x28) open++;
  let close = n - 1;
  while (close > open && small[close] !== 0x29) close--;
  if (open >= n || close <= open || close + 2 >= n) return false;
  at.open = open;
  at.close = close;
  at.ppid = NaN;
  at.flags = NaN;
  let field = 3;
  let from = close + 2;
  for (let i = from; i <= n; i++) {
    if (i < n && small[i] !== SPACE && small[i] !== 0x0a) continue;
    if (field === 4) at.ppid = intAt(from, i);
    else if (field === 9) at.flags = intAt(from, i);
    else if (field === 22) {
      at.startFrom = from;
      at.startTo = i;
      return Number.isFinite(at.ppid) && Number.isFinite(intAt(from, i));
    }
    field++;
    from = i + 1;
  }
  return false;
}

/** One process, from its stat: last sweep's Seen when nothing changed, else a new one; null when it has ended. */
function readProc(procRoot: string, pid: number, prev: Seen | undefined, now: number): Seen | null {
  let got: { n: number; fd: number | null };
  try {
    got = readStat(procRoot, pid, prev);
    // a stat longer than the buffer (no comm makes one so: kept for safety) is read the plain way
    if (got.n >= small.length) got.n = small.write(readFileSync(`${procRoot}/${pid}/stat`, 'latin1'), 0, 'latin1');
  } catch {
    return null; // ended between readdir and read
  }
  const n = got.n;
  if (!statAt(n)) {
    if (got.fd !== null && prev?.fd !== got.fd) {
      closeSync(got.fd); // opened for this read (the caller closes a kept one)
      statFds--;
    }
    return null;
  }
  const { open, close, ppid, flags, startFrom, startTo } = at;
  const state = close + 2 < n && small[close + 2] !== SPACE ? String.fromCharCode(small[close + 2]) : '?';
  const kthread = Number.isFinite(flags) && (flags & PF_KTHREAD) !== 0;
  const sameExec = !!prev && prev.flags === flags && sameDigits(startFrom, startTo, prev.info.startTicks) && sameBytes(open + 1, close, prev.comm);
  if (prev && sameExec && prev.info.ppid === ppid && prev.info.state === state && (kthread || prev.settled)) {
    prev.fd = got.fd;
    return prev;
  }
  const startTicks = small.toString('latin1', startFrom, startTo);
  const comm = Buffer.from(small.subarray(open + 1, close));
  const info: ProcInfo = { pid, ppid, state, startMs: btime() + (Number(startTicks) * 1000) / CLK_TCK, startTicks, argv: [] };
  const seen: Seen = { info, comm, flags, settled: false, fd: got.fd };
  if (prev) prev.fd = null; // readStat left it closed, or its file is the new one's now
  if (kthread) return seen; // a kernel thread has no argv
  if (prev && sameExec && prev.settled) {
    info.argv = prev.info.argv;
    seen.settled = true;
    return seen;
  }
  let cmd: Buffer;
  try {
    cmd = readFileSync(`${procRoot}/${pid}/cmdline`);
  } catch {
    cmd = Buffer.alloc(0);
  }
  info.argv = cmd.length ? cmd.toString('utf8').replace(/\0$/, '').split('\0') : [];
  // kept once the process is past its start (a retitle happens there; one still exec'ing shows no argv yet)
  seen.settled = info.argv.length > 0 && state !== 'Z' && now - info.startMs >= ARGV_SETTLE_MS;
  return seen;
}

/** Parse /proc/<pid>/stat text. The command name may hold spaces and parentheses: fields start after the last ')'. */
export function parseStat(pid: number, text: string): Omit<ProcInfo, 'argv'> | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).split(' ');
  const ppid = Number(f[1]);
  const startTicks = (f[19] ?? '').trim();
  const start = Number(startTicks);
  if (!Number.isFinite(ppid) || !Number.isFinite(start) || startTicks === '') return null;
  return { pid, ppid, state: f[0] || '?', startMs: btime() + (start * 1000) / CLK_TCK, startTicks };
}

// /proc files are made by the kernel on read, never by a disk: plain synchronous reads, in batches that
// yield to the event loop between them, cost a fraction of the thread pool's open/fstat/read/close round
// trips (700 processes: ~4x less CPU here), and a batch blocks for a few ms.
const PROC_BATCH = 128;
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function readProcTable(procRoot = '/proc'): Promise<ProcTable> {
  const names = await readdir(procRoot);
  const st = rootState(procRoot);
  const last = st.last;
  const now = Date.now();
  let count = 0;
  let same = last !== null;
  const infos: ProcInfo[] = [];
  for (let i = 0; i < names.length; i++) {
    const c = names[i].charCodeAt(0);
    if (c < 0x30 || c > 0x39) continue; // self, thread-self, sys, …
    const pid = Number(names[i]);
    if (!Number.isInteger(pid)) continue;
    if (count > 0 && count % PROC_BATCH === 0) await yieldNow();
    count++;
    const prev = st.seen.get(pid);
    const got = readProc(procRoot, pid, prev, now);
    if (!got) {
      if (prev) {
        closeStat(prev);
        st.seen.delete(pid);
      }
      same = false;
      continue;
    }
    if (got !== prev) st.seen.set(pid, got);
    if (same && last!.procs.get(pid) !== got.info) same = false;
    infos.push(got.info);
  }
  // the processes this listing no longer shows have ended: their kept files are closed
  if (st.seen.size > infos.length) {
    const listed = new Set<number>();
    for (const p of infos) listed.add(p.pid);
    st.seen.forEach((e, pid) => {
      if (listed.has(pid)) return;
      closeStat(e);
      st.seen.delete(pid);
    });
  }
  if (procRoot === '/proc' && held.size) dropUnlisted(st.seen);
  if (same && last !== null && last.procs.size === infos.length) return last;
  const procs = new Map<number, ProcInfo>();
  const children = new Map<number, number[]>();
  for (const p of infos) {
    procs.set(p.pid, p);
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const table = { procs, children };
  st.last = table;
  return table;
}

/** Close the kept files (statm) of processes the last listing of /proc did not show: they have ended. */
function dropUnlisted(listed: ReadonlyMap<number, unknown>): void {
  held.forEach((fd, path) => {
    const pid = Number.parseInt(path.slice(6), 10); // '/proc/<pid>/…'
    if (listed.has(pid)) return;
    held.delete(path);
    closeSync(fd);
  });
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
const namesMade = new Map<string, Set<string>>();
export function claudeNames(claudeCommand: string, attachArgv: readonly string[]): ReadonlySet<string> {
  // the same Set for the same config: what a sweep keeps of a process's argv (argsOf) is kept for one Set
  const key = `${claudeCommand}\0${attachArgv[0] ?? ''}`;
  const made = namesMade.get(key);
  if (made) return made;
  const out = new Set<string>();
  for (const n of [basename(claudeCommand), attachArgv[0] ?? 'claude', 'claude']) {
    out.add(n);
    out.add(n.endsWith('.exe') ? n.slice(0, -4) : `${n}.exe`);
  }
  if (namesMade.size > 16) namesMade.clear();
  namesMade.set(key, out);
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
    const args = argsOf(p, names);
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

/** claudeArgs of a process's argv, kept on the process's ProcInfo (which a sweep keeps while the process is as it was). */
const argsKept = new WeakMap<ProcInfo, { names: ReadonlySet<string>; args: string[] | null }>();
function argsOf(p: ProcInfo, names: ReadonlySet<string>): string[] | null {
  const hit = argsKept.get(p);
  if (hit && hit.names === names) return hit.args;
  const args = claudeArgs(p.argv, names);
  argsKept.set(p, { names, args });
  return args;
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

const normals = new Map<string, string>();
/** A path without repeated or trailing slashes (the few a sweep compares are worked out once). */
function normal(p: string): string {
  let n = normals.get(p);
  if (n === undefined) {
    n = p.replace(/\/+$/, '').replace(/\/+/g, '/');
    if (normals.size > 256) normals.clear();
    normals.set(p, n);
  }
  return n;
}

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
