// Ctrl-C (SIGINT) and SIGTERM for a command that has something to clean up on its way out (`sunset demo`,
// `sunset up`, `sunset admit --wait`). The first signal starts the cleanup; a later one, or one that finds the
// command already cleaning up, is told so and the cleanup goes on: a second Ctrl-C never leaves half of it.
// The whole of it is bounded: `boundMs` after the first signal the process exits with what it has, so neither a
// person at a terminal nor systemd's TimeoutStopSec waits on something that will not close (a Redis that does
// not answer). The handlers stay until the process exits: with a child in flight, execa's signal-exit re-raises
// a signal no other listener is left to handle, which would end the process half-way through its cleanup.

/** How long a command may take to clean up after the first Ctrl-C or SIGTERM. */
export const STOP_BOUND_MS = 10_000;

/** Ctrl-C's signal (interrupt), or the one `kill PID` and systemd send (terminate). */
export type StopSignal = 'interrupt' | 'terminate';

/** The exit code of a command ended by a signal it handled: 128 + the signal's number (the shell's convention). */
export const SIGNAL_CODE: Record<StopSignal, number> = { interrupt: 130, terminate: 143 };

export interface StopEvent {
  signal: StopSignal;
  /** The first signal's exit code (130 or 143), kept whatever comes after. */
  code: number;
  /** This is the first signal. */
  first: boolean;
  /** The command was already cleaning up when it came (a later signal, or its own end under way). */
  cleaning: boolean;
  /** Milliseconds left of the bound. */
  leftMs: number;
}

export interface StopSignals {
  /** The first signal's exit code, or null while none has come. */
  readonly code: number | null;
  /** Resolves with that code at the first signal. */
  readonly signalled: Promise<number>;
  /** From now on a signal finds the command cleaning up (say so, go on). */
  cleaning(): void;
  /** Milliseconds left of the bound (Infinity before a signal). */
  leftMs(): number;
}

export interface StopOptions {
  /** Said at each signal (the first included). */
  on: (e: StopEvent) => void;
  boundMs?: number;
  /** At the bound, with the cleanup not done: default process.exit(code). */
  atBound?: (code: number) => void;
}

export function catchStopSignals(o: StopOptions): StopSignals {
  const now = Date.now;
  const boundMs = o.boundMs ?? STOP_BOUND_MS;
  let code: number | null = null;
  let cleaning = false;
  let until = Infinity;
  let resolve!: (code: number) => void;
  const signalled = new Promise<number>((r) => (resolve = r));
  const handle = (signal: StopSignal) => {
    const first = code === null;
    if (first) {
      code = SIGNAL_CODE[signal];
      until = now() + boundMs;
      // unref: a cleanup that ends on time lets the process end by itself
      setTimeout(() => (o.atBound ?? ((c: number) => process.exit(c)))(code!), boundMs).unref();
    }
    o.on({ signal, code: code!, first, cleaning, leftMs: Math.max(0, until - now()) });
    if (first) {
      resolve(code!);
      cleaning = true;
    }
  };
  process.on('SIGINT', () => handle('interrupt'));
  process.on('SIGTERM', () => handle('terminate'));
  return {
    get code() {
      return code;
    },
    signalled,
    cleaning: () => void (cleaning = true),
    leftMs: () => Math.max(0, until - now()),
  };
}

/** The seconds left, as a person reads them ("at most 7 s more"). */
export function secondsLeft(ms: number): string {
  return `at most ${Math.max(1, Math.ceil(ms / 1000))} s more`;
}

/** `p`, or `fallback` if it fails or once `ms` have passed (the step is left running: what it holds goes with the process). */
export function within<T, F = T>(ms: number, p: Promise<T>, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((r) => (timer = setTimeout(() => r(fallback), Math.max(0, ms))));
  return Promise.race<T | F>([p.catch(() => fallback), late]).finally(() => clearTimeout(timer));
}
