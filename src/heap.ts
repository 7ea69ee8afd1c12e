// Giving a big sweep's memory back once it is over. A sweep of a big fleet (the census: 2,300 rows, 10,000 tasks)
// lives long enough to be promoted to V8's old generation; once its snapshot is let go, that is garbage a full GC
// frees, but at rest nothing allocates enough to cause one (and V8's memory reducer starts only after one), so the
// heap kept its ~7 MB for as long as sunset rested. One full GC then (~30 ms on the census fleet's heap) frees it,
// and the memory reducer that follows gives the pages back. The `sunset` command's node options expose `gc`
// (--expose-gc: src/cli.ts line 1, src/cli/service.ts); run otherwise, nothing is done.
/** At most one full GC this often: a fleet swept again and again (asks due) is not at rest. */
export const GC_EVERY_MS = 60_000;
/** A snapshot of at least this many rows and tasks together is a big one. */
export const BIG_SWEEP = 2_000;

let lastAt = -Infinity;

/** One full GC, when node exposes it and none ran in the last GC_EVERY_MS; whether it ran. */
export function collectGarbage(now = Date.now()): boolean {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function' || now - lastAt < GC_EVERY_MS) return false;
  lastAt = now;
  (gc as () => void)();
  return true;
}
