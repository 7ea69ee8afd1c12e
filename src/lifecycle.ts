// One lifecycle for a process's parts: each part registers its closer as it starts; close() runs them once,
// in reverse order of starting, each within a deadline (a part that does not close in time is left, and said,
// so one stuck part — an exit job confirming for a minute — cannot hold the rest), and all of them within an
// overall budget (a stop is bounded whatever Redis does: with Redis unreachable a BullMQ worker's close, even
// forced, waits on it for ever). close() is idempotent.
export interface Closer {
  name: string;
  close: () => Promise<unknown> | unknown;
  /** Called instead when close() runs past its deadline (e.g. a worker closed with force). */
  force?: () => Promise<unknown> | unknown;
}

export class Lifecycle {
  private readonly closers: Closer[] = [];
  private closing: Promise<string[]> | null = null;

  /** Register a part's closer (call right after the part has started). */
  add(name: string, close: Closer['close'], force?: Closer['force']): void {
    if (this.closing) throw new Error(`lifecycle: ${name} started after close()`);
    this.closers.push({ name, close, ...(force ? { force } : {}) });
  }

  get closed(): boolean {
    return this.closing !== null;
  }

  /**
   * Close every part, last started first. Each gets `deadlineMs`, and all of them together `totalMs`: one that
   * has not closed by then is forced (when it can be, within what is left of both) and left. Once the total is
   * spent, each remaining part's close is still called (what it does at once — clearing a timer, unlinking a
   * socket — is done) but not waited for. Resolves to the names of the parts that were forced, failed or left.
   */
  close(deadlineMs = 10_000, totalMs = Infinity): Promise<string[]> {
    return (this.closing ??= (async () => {
      const end = Date.now() + totalMs;
      const budget = () => Math.max(0, Math.min(deadlineMs, end - Date.now()));
      const late: string[] = [];
      for (const c of [...this.closers].reverse()) {
        let out = await bounded(c.close, budget());
        if (out === 'closed') continue;
        late.push(c.name);
        if (out === 'late' && c.force) out = await bounded(c.force, budget());
      }
      return late;
    })());
  }
}

/** Run `f` and wait for it at most `ms`: a part that closes at once (synchronously) counts as closed even at 0. */
async function bounded(f: () => unknown, ms: number): Promise<'closed' | 'failed' | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const done = Promise.resolve()
    .then(f)
    .then(
      () => 'closed' as const,
      () => 'failed' as const,
    );
  const out = await Promise.race([done, new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), ms)))]);
  clearTimeout(timer);
  return out;
}
