// What comes next for a session, in the verdict's words: an eligible session's `next` and any live session's
// `due` (DESIGN §4). Both come from the chain's own step (src/doctrine/chain.ts) and the reasons' rules.
import { CHAIN_SHAPES, chainStep, retryAt, type ChainFacts, type ChainPolicy } from './chain.js';
import { PERMANENT, type Reason } from './reasons.js';
import type { Policy } from './verdict.js';

export type Step = 'ask' | 'request' | 'wait' | 'give-up' | 'expire';
export interface Next {
  step: Step;
  n?: number;
  at?: string;
}

/** When the next step is due and what it waits for — for every live session, protected ones too. */
export interface Due {
  step?: Step;
  n?: number;
  /** When the chain's next step falls due (absent: due now, or when the protections pass). */
  at?: string;
  /** The protections that pass on their own (re-checked every recheckMs; the grace ends by itself). */
  waitsFor: Reason[];
  /** false: a protection that never passes by itself (a person decides: awaiting-human, gave-up, resumed; or no exit path). */
  passes: boolean;
  recheckMs?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * When a protected session's next step is due and what it waits for: the chain's own due time (the grace's
 * end, askWait after the ask, retryWait after the last exit finished), the protections that pass on their own
 * (looked at again every `recheck`), and whether any will never pass by itself (a person decides).
 */
export function dueOf(reasons: Reason[], chain: ChainFacts | null, policy: Policy, now: number, silenceMs: number | null = null): Due {
  const waitsFor = reasons.filter((r) => !PERMANENT.has(r));
  const passes = reasons.every((r) => !PERMANENT.has(r));
  const out: Due = { waitsFor, passes };
  if (chain) {
    const s = chainStep(chain, policy);
    if (s.step === 'ask' || s.step === 'request' || s.step === 'give-up') {
      out.step = s.step === 'request' ? CHAIN_SHAPES[chain.kind].requestStep : s.step;
      if (s.step === 'request') out.n = s.n;
      if (s.at > now) out.at = iso(s.at);
    } else if (s.step === 'confirm') {
      out.step = 'wait';
      out.at = iso(retryAt(s.by, policy));
    }
  }
  // an untasked session: its expire window ends expireIdle after its last transcript write
  if (reasons.includes('idle-short')) {
    out.step = 'expire';
    if (silenceMs !== null) out.at = iso(now - silenceMs + policy.expireIdle);
  }
  if (waitsFor.some((r) => r !== 'grace-pending' && r !== 'idle-short')) out.recheckMs = policy.recheck;
  return out;
}

/**
 * The public `next` of an eligible session, from its chain: the step due now, or `wait` until `at` — the
 * moment the step fires (while exit job n confirms: the latest it will, exitConfirm + retryWait after request n).
 */
export function nextOf(f: ChainFacts, policy: ChainPolicy, now: number): Next | null {
  const s = chainStep(f, policy);
  const max = policy.maxExitRequests;
  switch (s.step) {
    case 'ask':
      return now >= s.at ? { step: 'ask' } : { step: 'wait', at: iso(s.at) };
    case 'request':
      if (now >= s.at) return { step: CHAIN_SHAPES[f.kind].requestStep, n: s.n };
      return { step: 'wait', n: s.n, at: iso(s.at) };
    case 'give-up':
      return now >= s.at ? { step: 'give-up' } : { step: 'wait', at: iso(s.at) };
    case 'confirm':
      return { step: 'wait', ...(s.n < max ? { n: s.n + 1 } : {}), at: iso(retryAt(s.by, policy)) };
    default:
      return null; // not released, or ended: the verdict protects those (not-released, resumed, gave-up)
  }
}
