// What the pipeline's workers share: producers for every queue, the task store with own-write tracking,
// the evidence source, the audit log and alarms, and the one judgement of a task's session.
import { createHash } from 'node:crypto';
import { Job, type ConnectionOptions, type Queue } from 'bullmq/dist/cjs/classes/index.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { auditFile, fileAudit, type Audit } from '../store/audit.js';
import { Alarms } from '../store/alarms.js';
import { fleetCache, type FleetSource } from '../evidence/fleet-cache.js';
import { chainReaders } from './chain-kinds/index.js';
import { redisLink, type RedisLink } from '../redis.js';
import { dryRun } from './dry-run.js';
import { fileStore, type ChainStore } from './store.js';
import { realActs, type Acts } from './acts.js';
import { exitPriority, memAvailable, underPressure } from '../evidence/meminfo.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import { latchTask, readTask, type LatchPatch, type Task } from '../tasks/tasks.js';
import type { LatchBase, WrittenStat } from '../tasks/tasks.js';
import { policyFrom, type Policy } from '../doctrine/verdict.js';
import { Producer } from '../../queues/common.js';
import { taskTerminalQueue } from '../../queues/task-terminal.js';
import { exitAskQueue } from '../../queues/exit-ask.js';
import { exitRetryQueue } from '../../queues/exit-retry.js';
import { sessionExitQueue } from '../../queues/session-exit.js';
import { expireScanQueue } from '../../queues/expire-scan.js';
import { reconcileQueue } from '../../queues/reconcile.js';
import { alarmDeliveryQueue } from '../../queues/alarm-delivery.js';
import { enqueueRecord } from '../alarms/enqueue.js';
import { IdleNotices } from './idle-notices.js';

export function createProducers(config: Config, connection: ConnectionOptions, host = config.host) {
  return {
    terminal: new Producer(taskTerminalQueue, host, connection),
    ask: new Producer(exitAskQueue, host, connection),
    retry: new Producer(exitRetryQueue, host, connection),
    exit: new Producer(sessionExitQueue, host, connection),
    expire: new Producer(expireScanQueue, host, connection),
    reconcile: new Producer(reconcileQueue, host, connection),
    delivery: new Producer(alarmDeliveryQueue, host, connection),
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
  /** Where latches go and chains' facts come from: the files (the real run), or a dry run's memory. */
  store: ChainStore;
  /** What each step does and how it is said: the real run's, or a dry run's (src/pipeline/acts.ts, dry-run.ts). */
  acts: Acts;
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

/** What differs between the real run and a dry run (src/pipeline/dry-run.ts): handed to the same code. */
export interface RunSet {
  /** The host its queues are named for. */
  host: string;
  auditFile: string;
  store: ChainStore;
  acts: Acts;
  /** It may send to a session (a dry run sends nothing, not even a request for idle notices). */
  sends: boolean;
}

function realRun(config: Config): RunSet {
  return {
    host: config.host,
    auditFile: auditFile(config.stateDir),
    store: fileStore(config.stateDir),
    acts: realActs(),
    sends: true,
  };
}

/** Everything a worker or a one-shot command needs, on its own Redis connection. */
export function createDeps(
  config: Config,
  o: { log: Logger; audit?: Audit; now?: () => number; dryRun?: boolean; oneShot?: boolean },
): PipelineDeps {
  // a one-shot command (sunset exit) fails fast when Redis is away; `sunset up` waits it out
  const link = redisLink(config, { oneShot: o.oneShot });
  // a dry run's schedule of its own: queues named for <host>.dry-run never meet the real run's
  const run = o.dryRun ? dryRun(config) : realRun(config);
  const producers = createProducers(config, link.connection(), run.host);
  links.set(producers, link);
  return {
    config,
    policy: policyFrom(config),
    log: o.log,
    audit: o.audit ?? fileAudit(config.stateDir, undefined, run.auditFile),
    // the real run's alarms go out through its delivery queue (one job per channel, retried); a dry run raises none
    alarms: new Alarms(config, o.log, run.sends ? (kind, key) => enqueueRecord(producers.delivery, config, kind, key) : null),
    fleet: fleetCache(config, () => ({ ...chainReaders(config), ...run.store.sweep })),
    producers,
    ownWrites: new OwnWrites(),
    now: o.now ?? Date.now,
    dryRun: Boolean(o.dryRun),
    store: run.store,
    acts: run.acts,
    redis: { up: true, where: link.where },
    idle:
      !run.sends || !config.fleet.idleNotices
        ? null
        : new IdleNotices({ log: o.log, timeoutMs: config.probeTimeout, promote: (w) => promote(producers[w.queue].queue, w.jobId) }),
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
  if (r.kind === 'invalid')
    deps.log.warn(
      { event: 'task:invalid', taskId, problem: r.invalid.problem },
      `task ${taskId} is invalid and left untouched: ${r.invalid.problem}`,
    );
  return null;
}

/** Under memory pressure, exit jobs carry a priority so the largest RSS leaves first. */
export function exitPriorityNow(deps: PipelineDeps, rssBytes: number | null | undefined): number | undefined {
  const floor = deps.config.memoryFloorMB === null ? null : deps.config.memoryFloorMB * 1024 * 1024;
  return exitPriority(rssBytes, underPressure(floor, memAvailable(deps.config.meminfoPath)));
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
export async function look(
  deps: PipelineDeps,
  sessionId: string,
  notBefore?: number,
): Promise<{ rosterOk: boolean; view: SessionView | null }> {
  const now = deps.now();
  // a session that has just said it is idle or gone: only a sweep taken after it can tell
  const heard = deps.idle?.noticeAt(sessionId);
  if (heard !== undefined && !(notBefore !== undefined && notBefore > heard)) notBefore = heard;
  const maxAge = notBefore !== undefined && Number.isFinite(notBefore) && notBefore > now - 1000 ? Math.max(0, now - notBefore) : 1000;
  const snap = await deps.fleet(maxAge, { tmux: 'if-needed' });
  return { rosterOk: snap.roster.ok, view: snap.roster.ok ? sessionFor(snap, sessionId) : null };
}

// a task's session found not running: src/pipeline/chain-kinds/task.ts
export { endedElsewhere, whoEnded } from './chain-kinds/task.js';

export function evidenceOf(view: SessionView | undefined) {
  return view
    ? { verdict: view.verdict, reasons: view.reasons, next: view.next, evidence: view.evidence, rssBytes: view.rssBytes }
    : undefined;
}
