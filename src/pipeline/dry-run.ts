// A dry run is a mode of the whole pipeline, not a flag on its workers: it takes every step the real run would
// take — release, the ask, each request, the give-up, expire — on a schedule of its own (its queues are named
// for `<host>.dry-run`, so they can never meet the real run's, and are removed when it ends), and latches each
// step here, in memory, instead of in the task file or stateDir. Each step is logged and audited as `would-…`.
// It writes nothing the real run reads: no task file, no ledger, no claim, no pin, no sample, no web token.
// It is the same pipeline handed another store (DryRunStore: latches in memory) and other acts (dryActs: each
// step said as would-…); nothing in the pipeline's code asks whether it is a dry run.
import type { Config } from '../config.js';
import { exitPathOf } from '../agents/index.js';
import { latchFacts, type ChainFacts, type ChainLatch } from '../doctrine/chain.js';
import type { ExpireFacts, TaskFacts } from '../doctrine/verdict.js';
import { dryRunAuditFile } from '../store/audit.js';
import type { Acts } from './acts.js';
import { latchChain, schedule } from './chains.js';
import { kindOf } from './chain-kinds/index.js';
import { latchExpire } from './chain-kinds/expire.js';
import type { ChainPatch } from './chain-kinds/types.js';
import { evidenceOf, type RunSet } from './deps.js';
import { decided } from './events.js';
import { enqueueExpireExit, previewExpireActs, wakeScanAt } from './expire.js';
import type { ChainStore } from './store.js';

export type DryLatch = ChainLatch & Pick<Partial<ChainFacts>, 'lastExitFinishedAt'>;

/** The queue host of a dry run: its schedule can never meet the real run's. */
export const dryRunHost = (host: string) => `${host}.dry-run`;

export class DryRunLatches {
  private readonly byChain = new Map<string, DryLatch>();

  /** Latch by the real rule (latchFacts): set once; requests only grow, their time with them (and their exit job is new). */
  latch(key: string, patch: DryLatch): DryLatch {
    const { next, applied }: { next: DryLatch; applied: DryLatch } = latchFacts(this.byChain.get(key) ?? {}, patch);
    if (applied.requests !== undefined) delete next.lastExitFinishedAt;
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
    for (const k of ['startedAt', 'askedAt', 'gaveUpAt', 'exitedAt', 'lastExitFinishedAt'] as const)
      if (d[k] && !out[k]) (out as Record<string, unknown>)[k] = d[k];
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

/** A dry run's store: its latches in memory, laid over the files' facts; the ledger is never read or written. */
export class DryRunStore implements ChainStore {
  readonly sweep: { dry: DryRunLatches };
  constructor(readonly latches = new DryRunLatches()) {
    this.sweep = { dry: latches };
  }
  task<T extends TaskFacts>(t: T): T {
    return this.latches.task(t);
  }
  facts<F extends ExpireFacts>(key: string, f: F): F {
    return this.latches.facts(key, f);
  }
  finishedAt(): undefined {
    return undefined;
  }
  async latch(key: string, patch: ChainPatch): Promise<ChainPatch> {
    return this.latches.latch(key, patch);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A dry run's acts: each step latched in its memory, said as would-… (and audited beside the real audit). */
export function dryActs(latches: DryRunLatches): Acts {
  const said = previewExpireActs(true);
  let pinWords: string | null = null;
  const expire: Acts['expire'] = {
    // in a dry-run pipeline the step goes on in its own schedule (`sunset expire --dry-run` only says it)
    async request(deps, x, n) {
      const action = await said.request(deps, x, n);
      await latchExpire(deps, x.ref, { requests: n, lastRequestAt: x.at });
      await enqueueExpireExit(deps, x.ref, n);
      return action;
    },
    async giveUp(deps, x) {
      const action = await said.giveUp(deps, x);
      await latchExpire(deps, x.ref, { gaveUpAt: x.at });
      return action;
    },
    // its exit jobs finish in its latches as they run: never one to enqueue again
    confirm: async () => undefined,
    wake: wakeScanAt,
  };
  return {
    // the whole chain, previewed: latched in the dry run's memory, then its next step on the dry run's schedule
    async release(deps, { chain: c }) {
      const task = c.task!;
      const cmd = deps.config.fleet.releaseCommand;
      const res = await latchChain(deps, c, { startedAt: iso(deps.now()) });
      decided(
        deps,
        'would-release',
        { taskId: task.id, sessionId: task.sessionId, releaseCommand: Boolean(cmd) },
        `would release task ${task.id}${cmd ? ` (running ${cmd[0]})` : ''}`,
      );
      await schedule(deps, res.chain);
      return { wouldRelease: true };
    },
    async ask(deps, { chain: c, view, log }) {
      const via = deps.config.fleet.askVia === 'auto' ? (view.evidence.socket ? 'socket' : 'inbox') : deps.config.fleet.askVia;
      const res = await latchChain(deps, c, { askedAt: iso(deps.now()) });
      decided(
        deps,
        'would-ask',
        { ...log, id: view.id, via, ...evidenceOf(view) },
        `would ask session ${view.label} (${c.name}) to wrap up, via ${via}`,
      );
      await schedule(deps, res.chain);
      return { wouldAsk: true };
    },
    async request(deps, { chain: c, view, log }, n) {
      const res = await latchChain(deps, c, { requests: n, lastRequestAt: iso(deps.now()) });
      decided(
        deps,
        'would-request',
        { ...log, id: view.id, ...evidenceOf(view) },
        `would request exit ${n}/${deps.config.maxExitRequests} of session ${view.label}`,
      );
      await schedule(deps, res.chain);
      return { wouldRequest: n };
    },
    async giveUp(deps, { chain: c, view, log }) {
      const res = await latchChain(deps, c, { gaveUpAt: iso(deps.now()) });
      decided(
        deps,
        'would-give-up',
        { ...log, id: view.id, ...evidenceOf(view) },
        `would give up on session ${view.label} and raise one session-will-not-exit alarm`,
      );
      await schedule(deps, res.chain);
      return { wouldGiveUp: true };
    },
    // it would call the session's own exit path; the dry run takes the likely outcome: it leaves
    async exit(deps, { ref, view, log }) {
      decided(
        deps,
        'would-exit',
        { ...log, id: view.id, kind: view.kind, ...evidenceOf(view) },
        `would ask session ${view.label} to leave by its own exit path (${exitPathOf(view)?.how ?? 'none known'})`,
      );
      const at = iso(deps.now());
      if (ref) latches.latch(kindOf(ref).key(ref), { exitedAt: at, lastExitFinishedAt: at });
      return { wouldExit: true };
    },
    sessionEnded(deps, fields, words) {
      decided(deps, 'would-end', fields, `would end: ${words}`);
    },
    expire,
    preview: expire,
    pins: {
      // a dry run never pins, nor remembers a pin as its own
      remember: () => undefined,
      async change(deps, { file, plan }) {
        // every sync would say the same again: said when it changes
        const words = `would pin ${plan.add.join(', ') || 'none'} and take back ${plan.remove.join(', ') || 'none'} in ${file}`;
        if (pinWords !== words) deps.log.info({ event: 'pins:would-change', add: plan.add, remove: plan.remove }, words);
        pinWords = words;
        return { ok: true, added: plan.add, removed: plan.remove };
      },
    },
  };
}

/** What a dry run is handed instead of the real run's: its own schedule, audit, store and acts. */
export function dryRun(config: Config): RunSet {
  const store = new DryRunStore();
  return {
    host: dryRunHost(config.host),
    auditFile: dryRunAuditFile(config.stateDir),
    store,
    acts: dryActs(store.latches),
    // a dry run sends nothing to a session, not even a request for idle notices (an interactive one shows it to its person)
    sends: false,
  };
}
