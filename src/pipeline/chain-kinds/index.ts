// The table of chain kinds (table.ts, one line each) and what the pipeline asks of it: which kind a job's data
// names, and that kind's adapter. Nothing else in the pipeline asks which kind it holds.
import type { ChainJobData } from '../../../queues/common.js';
import type { SessionExitJob } from '../../../queues/session-exit.js';
import type { ChainKindAdapter } from './types.js';
import type { Config } from '../../config.js';
import type { GatherOptions } from '../../evidence/fleet.js';
import { expireFactsReader } from '../../store/expire-state.js';
import * as CHAIN_KINDS from './table.js';

export { CHAIN_KINDS };

type Kinds = typeof CHAIN_KINDS;
/** Any chain's ref: which kind, and what names the chain within it. */
export type ChainRef = { [K in keyof Kinds]: Kinds[K] extends ChainKindAdapter<infer R> ? R : never }[keyof Kinds];

// read at first use, not as this module loads: a kind's module may still be loading then (it imports the
// pipeline, which imports this)
let byKind: ReadonlyMap<string, ChainKindAdapter<ChainRef>> | null = null;
const kinds = () => (byKind ??= new Map(Object.entries(CHAIN_KINDS) as Array<[string, ChainKindAdapter<ChainRef>]>));

/** The adapter of a chain's kind. */
export function kindOf(ref: ChainRef): ChainKindAdapter<ChainRef> {
  return kinds().get(ref.kind)!;
}

/** The chain a chain job's data names (its schema makes it name exactly one). */
export function refOf(d: ChainJobData): ChainRef {
  for (const k of kinds().values()) {
    const ref = k.refOf(d);
    if (ref) return ref;
  }
  throw new Error(`a chain job names no chain: ${JSON.stringify(d)}`);
}

/** What a sweep reads of the chains that hold untasked sessions: expire's, and each kind's that `holds` one. */
export function chainReaders(config: Config): Pick<GatherOptions, 'expireFacts' | 'chainHolds'> {
  const holds = chainHolds(config);
  return { expireFacts: expireFactsReader(config.stateDir), ...(holds ? { chainHolds: holds } : {}) };
}

/**
 * The sweep's reader of the chains of other kinds that hold untasked sessions (each kind's `holds`), for
 * GatherOptions.chainHolds; undefined when no kind has one (the sweep then reads nothing for it).
 */
function chainHolds(config: Config): GatherOptions['chainHolds'] {
  const holders = [...kinds().values()].filter((k) => k.holds);
  if (!holders.length) return undefined;
  return (row, start) => {
    for (const k of holders) {
      const h = k.holds!(config, row, start);
      if (h) return { kind: k.kind, shape: k.shape, ...h };
    }
    return null;
  };
}

/** The chain an exit job belongs to; null: a person's exit, which has none. */
export function exitRefOf(d: SessionExitJob): ChainRef | null {
  for (const k of kinds().values()) {
    const ref = k.exitRefOf(d);
    if (ref) return ref;
  }
  return null;
}
