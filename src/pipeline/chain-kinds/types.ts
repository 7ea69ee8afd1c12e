// What a kind of chain is to the pipeline: where its facts live and how they are latched, the ids and data of
// its jobs, how it is named, and how it ends. One implementation per kind (task.ts, job.ts, expire.ts) behind
// one table (index.ts); the steps themselves are the doctrine's (src/doctrine/chain.ts), one for every kind.
// A kind reads and latches its facts through deps.store, so a dry run's latches stay in memory (dry-run.ts).
import type { ChainFacts, ChainKind, ChainLatch, ChainStep } from '../../doctrine/chain.js';
import type { JudgeInput } from '../../doctrine/judge.js';
import type { Config } from '../../config.js';
import type { FleetSnapshot, SessionView } from '../../evidence/fleet.js';
import type { RosterRow } from '../../evidence/roster.js';
import type { ExpireFacts } from '../../doctrine/verdict.js';
import type { LatchBase, Task } from '../../tasks/tasks.js';
import type { ChainJobData } from '../../../queues/common.js';
import type { SessionExitJob } from '../../../queues/session-exit.js';
import type { Finished } from '../ask.js';
import type { PipelineDeps } from '../deps.js';

/** A chain's latched fields in one shape (a task file's names differ). */
export type ChainPatch = ChainLatch;

export interface Chain<R = { kind: string }> {
  ref: R;
  facts: ChainFacts;
  /** null: a task that is not terminal (no chain: an open task protects). */
  step: ChainStep | null;
  sessionId: string | null;
  /** A task chain's task. */
  task?: Task;
  /** A task chain's file as it was read: its latch starts from these bytes (LatchOptions.base). */
  base?: LatchBase;
  /** For logs: `task X`, `job X`. */
  name: string;
  /** What the one message says the session finished. */
  what: Finished;
}

/** The job that carries a step: a latch another writer holds puts it back to delayed. */
export interface StepJob {
  moveToDelayed(ts: number, token?: string): Promise<void>;
}

export interface ChainKindAdapter<R extends { kind: string }> {
  kind: R['kind'];
  /** Which steps its chain takes before its requests (the doctrine's CHAIN_SHAPES). */
  shape: ChainKind;

  /** Its chain from a chain job's data (task-terminal, exit-ask, exit-retry); null: another kind's. */
  refOf(d: ChainJobData): R | null;
  /** A chain job's data for it (a kind whose steps are chain jobs). */
  dataOf?(ref: R): ChainJobData;
  /** Its chain from an exit job's data; null: another kind's (or a person's exit). */
  exitRefOf(d: SessionExitJob): R | null;
  /** Exit job n's data. */
  exitData(ref: R, sessionId: string, n: number): SessionExitJob;
  /** Its jobs' ids (queues/): a kind without a release or an ask has none; one whose requests are not jobs, no retry. */
  ids: {
    release?(ref: R): string;
    ask?(ref: R): string;
    retry?(ref: R, n: number): string;
    exit(ref: R, sessionId: string, n: number): string;
  };

  /** The chain's key among a dry run's latches: `task/<id>`, `job/<short@start>`, `expire/<key>`. */
  key(ref: R): string;
  /** Its session-will-not-exit alarm's key (once per chain, ever). */
  alarmKey(ref: R): string;
  /** For logs: `task X`. */
  name(ref: R): string;
  /** The fields that name it in log and audit lines. */
  logged(ref: R): Record<string, string>;
  /** The task whose chain this is; null: an untasked session's. */
  taskId(ref: R): string | null;
  /** Whose chain it is, for `judge`: a task's, or an untasked session's (a job's, by its key). */
  judgeScope(ref: R): Pick<JudgeInput, 'taskId' | 'untasked' | 'jobKey'>;
  /** Its ask's claim in stateDir (src/store/ledger.ts claimAsk): one ask per chain, ever (a kind that asks). */
  askClaim?(ref: R): string;

  /** Its facts, through deps.store (a dry run's latches over the files'). A gone or invalid task file throws UnrecoverableError. */
  load(deps: PipelineDeps, ref: R): Promise<Chain<R>>;
  /** Latch these fields (set once; requests only grow), through deps.store; the chain after, and what changed. */
  latch(
    deps: PipelineDeps,
    c: Chain<R>,
    patch: ChainPatch,
    job?: StepJob,
    token?: string,
  ): Promise<{ chain: Chain<R>; applied: ChainPatch }>;
  /** Its session left by the exit path sunset took: exitedAt. */
  markExited(deps: PipelineDeps, ref: R, view?: SessionView): Promise<void>;
  /** Its session is found not running any more: the chain ends in exitedAt, never silently. */
  ended(deps: PipelineDeps, c: Chain<R>, view?: SessionView): Promise<void>;
  /** Exit job n finished and the session is still there: what moves the chain on (its next step, timed from `finishedAt`). */
  afterExit(deps: PipelineDeps, ref: R, o: { finishedAt: string; view?: SessionView; stillRunning: boolean }): Promise<void>;

  /**
   * What each reconcile pass does for it, on the pass's sweep (workers/reconcile.ts): begin the chains the sweep
   * shows should begin, and schedule the open ones' next steps again from their facts (after a Redis flush or a
   * lost job, D7). `wanted`: whether this config runs it at all (a pass sweeps only when some kind wants one).
   * Returns how many chains it scheduled. Absent: its chains begin elsewhere (a task's: from its file; an expire
   * chain's: from the expire scan).
   */
  reconcile?: {
    wanted(config: Config): boolean;
    pass(deps: PipelineDeps, snap: FleetSnapshot): Promise<number>;
  };

  /**
   * Whether a chain of this kind holds an untasked session, read by every sweep (synchronously, for each row): its
   * key among a dry run's latches (`key(ref)`) and its facts (with `lastExitFinishedAt` where its last exit job has
   * finished: src/store/ledger.ts exitFinishedAt). The verdict then judges the session on that chain, as it does a
   * finished Claude Code job's (evidence.held). Absent: the verdict knows its sessions another way (a task's file,
   * a job's state, the expire window).
   */
  holds?(config: Config, row: RosterRow, procStartMs: number | null): { key: string; facts: ExpireFacts } | null;
}
