// The exit chain, every kind of it: what happens next, and when. One pure function over one shape of facts
// (DESIGN §5). A task's chain (release → grace → ask → request 1..max → give up), an untasked session's
// expire chain (request 1..max → give up, no ask), and a Claude Code job's chain (grace after the job settled
// done → ask → requests → give up) are the same steps; the verdict's `next`, the workers' due times, the
// planner, `cap`'s "on their way out", the web's step and timeline all come from here.
//
// Request n+1 (or the give-up) is due retryWait after exit job n *finished* — confirmed or timed out — never
// while it is still confirming; the first request askWait after the ask; the ask grace after the chain began.

/** The most exit requests a chain makes before it gives up: config's maxExitRequests may lower it, never raise it. */
export const MAX_EXIT_REQUESTS = 3;

interface ChainShape {
  /** It begins at a release (a task's loop is released first): until then its next step is the release. */
  releases: boolean;
  /** It asks (the one message) before its first request. */
  asks: boolean;
  /** What its request step is called in the verdict's `next` and `due`. */
  requestStep: 'request' | 'expire';
  /** "request n of max", in a person's words. */
  requestWords: string;
}

/**
 * The steps each kind of chain takes before its requests: a task's is released, then asked; a finished Claude
 * Code job's is asked; an untasked session's (expire) neither. A pipeline kind names its shape
 * (src/pipeline/chain-kinds/); a chain with new steps is one line here.
 */
export const CHAIN_SHAPES = {
  task: { releases: true, asks: true, requestStep: 'request', requestWords: 'request' },
  job: { releases: false, asks: true, requestStep: 'request', requestWords: 'request' },
  expire: { releases: false, asks: false, requestStep: 'expire', requestWords: 'expire request' },
} as const satisfies Record<string, ChainShape>;

export type ChainKind = keyof typeof CHAIN_SHAPES;

export interface ChainFacts {
  /** Its shape: which steps come before its requests (CHAIN_SHAPES). */
  kind: ChainKind;
  /** When the chain began: a task's releasedAt, a job's settling (the grace counts from it). Absent for expire, and for a task not yet released. */
  startedAt?: string;
  askedAt?: string;
  /** Exit requests made (latched), 0..max. */
  requests: number;
  lastRequestAt?: string;
  /** When exit job `requests` finished (from the exit ledger): the next step is timed from it. Absent while it confirms. */
  lastExitFinishedAt?: string;
  gaveUpAt?: string;
  exitedAt?: string;
}

export interface ChainPolicy {
  grace: number;
  askWait: number;
  retryWait: number;
  exitConfirm: number;
  maxExitRequests: number;
}

/** A chain's latched fields. */
export type ChainLatch = Partial<Pick<ChainFacts, 'startedAt' | 'askedAt' | 'requests' | 'lastRequestAt' | 'gaveUpAt' | 'exitedAt'>>;

/**
 * The latch rule (D8) for a chain's facts kept by sunset (stateDir, a dry run's memory; a task file's own
 * fields keep it in src/tasks/latch.ts): a time is set once and never changed; requests only grow, at most
 * `max`, lastRequestAt with them. Returns the facts after, and what this patch changed.
 */
export function latchFacts<F extends ChainLatch>(cur: F, patch: ChainLatch, max = MAX_EXIT_REQUESTS): { next: F; applied: ChainLatch } {
  const next: F = { ...cur };
  const applied: ChainLatch = {};
  for (const k of ['startedAt', 'askedAt', 'gaveUpAt', 'exitedAt'] as const) if (patch[k] && !cur[k]) next[k] = applied[k] = patch[k];
  if (patch.requests !== undefined && patch.requests > (cur.requests ?? 0)) {
    next.requests = applied.requests = Math.min(patch.requests, max);
    if (patch.lastRequestAt) next.lastRequestAt = applied.lastRequestAt = patch.lastRequestAt;
  }
  return { next, applied };
}

/** The chain's next step and when it is due (epoch ms); a step is due once now ≥ at. */
export type ChainStep =
  | { step: 'release' }
  | { step: 'ask'; at: number }
  | { step: 'request'; n: number; at: number }
  | { step: 'give-up'; at: number }
  /** exit job n is latched and has not finished: nothing more is due until it has; `by` is the latest it will */
  | { step: 'confirm'; n: number; by: number }
  | { step: 'end'; why: 'exited' | 'gave-up' };

const ms = (s: string | undefined) => (s ? Date.parse(s) : NaN);
const shape = (f: ChainFacts): ChainShape => CHAIN_SHAPES[f.kind];

/**
 * When request n+1 (or the give-up) falls due: retryWait after exit job n finished — or, given the latest it
 * will finish (a `confirm` step's `by`), the latest that step can fall due. The one rule for the retry timing.
 */
export function retryAt(finishedMs: number, p: Pick<ChainPolicy, 'retryWait'>): number {
  return finishedMs + p.retryWait;
}

export function chainStep(f: ChainFacts, p: ChainPolicy): ChainStep {
  if (f.exitedAt) return { step: 'end', why: 'exited' };
  if (f.gaveUpAt) return { step: 'end', why: 'gave-up' };
  const k = shape(f);
  if (k.releases && !f.startedAt) return { step: 'release' };
  const start = f.startedAt ? ms(f.startedAt) : 0;
  if (k.asks && !f.askedAt) return { step: 'ask', at: start + p.grace };
  const n = Math.min(f.requests, p.maxExitRequests);
  if (n === 0) return { step: 'request', n: 1, at: k.asks ? ms(f.askedAt) + p.askWait : start };
  if (!f.lastExitFinishedAt) return { step: 'confirm', n, by: ms(f.lastRequestAt) + p.exitConfirm };
  const at = retryAt(ms(f.lastExitFinishedAt), p);
  return n < p.maxExitRequests ? { step: 'request', n: n + 1, at } : { step: 'give-up', at };
}

/** Is the chain still open (not exited, not given up)? */
export function chainOpen(f: ChainFacts): boolean {
  return !f.exitedAt && !f.gaveUpAt;
}

/** On its way out: asked or requested, and not yet exited or given up (what `sunset cap` counts). */
export function leaving(f: ChainFacts): { step: 'asked' | 'requested'; requests: number; since: string | null } | null {
  if (!chainOpen(f)) return null;
  if (f.requests > 0) return { step: 'requested', requests: f.requests, since: f.lastRequestAt ?? f.askedAt ?? null };
  if (f.askedAt) return { step: 'asked', requests: 0, since: f.askedAt };
  return null;
}

/** Where a chain stands, in a person's words: released / asked / request n of max / exited / gave up. */
export function stepWords(f: ChainFacts | null, max: number): string {
  if (!f) return '';
  if (f.gaveUpAt) return 'gave up';
  if (f.exitedAt) return 'exited';
  const k = shape(f);
  if (f.requests) return `${k.requestWords} ${f.requests} of ${max}`;
  if (f.askedAt) return 'asked';
  if (k.releases) return f.startedAt ? 'released' : 'not yet released';
  return '';
}

export interface TimelineStep {
  label: string;
  at: string | null;
  done: boolean;
}

/** The chain's steps in order, with the ones still ahead. `requestAt(n)` gives request n's own time (the exit ledger), when known. */
export function timeline(f: ChainFacts, max: number, requestAt: (n: number) => string | undefined = () => undefined): TimelineStep[] {
  const steps: TimelineStep[] = [];
  const k = shape(f);
  if (k.releases) steps.push({ label: 'released', at: f.startedAt ?? null, done: Boolean(f.startedAt) });
  if (k.asks) steps.push({ label: 'asked', at: f.askedAt ?? null, done: Boolean(f.askedAt) });
  for (let n = 1; n <= max; n++) {
    const done = f.requests >= n;
    steps.push({ label: `request ${n}`, at: done ? (requestAt(n) ?? (n === f.requests ? (f.lastRequestAt ?? null) : null)) : null, done });
  }
  if (f.gaveUpAt) steps.push({ label: 'gave up', at: f.gaveUpAt, done: true });
  else steps.push({ label: 'exited', at: f.exitedAt ?? null, done: Boolean(f.exitedAt) });
  return steps;
}
