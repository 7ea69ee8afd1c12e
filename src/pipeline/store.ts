// Where a run's latches go and its chains' facts come from. The real run's store is the chains' own files (a task
// file, stateDir's job and expire chains) and the exit ledger; a dry run's keeps its latches in memory, over the
// files' facts, and writes nothing (src/pipeline/dry-run.ts). The same pipeline code is handed one or the other.
import type { TaskFacts, ExpireFacts } from '../doctrine/verdict.js';
import { exitFinishedAt } from '../store/ledger.js';
import type { ChainPatch } from './chain-kinds/types.js';
import type { DryRunLatches } from './dry-run.js';

export interface ChainStore {
  /** A task's facts as this run sees them: the file's (a dry run: with its latches over them). */
  task<T extends TaskFacts>(t: T): T;
  /** A stateDir chain's facts (a job's, expire's) as this run sees them, by the chain's key. */
  facts<F extends ExpireFacts>(key: string, f: F): F;
  /** When exit job `jobId` finished: the exit ledger's word (a dry run's exit jobs finish in its latches: none). */
  finishedAt(jobId: string): string | undefined;
  /**
   * Latch a chain's fields (set once; requests only grow): `write` puts them in the chain's own file (the real
   * run); a dry run keeps them in memory under the chain's key. Returns what changed.
   */
  latch(key: string, patch: ChainPatch, write: () => ChainPatch | Promise<ChainPatch>): Promise<ChainPatch>;
  /** What a sweep lays over the files' facts (a dry run: its latches; src/evidence/fleet.ts). */
  readonly sweep: { dry?: DryRunLatches };
}

/** The real run's store: the chains' files and the exit ledger in stateDir. */
export function fileStore(stateDir: string): ChainStore {
  return {
    task: (t) => t,
    facts: (_key, f) => f,
    finishedAt: (jobId) => exitFinishedAt(stateDir, jobId),
    latch: async (_key, _patch, write) => write(),
    sweep: {},
  };
}
