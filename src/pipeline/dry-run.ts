// A dry run is a mode of the whole pipeline, not a flag on its workers: it takes every step the real run would
// take — release, the ask, each request, the give-up, expire — on a schedule of its own (its queues are named
// for `<host>.dry-run`, so they can never meet the real run's, and are removed when it ends), and latches each
// step here, in memory, instead of in the task file or stateDir. Each step is logged and audited as `would-…`.
// It writes nothing the real run reads: no task file, no ledger, no claim, no pin, no sample, no web token.
import type { ChainFacts } from '../doctrine/chain.js';
import type { TaskFacts } from '../doctrine/verdict.js';

export type DryLatch = Partial<Pick<ChainFacts, 'startedAt' | 'askedAt' | 'requests' | 'lastRequestAt' | 'lastExitFinishedAt' | 'gaveUpAt' | 'exitedAt'>>;

/** The queue host of a dry run: its schedule can never meet the real run's. */
export const dryRunHost = (host: string) => `${host}.dry-run`;

export class DryRunLatches {
  private readonly byChain = new Map<string, DryLatch>();

  /** Latch by the real rules: set once; requests only grow, their time with them. */
  latch(key: string, patch: DryLatch): DryLatch {
    const cur = this.byChain.get(key) ?? {};
    const next: DryLatch = { ...cur };
    const applied: DryLatch = {};
    for (const k of ['startedAt', 'askedAt', 'gaveUpAt', 'exitedAt'] as const) if (patch[k] && !cur[k]) next[k] = applied[k] = patch[k];
    if (patch.requests !== undefined && patch.requests > (cur.requests ?? 0)) {
      next.requests = applied.requests = patch.requests;
      if (patch.lastRequestAt) next.lastRequestAt = applied.lastRequestAt = patch.lastRequestAt;
      delete next.lastExitFinishedAt;
    }
    if (patch.lastExitFinishedAt) next.lastExitFinishedAt = applied.lastExitFinishedAt = patch.lastExitFinishedAt;
    this.byChain.set(key, next);
    return applied;
  }

  get(key: string): DryLatch | undefined {
    return this.byChain.get(key);
  }

  /** A task's facts with the dry run's latches over them (what the sweep and the workers judge in a dry run). */
  task<T extends TaskFacts>(t: T): T {
    const d = this.byChain.get(`task/${t.id}`);
    if (!d) return t;
    return {
      ...t,
      ...(d.startedAt && !t.releasedAt ? { releasedAt: d.startedAt } : {}),
      ...(d.askedAt && !t.exitAskedAt ? { exitAskedAt: d.askedAt } : {}),
      ...(d.requests !== undefined && d.requests > t.exitRequests ? { exitRequests: d.requests, exitRequestedAt: d.lastRequestAt } : {}),
      ...(d.lastExitFinishedAt ? { lastExitFinishedAt: d.lastExitFinishedAt } : {}),
      ...(d.gaveUpAt && !t.exitGaveUpAt ? { exitGaveUpAt: d.gaveUpAt } : {}),
      ...(d.exitedAt && !t.exitedAt ? { exitedAt: d.exitedAt } : {}),
    };
  }

  /** A stateDir chain's facts (expire, a Claude Code job's) with the dry run's latches over them. */
  facts<F extends Omit<ChainFacts, 'kind'>>(key: string, f: F): F {
    const d = this.byChain.get(key);
    if (!d) return f;
    const out: F = { ...f };
    for (const k of ['startedAt', 'askedAt', 'gaveUpAt', 'exitedAt', 'lastExitFinishedAt'] as const) if (d[k] && !out[k]) (out as Record<string, unknown>)[k] = d[k];
    if (d.requests !== undefined && d.requests > out.requests) {
      out.requests = d.requests;
      if (d.lastRequestAt) out.lastRequestAt = d.lastRequestAt;
    }
    return out;
  }

  /** Every chain the dry run has moved, for the fleet page. */
  entries(): Array<[string, DryLatch]> {
    return [...this.byChain.entries()];
  }
}
