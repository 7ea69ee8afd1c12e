// What the pipeline's workers share: producers for every queue, the task store with own-write tracking,
// the evidence source, the audit log and alarms, and the one judgement of a task's session.
import { createHash } from 'node:crypto';
import { Job, type ConnectionOptions, type Queue } from 'bullmq/dist/cjs/classes/index.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { dryRunAuditFile, fileAudit, type Audit } from '../store/audit.js';
import { Alarms } from '../store/alarms.js';
import { fleetCache, type FleetSource } from '../evidence/fleet-cache.js';
import { expireFactsReader } from '../store/expire-state.js';
import { redisLink, type RedisLink } from '../redis.js';
import { decided } from './events.js';
import { DryRunLatches, dryRunHost } from './dry-run.js';
import { exitPriority, underPressure } from '../evidence/meminfo.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import { latchTask, readTask, type LatchPatch, type Task } from '../tasks/tasks.js';
import type { LatchBase, WrittenStat } from '../tasks/tasks.js';
import { readExit } from '../store/ledger.js';
import { requestExitId } from '../../queues/session-exit.js';
import { policyFrom, type Policy } from '../doctrine/verdict.js';
import { Producer } from '../../queues/common.js';
import { taskTerminalQueue } from '../../queues/task-terminal.js';
import { exitAskQueue } from '../../queues/exit-ask.js';
import { exitRetryQueue } from '../../queues/exit-retry.js';
import { sessionExitQueue } from '../../queues/session-exit.js';
import { expireScanQueue } from '../../queues/expire-scan.js';
import { reconcileQueue } from '../../queues/reconcile.js';
import { IdleNotices } from './idle-notices.js';

export function createProducers(config: Config, connection: ConnectionOptions, host = config.host) {
  return {
    terminal: new Producer(taskTerminalQueue, host, connection),
    ask: new Producer(exitAskQueue, host, connection),
    retry: new Producer(exitRetryQueue, host, connection),
    exit: new Producer(sessionExitQueue, host, connection),
    expire: new Producer(expireScanQueue, host, connection),
    reconcile: new Producer(reconcileQueue, host, connection),
  };
}
export type Producers = ReturnType<typeof createProducers>;

/** The Redis link producers made by createDeps were built on: closeProducers closes it after their queues. */
const links = new WeakMap<Producers, RedisLink>();

/** The link a process's Workers share with its producers (in cluster mode, the one Cluster instance). */
export function redisLinkOf(p: Producers): RedisLink | undefined {
  return links.get(p);
}

export async function closeProducers(p: Producers) {
  await Promise.all(Object.values(p).map((q) => q.close()));
  await links.get(p)?.close(); // last: a Cluster instance is shared by every queue (and duplicated by workers)
}

/** Remembers what sunset itself wrote, so the watcher can ignore the events its own writes cause. */
/**
 * sunset's own recent writes to task files, so the watcher can tell its own from another writer's. A digest,
 * not the text, and only for a minute: the fs event comes within milliseconds (seconds in a burst), and an
 * event that comes later is only handled once more (a re-read; its step is idempotent).
 */
export class OwnWrites {
  private readonly digests = new Map<string, { digest: string; at: number; st?: WrittenStat }>();
  constructor(private readonly keepMs = 60_000) {}
  note(file: string, text: string, st?: WrittenStat) {
    const now = Date.now();
    this.digests.delete(file); // re-inserted last: the map stays in the order of the writes
    this.digests.set(file, { digest: digestOf(text), at: now, ...(st ? { st } : {}) });
    for (const [f, e] of this.digests) {
      if (now - e.at <= this.keepMs && this.digests.size <= 50_000) break;
      this.digests.delete(f);
    }
  }
  /** Are these (the file's bytes, or its text) what sunset last wrote there? */
  isOwn(file: string, content: string | Buffer) {
    const e = this.digests.get(file);
    return e !== undefined && e.digest === digestOf(content);
  }
  /**
   * Is the file at this path, by a stat of it, still the very file sunset last wrote there (its inode, size and
   * mtime)? One stat instead of a read: the watcher sees every latch's rename. A file another writer replaced
   * is another inode; one written in place has a new mtime.
   */
  isOwnStat(file: string, st: { dev: number; ino: number; size: number; mtimeMs: number }) {
    const w = this.digests.get(file)?.st;
    return w !== undefined && w.ino === st.ino && w.dev === st.dev && w.size === st.size && w.mtimeMs === st.mtimeMs;
  }
}

/** The same for a text and its UTF-8 bytes. */
const digestOf = (content: string | Buffer) => createHash('sha1').update(content).digest('base64');

export interface PipelineDeps {
  config: Config;
  policy: Policy;
  log: Logger;
  audit: Audit;
  alarms: Alarms;
  fleet: FleetSource;
  producers: Producers;
  ownWrites: OwnWrites;
  now: () => number;
  dryRun: boolean;
  /** A dry run's latches (in memory: nothing the real run reads is written); null in a real run. */
  dry: DryRunLatches | null;
  /** Idle notices from busy sessions (src/pipeline/idle-notices.ts); null: a dry run, or fleet.idleNotices off. */
  idle: IdleNotices | null;
  /** Whether Redis answers, as `sunset up` last saw it (the web's pages, /healthz and /metrics say so). */
  redis: RedisState;
}

export interface RedisState {
  up: boolean;
  /** Where it is tried (a URL, or a cluster's seed nodes). */
  where: string;
  /** When it was last seen away, and why. */
  since?: string;
  error?: string;
}

/** Everything a worker or a one-shot command needs, on its own Redis connection. */
export function createDeps(config: Config, o: { log: Logger; audit?: Audit; now?: () => number; dryRun?: boolean; oneShot?: boolean }): PipelineDeps {
  // a one-shot command (sunset exit) fails fast when Redis is away; `sunset up` waits it out
  const link = redisLink(config, { oneShot: o.oneShot });
  // a dry run's schedule of its own: queues named for <host>.dry-run never meet the real run's
  const dry = o.dryRun ? new DryRunLatches() : null;
  const producers = createProducers(config, link.connection(), dry ? dryRunHost(config.host) : config.host);
  links.set(producers, link);
  return {
    config,
    policy: policyFrom(config),
    log: o.log,
    audit: o.audit ?? (dry ? fileAudit(config.stateDir, undefined, dryRunAuditFile(config.stateDir)) : fileAudit(config.stateDir)),
    alarms: new Alarms(config, o.log),
    fleet: fleetCache(config, () => ({ expireFacts: expireFactsReader(config.stateDir), ...(dry ? { dry } : {}) })),
    producers,
    ownWrites: new OwnWrites(),
    now: o.now ?? Date.now,
    dryRun: Boolean(o.dryRun),
    dry,
    // a dry run sends nothing to a session, not even this (an interactive one shows the request to its person)
    redis: { up: true, where: link.where },
    idle: dry || !config.fleet.idleNotices ? null : new IdleNotices({ log: o.log, timeoutMs: config.probeTimeout, promote: (w) => promote(producers[w.queue].queue, w.jobId) }),
  };
}

/** Run a deferred job now (false: it is not waiting any more — running, done, or gone). */
async function promote(queue: Queue, jobId: string): Promise<boolean> {
  const job = await Job.fromId(queue, jobId);
  if (!job || !(await job.isDelayed())) return false;
  await job.promote();
  return true;
}

export async function latch(deps: PipelineDeps, taskId: string, patch: LatchPatch, base?: LatchBase) {
  return latchTask(deps.config.fleet.tasksDir, taskId, patch, {
    base,
    maxExitRequests: deps.config.maxExitRequests,
    onWrite: (file, text, st) => deps.ownWrites.note(file, text, st),
  });
}

export async function loadTask(deps: PipelineDeps, taskId: string): Promise<Task | null> {
  const r = await readTask(deps.config.fleet.tasksDir, taskId);
  if (r.kind === 'task') return r.task;
  if (r.kind === 'invalid') deps.log.warn({ event: 'task:invalid', taskId, problem: r.invalid.problem }, `task ${taskId} is invalid and left untouched: ${r.invalid.problem}`);
  return null;
}

/** Under memory pressure, exit jobs carry a priority so the largest RSS leaves first. */
export function exitPriorityNow(deps: PipelineDeps, rssBytes: number | null | undefined): number | undefined {
  const floor = deps.config.memoryFloorMB === null ? null : deps.config.memoryFloorMB * 1024 * 1024;
  return exitPriority(rssBytes, underPressure(floor));
}

/** Each snapshot's rows by sessionId and by short id, made once (a reconcile pass looks up every chain's session). */
const rowIndex = new WeakMap<FleetSnapshot, Map<string, SessionView[]>>();

/** The session a task names, from a snapshot: the live row first, then any row. */
export function sessionFor(snap: FleetSnapshot, sessionId: string): SessionView | null {
  let index = rowIndex.get(snap);
  if (!index) {
    index = new Map();
    for (const s of snap.sessions) {
      for (const k of s.id !== null && s.id !== s.sessionId ? [s.sessionId, s.id] : [s.sessionId]) {
        const list = index.get(k);
        if (list) list.push(s);
        else index.set(k, [s]);
      }
    }
    rowIndex.set(snap, index);
  }
  const rows = index.get(sessionId) ?? [];
  return rows.find((s) => s.live !== false && s.verdict !== 'record') ?? rows.find((s) => s.verdict === 'gone') ?? rows[0] ?? null;
}

/**
 * The evidence a chain job is judged on: a sweep that started no earlier than `notBefore` (a sweep gathered
 * before the grace ended can only say grace-pending again), else one at most 1 s old, shared with every job
 * judged at about the same moment (src/evidence/fleet-cache.ts).
 */
export async function look(deps: PipelineDeps, sessionId: string, notBefore?: number): Promise<{ rosterOk: boolean; view: SessionView | null }> {
  const now = deps.now();
  // a session that has just said it is idle or gone: only a sweep taken after it can tell
  const heard = deps.idle?.noticeAt(sessionId);
  if (heard !== undefined && !(notBefore !== undefined && notBefore > heard)) notBefore = heard;
  const maxAge = notBefore !== undefined && Number.isFinite(notBefore) && notBefore > now - 1000 ? Math.max(0, now - notBefore) : 1000;
  const snap = await deps.fleet(maxAge, { tmux: 'if-needed' });
  return { rosterOk: snap.roster.ok, view: snap.roster.ok ? sessionFor(snap, sessionId) : null };
}

/**
 * A task's session is not running any more — a record (a background job's row keeps no pid), absent from a
 * roster that answered (an interactive session's row goes), or its process gone — so its chain ends in
 * exitedAt, never silently. Who ended it, when sunset can tell: sunset (its exit call is in the ledger),
 * else someone else (a person's `claude stop` or /exit, Claude Code's own reaper, a crash).
 */
export async function endedElsewhere(deps: PipelineDeps, task: Task, view: SessionView | null | undefined): Promise<void> {
  if (task.exitedAt || !task.terminal) return;
  const by = whoEnded(deps, task, view ?? null);
  const fields = { taskId: task.id, sessionId: task.sessionId, by: by.by, how: by.how, ...evidenceOf(view ?? undefined) };
  const words = `task ${task.id}: its session is not running any more (${by.how}); latching exitedAt`;
  if (deps.dry) {
    deps.dry.latch(`task/${task.id}`, { exitedAt: new Date(deps.now()).toISOString() });
    return decided(deps, 'would-end', fields, `would end: ${words}`);
  }
  const res = await latch(deps, task.id, { exitedAt: new Date(deps.now()).toISOString() });
  decided(deps, 'chain:session-ended', fields, words, { audit: Boolean(res.applied.exitedAt) });
}

/** Who ended a session sunset finds not running: sunset, when one of this task's exit calls is in the ledger. */
export function whoEnded(deps: PipelineDeps, task: Task, view: SessionView | null): { by: 'sunset' | 'other'; how: string } {
  for (let n = task.exitRequests; n >= 1; n--) {
    const rec = task.sessionId ? readExit(deps.config.stateDir, requestExitId(task.id, task.sessionId, n)) : null;
    if (rec?.calledAt) return { by: 'sunset', how: `sunset's exit request ${n} (${rec.method ?? 'its exit path'})` };
  }
  if (!view) return { by: 'other', how: 'its row has left the roster: ended outside sunset (a person, a crash)' };
  if (view.verdict === 'gone') return { by: 'other', how: `its process has ended (${view.evidence.liveWhy ?? 'gone'}), not by sunset` };
  const state = view.row.state;
  if (state === 'stopped') return { by: 'other', how: 'the roster keeps it as a stopped record: ended by `claude stop` outside sunset' };
  // a done job's record stays `done` whoever ended it: a person's `claude stop`, or Claude Code's own reaper —
  // which skips a pinned job, so a pinned one was a person (or a crash)
  if (state === 'done')
    return {
      by: 'other',
      how: view.evidence.pinned
        ? 'the roster keeps it as a done record: ended outside sunset (a person\'s `claude stop` or a crash: Claude Code\'s own reaper skips a pinned job)'
        : 'the roster keeps it as a done record: ended outside sunset (a person\'s `claude stop`, or Claude Code\'s own reaper, which retires settled jobs)',
    };
  return { by: 'other', how: `the roster keeps it as a record${state ? ` (${state})` : ''}: ended outside sunset` };
}

export function evidenceOf(view: SessionView | undefined) {
  return view ? { verdict: view.verdict, reasons: view.reasons, next: view.next, evidence: view.evidence, rssBytes: view.rssBytes } : undefined;
}
