// `sunset up`: producers (the watcher, the reconcile and expire schedulers), workers (one per queue) and
// the web, in one process or split by --role. Shutdown closes the watcher, workers, queues, then Redis, once.
import { errorMessage } from '../errors.js';
import { existsSync } from 'node:fs';
import { Worker, type Processor } from 'bullmq/dist/cjs/classes/index.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Audit } from '../store/audit.js';
import { TaskWatcher } from '../tasks/watcher.js';
import { missingTasksDir } from '../evidence/fleet.js';
import { versionNote } from '../evidence/claude-code.js';
import { closeProducers, createDeps, loadTask, redisLinkOf, type PipelineDeps } from './deps.js';
import { schedule as scheduleChain } from './chains.js';
import { chainOfTask } from './chain-kinds/task.js';
import { startJobWatch } from './job-watch.js';
import { startSessionWatch } from './session-watch.js';
import { startUnreadableWatch } from './unreadable-watch.js';
import { syncPins } from './pins.js';
import { createReleaseProcessor } from '../../workers/release.js';
import { createAskProcessor } from '../../workers/exit-ask.js';
import { createRetryProcessor } from '../../workers/exit-retry.js';
import { createExitProcessor } from '../../workers/session-exit.js';
import { createReconcileProcessor } from '../../workers/reconcile.js';
import { createExpireScanProcessor } from '../../workers/expire-scan.js';
import { createAlarmDeliveryProcessor } from '../../workers/alarm-delivery.js';
import { backoffMs, DELIVERY_SCHEDULER_ID } from '../../queues/alarm-delivery.js';
import { PREFIX, jobId } from '../../queues/common.js';
import { RECONCILE_SCHEDULER_ID } from '../../queues/reconcile.js';
import { EXPIRE_SCHEDULER_ID } from '../../queues/expire-scan.js';
import type { ExitOutcome, ExitTarget } from './session-exit.js';
import type { ExitContext } from '../agents/types.js';
import { startSampler, type Sampler } from '../report/sampler.js';
import { keepMissed } from '../store/kept.js';
import { Lifecycle } from '../lifecycle.js';
import { missingClaude, sayClaudeMissing } from '../evidence/claude-cli.js';

import { ROLES, type Role } from './roles.js';
export { ROLES, type Role };

export interface UpOptions {
  roles?: Role[];
  dryRun?: boolean;
  log: Logger;
  audit?: Audit;
  now?: () => number;
  /** Tests only: wrap sessionExit to observe calls; the real one is used otherwise. */
  exitImpl?: (t: ExitTarget, c: Config, o?: Omit<ExitContext, 'config'>) => Promise<ExitOutcome>;
  /** Starts the web role; provided by the web module so that up.ts does not depend on it. */
  startWeb?: (deps: PipelineDeps) => Promise<{ close(): Promise<void>; url: string; token?: string; ephemeral?: boolean }>;
}

export interface Running {
  deps: PipelineDeps;
  workers: Worker[];
  watcher: TaskWatcher | null;
  web: { close(): Promise<void>; url: string; token?: string; ephemeral?: boolean } | null;
  /** Run one reconcile pass now (tests trigger it instead of waiting). */
  reconcile(): Promise<unknown>;
  /**
   * Close every part once, last started first, each within `deadlineMs` (default: long enough for an exit job to
   * confirm) and all within `totalMs` (default: no bound). Resolves to the parts forced, failed or left.
   */
  close(deadlineMs?: number, totalMs?: number): Promise<string[]>;
}

export async function startSunset(config: Config, o: UpOptions): Promise<Running> {
  const roles = new Set(o.roles?.length ? o.roles : ROLES);
  const log = o.log;
  const deps = createDeps(config, { log, audit: o.audit, now: o.now, dryRun: o.dryRun });
  // each part registers its closer as it starts; they close once, in reverse (src/lifecycle.ts)
  const life = new Lifecycle();
  life.add('queues', () => closeProducers(deps.producers));
  // the listening socket idle notices come to (opened at the first busy session), removed on the way out
  if (deps.idle) life.add('idle notices', () => deps.idle!.close());
  // a dry run's schedule is its own, and goes with it: nothing of it is left in Redis for the real run to meet
  if (deps.dryRun)
    life.add('dry-run schedule', () => Promise.all(Object.values(deps.producers).map((p) => p.queue.obliterate({ force: true }))));
  // plain options for one server; in cluster mode the producers' Cluster instance, which each Worker
  // duplicates (and closes its copies); closeProducers quits the instance itself, after the workers
  const link = redisLinkOf(deps.producers)!;
  const workerConnection = link.connection(true);
  const producers = deps.producers;
  const said = throttle(30_000); // said every ~30 s while Redis is away, with the address it tries
  // and once when it answers again (a person reading the log should not have to infer it from later events)
  let away: NodeJS.Timeout | null = null;
  const redisDown = () => {
    if (!away) {
      away = setInterval(() => {
        void producers.reconcile.queue.isPaused().then(
          () => {
            if (!away) return;
            clearInterval(away);
            away = null;
            deps.redis = { up: true, where: link.where };
            log.info({ event: 'redis:ready', where: link.where }, `Redis at ${link.where} answers again`);
          },
          () => undefined,
        );
      }, 2000);
      away.unref();
    }
    return said();
  };
  life.add('redis watch', () => {
    if (away) clearInterval(away);
  });
  for (const p of Object.values(producers)) {
    p.queue.on('error', (err) => {
      if (deps.redis.up) deps.redis = { up: false, where: link.where, since: new Date().toISOString(), error: err.message };
    });
    p.queue.on(
      'error',
      (err) =>
        redisDown() &&
        log.error({ event: 'redis:error', error: err.message }, `Redis at ${link.where} unreachable (${err.message}); retrying`),
    );
  }

  const workers: Worker[] = [];
  const reconcileProcessor = createReconcileProcessor(deps);
  if (roles.has('workers')) {
    // Claude Code's session files as events: a job deferred on a busy session is looked at again when its file
    // says it went idle, or the file goes (src/pipeline/session-watch.ts); the chain jobs' wakes live here
    const sessions = startSessionWatch(config.fleet.claudeDir, deps.idle, log);
    if (sessions) life.add('session watcher', sessions);
    // the reconcile's sweeps (on the CLI's word) run here: each says whether Claude Code's files read (claude-code-unreadable)
    const unreadable = startUnreadableWatch(deps);
    if (unreadable) life.add('claude-code-unreadable watch', unreadable);
    const w = config.windows;
    // Locks are renewed while a job runs; a short lock lets a crashed process's job come back soon (stalled).
    const lock = 2 * config.probeTimeout + 5000;
    // An empty queue's worker blocks on Redis for drainDelay seconds, then asks again: 10 s (BullMQ's ceiling for
    // Redis) rather than its default 5 halves what six idle workers cost at rest. A job added or falling due wakes a
    // worker at once (BullMQ's markers), so no step waits for it.
    const base = { connection: workerConnection, prefix: PREFIX, lockDuration: lock, stalledInterval: Math.ceil(lock / 2), drainDelay: 10 };
    const add = (q: { name: string }, processor: Processor, opts: Record<string, unknown> = {}) => {
      const worker = new Worker(q.name, processor, { ...base, ...opts });
      worker.on(
        'error',
        (err) =>
          redisDown() &&
          log.error({ event: 'redis:error', queue: q.name, error: err.message }, `worker ${q.name}: ${err.message}; retrying`),
      );
      worker.on('failed', (job, err) =>
        log.warn(
          { event: 'job:failed', queue: q.name, jobId: job?.id, attempts: job?.attemptsMade, error: err.message },
          `job ${job?.id} failed: ${err.message}`,
        ),
      );
      workers.push(worker);
      // a worker's close waits for its active jobs; past the deadline it is left (their locks lapse and the jobs
      // come back stalled: an exit job whose call was made only confirms, by the exit ledger). No force after it:
      // BullMQ's close returns the first call's promise, so a later close(true) changes nothing. With Redis
      // unreachable nothing a job does can be recorded and a plain close waits on Redis for ever: force from the start.
      life.add(`worker ${q.name}`, () => worker.close(!deps.redis.up));
    };
    add(producers.terminal, createReleaseProcessor(deps), { concurrency: 32 });
    add(producers.ask, createAskProcessor(deps), { concurrency: 256 }); // asks share one sweep: many at once cost one
    add(producers.retry, createRetryProcessor(deps), { concurrency: 8 });
    const per = config.exitRate.per;
    add(producers.exit, createExitProcessor(deps, o.exitImpl), {
      // enough concurrency that the limit, not the confirmation wait, sets the pace
      concurrency: Math.min(64, Math.max(1, Math.ceil((w.exitConfirm + config.probeTimeout) / Math.max(1, per)) * config.exitRate.max + 1)),
      limiter: { max: config.exitRate.max, duration: per },
      lockDuration: 2 * config.probeTimeout + w.exitConfirm + 5000,
    });
    add(producers.reconcile, reconcileProcessor, { concurrency: 1 });
    add(producers.expire, createExpireScanProcessor(deps), { concurrency: 1 });
    // alarms and the digest (a dry run sends nothing): a slow or failing channel holds no other back
    if (!deps.dryRun)
      add(producers.delivery, createAlarmDeliveryProcessor(deps), {
        concurrency: 16,
        settings: { backoffStrategy: (n: number) => backoffMs(n, config.alarms.retryDelay) },
      });
  }

  let watcher: TaskWatcher | null = null;
  let scheduleTimer: NodeJS.Timeout | null = null;
  let sampler: Sampler | null = null;
  if (roles.has('producers')) {
    if (!existsSync(config.fleet.tasksDir))
      log.warn({ event: 'tasks:missing', dir: config.fleet.tasksDir }, missingTasksDir(config.fleet.tasksDir));
    // said once, at start: no CLI to run (and not again at each scan that finds the roster failing for it), or a
    // CLI version sunset was not tested with (its files are read defensively)
    const missing = missingClaude(config.fleet);
    if (missing.length) sayClaudeMissing(log, missing);
    else
      void versionNote(config.fleet.claudeCommand, config.probeTimeout).then((note) => note && log.warn({ event: 'claude:version' }, note));
    watcher = new TaskWatcher({
      dir: config.fleet.tasksDir,
      log,
      isOwnWrite: (f, t) => deps.ownWrites.isOwn(f, t),
      isOwnStat: (f, st) => deps.ownWrites.isOwnStat(f, st),
      onTask: async (taskId, read) => {
        // the watcher has just read the file: use that, but for what loadTask must report (invalid, gone)
        const task = read.kind === 'task' ? read.task : await loadTask(deps, taskId);
        if (task?.terminal) await scheduleChain(deps, chainOfTask(deps, task));
        // a lane now waiting on a person: pinned against Claude Code's own reaper at once (it may act in 60 s under low memory)
        else if (task && config.fleet.pinProtected && config.fleet.claudeDir !== null)
          await syncPins(deps, await deps.fleet(1000, { tmux: 'if-needed' }));
      },
    });
    watcher.start();
    life.add('watcher', () => watcher!.close());
    // job schedulers: idempotent across restarts and processes; the first run fires at once
    const schedule = async () => {
      await producers.reconcile.queue.upsertJobScheduler(
        RECONCILE_SCHEDULER_ID,
        { every: config.windows.reconcileEvery },
        { name: 'reconcile', data: {} },
      );
      await producers.expire.queue.upsertJobScheduler(
        EXPIRE_SCHEDULER_ID,
        { every: config.windows.expireEvery },
        { name: 'expire-scan', data: { dryRun: deps.dryRun } },
      );
      // the alarm tick: what stateDir holds undelivered is enqueued, the digest sent when due (a dry run sends nothing)
      if (!deps.dryRun)
        await producers.delivery.queue.upsertJobScheduler(
          DELIVERY_SCHEDULER_ID,
          { every: config.windows.reconcileEvery },
          { name: 'alarm-delivery', data: { op: 'tick' } },
        );
    };
    // Every start runs one reconcile pass at once, whatever the schedulers in Redis hold (a scheduler that
    // survived a restart keeps its next time: tasks that turned terminal while sunset was down would wait).
    // Not awaited: with Redis down, these wait for it while the rest (the web) starts and says so.
    const startPass = `start/${config.host}/${process.pid}/${Date.now()}`;
    void schedule()
      .then(() => producers.reconcile.queue.add('reconcile', {}, { jobId: startPass, removeOnComplete: true, removeOnFail: true }))
      .catch((err) =>
        log.warn(
          { event: 'up:schedule-failed', error: err.message },
          `could not schedule the reconcile and expire passes: ${err.message}; renewed every reconcileEvery`,
        ),
      );
    // Redis may lose the schedulers (a flush, a restart without persistence): upsert is idempotent, so renew them
    scheduleTimer = setInterval(() => void schedule().catch(() => undefined), config.windows.reconcileEvery);
    scheduleTimer.unref();
    const timer = scheduleTimer;
    life.add('schedulers', () => clearInterval(timer));
    // alarms: what stateDir holds undelivered is enqueued at start (a tick now; the scheduler's are in schedule())
    if (!deps.dryRun)
      void producers.delivery
        .add(jobId('tick', startPass), { op: 'tick' })
        .catch((err: Error) =>
          log.warn(
            { event: 'alarm:tick-failed', error: err.message },
            `could not queue alarm delivery: ${err.message}; the next tick tries again`,
          ),
        );
    // Claude Code's job files as events: a job that settles done, or starts waiting on a person, is looked at
    // now (a files sweep, no roster call) rather than at the next reconcile (src/pipeline/job-watch.ts)
    const jobs = startJobWatch(deps, log);
    if (jobs) life.add('job watcher', jobs);
    // the fleet census (docs/sampler.md): one sampling process per host, by a lock file in stateDir
    // a dry run writes nothing the real run reads: no census
    if (!deps.dryRun) {
      // the census rides on the reconcile's sweep where it can (no sweep of its own at rest)
      sampler = startSampler(config, { log, now: o.now, ...(deps.fleet.onSweep ? { sweeps: deps.fleet.onSweep } : {}) });
      const s = sampler;
      life.add('sampler', () => s.close());
      // resume, kept: a copy of each exited session's transcript that has none yet (src/store/kept.ts)
      void keepMissed(config, deps.now()).then(
        (k) =>
          (k.kept.length || k.notKept.length || k.pruned.length) &&
          log.info(
            { event: 'resume:kept-missed', kept: k.kept, notKept: k.notKept, letGo: k.pruned },
            `kept ${k.kept.length} transcripts of earlier exits that had no copy; let ${k.pruned.length} past resume.keepDays go`,
          ),
        () => undefined,
      );
    }
  }

  let web: Running['web'] = null;
  if (roles.has('web') && o.startWeb) {
    try {
      web = await o.startWeb(deps);
      const w = web;
      life.add('web', () => w.close());
    } catch (err) {
      // said at once: closing what started may take its 10 s on a Redis that does not answer
      log.error({ event: 'web:failed', error: errorMessage(err) }, `${errorMessage(err)}; stopping what has started (at most 10 s)`);
      // the other roles are already running: close them rather than leave a half-started process (bounded: a
      // start that fails must not then hang on a Redis that does not answer)
      await life.close(10_000, 10_000);
      throw err;
    }
  }

  // long enough for an exit job to finish confirming (a clean stop loses nothing), not forever
  const deadline = 2 * config.probeTimeout + config.windows.exitConfirm + 5000;
  return {
    deps,
    workers,
    watcher,
    web,
    reconcile: () => reconcileProcessor(),
    close: async (ms = deadline, totalMs = Infinity) => {
      const late = await life.close(ms, totalMs);
      if (late.length)
        log.warn(
          { event: 'up:closed-late', parts: late },
          `closed past the deadline (${Number.isFinite(totalMs) ? `${ms} ms each, ${totalMs} ms in all` : `${ms} ms`}) or failed: ${late.join(', ')}`,
        );
      return late;
    },
  };
}

function throttle(ms: number) {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last < ms) return false;
    last = now;
    return true;
  };
}
