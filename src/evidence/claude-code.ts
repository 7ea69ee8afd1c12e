// What sunset reads of Claude Code's own files (docs/claude-code.md): a background job's state.json and the
// pins a person set. They are Claude Code's internals, so every read is defensive: a file that is missing
// where one must be, does not parse, or holds a field of another shape is unknown — and unknown protects (D5).
// sunset never writes them here; no token they may hold is ever logged or copied.
import { readCachedText } from './file-cache.js';
import { join } from 'node:path';
import type { JobFacts } from '../doctrine/verdict.js';
import { run } from '../run.js';
import { unsafeSegment } from '../doctrine/ids.js';
import { commandMissing } from './claude-cli.js';

import { pidsRss, processTree, sameClaudeDir, type ProcTable } from './proc.js';
import { claudeArgs } from './clients.js';
import { readClientArgv } from './cli-argv.js';
import { errorMessage } from '../errors.js';

/** Versions of the real CLI the real-client tests ran (test/real-*.test.ts). */
export const TESTED_VERSIONS: readonly string[] = Object.freeze(['2.1.328']);

export const jobStateFile = (claudeDir: string, shortId: string) => join(claudeDir, 'jobs', shortId, 'state.json');
export const pinsFile = (claudeDir: string) => join(claudeDir, 'jobs', 'pins.json');

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * How much is in flight, from state.json's `inFlight` object (2.1.328: `{ tasks, queued, kinds, drainableMonitors }`):
 * its counts summed. Lists (`kinds`) describe the counts and are not counted again. Absent (a job just started
 * writes none), no count at all, or a count of another shape, is null: unknown.
 */
export function inFlightCount(v: unknown): number | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  let n = 0;
  let counts = 0;
  for (const x of Object.values(v as Record<string, unknown>)) {
    if (Array.isArray(x)) continue;
    if (typeof x === 'number' && Number.isFinite(x) && x >= 0) {
      n += x;
      counts++;
    } else if (x !== null && x !== undefined) return null;
  }
  return counts ? n : null;
}

/** One of Claude Code's JSON files as an object; null when it does not parse or is not an object (unknown). */
export function jsonObject(text: string): Record<string, unknown> | null {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : null;
}

/** inFlight's parts Claude Code's reaper reads: tasks, queued prompts, the tasks' kinds. */
function inFlightParts(v: unknown): { tasks: number | null; queued: number | null; kinds: string[] } {
  const o = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  const n = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : null);
  return {
    tasks: o ? n(o.tasks) : null,
    queued: o ? n(o.queued) : null,
    kinds: o && Array.isArray(o.kinds) ? o.kinds.filter((k): k is string => typeof k === 'string') : [],
  };
}

/** Parse a job's state.json. null when it is not a JSON object (unknown). Pure. */
export function parseJobState(text: string): JobFacts | null {
  const r = jsonObject(text);
  if (!r) return null;
  const needs =
    typeof r.needs === 'string'
      ? str(r.needs)
      : r.needs && typeof r.needs === 'object'
        ? (str((r.needs as Record<string, unknown>).text) ?? str((r.needs as Record<string, unknown>).ask) ?? JSON.stringify(r.needs))
        : null;
  const ask = r.needsAsk && typeof r.needsAsk === 'object' ? str((r.needsAsk as Record<string, unknown>).text) : null;
  const cwd = str(r.cwd);
  const originCwd = str(r.originCwd);
  return {
    state: str(r.state),
    tempo: str(r.tempo),
    needs: ask ?? needs,
    inFlight: inFlightCount(r.inFlight),
    updatedAt: typeof r.updatedAt === 'number' ? new Date(r.updatedAt).toISOString() : str(r.updatedAt),
    settledAt: str(r.lastTerminalAt) ?? str(r.firstTerminalAt),
    ...inFlightParts(r.inFlight),
    // where the agent view files it (src/evidence/agent-view.ts)
    ...(cwd ? { cwd } : {}),
    ...(originCwd ? { originCwd } : {}),
  };
}

/** A live background job's state: its facts, or null when the file is missing or unreadable (unknown). */
export function readJobState(claudeDir: string, shortId: string): JobFacts | null {
  if (unsafeSegment(shortId)) return null; // not one path segment: nothing safe to read (and it is id-unsafe anyway)
  const r = readCachedText(jobStateFile(claudeDir, shortId));
  return r.ok ? parseJobState(r.text) : null;
}

export type PinsResult = { ok: true; pins: Set<string> } | { ok: false; error: string };

/** The short ids a person pinned: a JSON array of strings. No file is no pins; anything else odd is unknown. */
export function readPins(claudeDir: string): PinsResult {
  const file = pinsFile(claudeDir);
  const r = readCachedText(file);
  if (!r.ok) return r.code === 'ENOENT' ? { ok: true, pins: new Set() } : { ok: false, error: `cannot read ${file}: ${r.code}` };
  return parsePins(r.text, file);
}

export function parsePins(text: string, file = 'pins.json'): PinsResult {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${file} is not JSON: ${errorMessage(err)}` };
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return { ok: false, error: `${file} is not a JSON array of short ids` };
  return { ok: true, pins: new Set(v as string[]) };
}

/** "2.1.328 (Claude Code)" → "2.1.328". */
export function parseVersion(stdout: string): string | null {
  return /(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.-]+)?)/.exec(stdout)?.[1] ?? null;
}

/**
 * A sentence for a person when the CLI is a version sunset has not been tested with (or cannot be told),
 * else null. The test fleet's stand-in says so in its version line and needs no word.
 */
export async function versionNote(claudeCommand: string, timeoutMs: number): Promise<string | null> {
  const r = await run([claudeCommand, '--version'], { timeoutMs });
  // a CLI that is not there is said where its absence matters (the roster, `up`'s claude:missing), once
  if (!r.ok && commandMissing(r.error ?? '')) return null;
  if (!r.ok)
    return `could not tell which Claude Code this is (${claudeCommand} --version: ${r.error}); its files are read defensively, and what cannot be read protects`;
  if (/sunset test-fleet stand-in/.test(r.stdout)) return null;
  const v = parseVersion(r.stdout);
  if (v && TESTED_VERSIONS.includes(v)) return null;
  return `Claude Code ${v ?? JSON.stringify(r.stdout.trim().slice(0, 60))} has not been tested with sunset (tested: ${TESTED_VERSIONS.join(', ')}); its files are read defensively, and what cannot be read protects`;
}

/** The CLI's version (`claude --version`), null when it cannot be told; the test fleet's stand-in says what it is. */
export async function claudeVersion(claudeCommand: string, timeoutMs: number): Promise<string | null> {
  const r = await run([claudeCommand, '--version'], { timeoutMs });
  if (!r.ok) return null;
  if (/sunset test-fleet stand-in/.test(r.stdout)) return `${parseVersion(r.stdout) ?? '?'} (the test fleet's stand-in)`;
  return parseVersion(r.stdout);
}

// ---------------------------------------------------------------------------------------------------------
// memory: a session's own processes, and what the fleet holds beside its sessions

/** A background session's pty host: its parent, when that is a `claude bg-pty-host` process (it ends with the session). */
export function ptyHostOf(table: ProcTable, pid: number, names: ReadonlySet<string>): number | null {
  const parent = table.procs.get(table.procs.get(pid)?.ppid ?? -1);
  if (!parent) return null;
  const args = claudeArgs(parent.argv, names);
  return args?.includes('bg-pty-host') ? parent.pid : null;
}

/** The pids a session's memory is counted over: its process tree, and for a background session its pty host. */
export function sessionPids(table: ProcTable, pid: number, kind: string, names: ReadonlySet<string>): number[] {
  const pids = processTree(table, pid);
  if (kind === 'background') {
    const host = ptyHostOf(table, pid, names);
    if (host !== null) pids.push(host);
  }
  return pids;
}

export type OverheadKind = 'daemon' | 'spare' | 'clients' | 'other';
export interface Overhead {
  bytes: number;
  byKind: Record<OverheadKind, { processes: number; bytes: number }>;
}

/** What a Claude Code process is for, from its own argv, or null when its argv does not say. */
export function overheadKind(args: readonly string[]): OverheadKind | null {
  if (args.includes('bg-pty-host')) return 'spare';
  if (args.includes('daemon')) return 'daemon';
  // a person's client: read as findClients reads one (a plain `claude` is not counted one here: 'other')
  const c = readClientArgv(args, ['attach']);
  if (c.attach || c.agentView) return 'clients';
  return null;
}

/** A roster call (`claude agents --json`): sunset's own, or another tool's; it lives for a fraction of a second. */
const isRosterCall = (args: readonly string[]) => args.includes('agents') && args.includes('--json');

/**
 * The fleet's overhead: every Claude Code process (and its descendants) that no session's count holds —
 * the daemon, warm spares (a pty host whose session is not listed, and what it runs), people's clients — so
 * sessions plus overhead is what the box holds. A process is of the kind of its nearest ancestor-or-self
 * whose argv says (a warm spare's session under its pty host is a spare). sunset's own children are not the fleet's.
 */
export function fleetOverhead(
  table: ProcTable,
  counted: ReadonlySet<number>,
  names: ReadonlySet<string>,
  o: { ownPid?: number; rss?: (pids: number[]) => number; claudeDir?: string | null; procRoot?: string } = {},
): Overhead {
  const ownPid = o.ownPid ?? process.pid;
  const rss = o.rss ?? pidsRss;
  const byKind: Overhead['byKind'] = {
    daemon: { processes: 0, bytes: 0 },
    spare: { processes: 0, bytes: 0 },
    clients: { processes: 0, bytes: 0 },
    other: { processes: 0, bytes: 0 },
  };
  const memo = new Map<number, OverheadKind | null>();
  // null: not part of the fleet; else its kind
  const kindOf = (pid: number, hops = 0): OverheadKind | null => {
    if (memo.has(pid)) return memo.get(pid)!;
    const p = table.procs.get(pid);
    let k: OverheadKind | null = null;
    const args = p ? claudeArgs(p.argv, names) : null;
    // a Claude Code process of another home (another user's, another fleet's) is not this fleet's overhead
    const ours = !args || !o.claudeDir || sameClaudeDir(pid, o.claudeDir, o.procRoot, p?.startTicks);
    if (p && pid !== ownPid && ours && !(args && isRosterCall(args)) && hops < 64) {
      const own = args ? overheadKind(args) : null;
      const up = p.ppid > 1 && p.ppid !== ownPid && !counted.has(p.ppid) ? kindOf(p.ppid, hops + 1) : null;
      if (args) k = own ?? up ?? 'other';
      else k = up; // a plain process (a shell, an MCP server) belongs to its Claude Code ancestor, if any
    }
    memo.set(pid, k);
    return k;
  };
  for (const p of table.procs.values()) {
    if (counted.has(p.pid) || p.state === 'Z' || p.pid === ownPid) continue;
    const k = kindOf(p.pid);
    if (!k) continue;
    byKind[k].processes++;
    byKind[k].bytes += rss([p.pid]);
  }
  return { bytes: Object.values(byKind).reduce((a, k) => a + k.bytes, 0), byKind };
}
