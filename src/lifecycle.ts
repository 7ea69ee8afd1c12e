// One lifecycle for a process's parts: each part registers its closer as it starts; close() runs them once,
// in reverse order of starting, each within a deadline (a part that does not close in time is left, and said,
// so one stuck part — an exit job confirming for a minute — cannot hold the rest). close() is idempotent.
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
   * Close every part, last started first. Each gets `deadlineMs`; one that has not closed by then is forced
   * (when it can be) and left. Resolves to the names of the parts that were forced or failed.
   */
  close(deadlineMs = 10_000): Promise<string[]> {
    return (this.closing ??= (async () => {
      const late: string[] = [];
      for (const c of [...this.closers].reverse()) {
        let timer: NodeJS.Timeout | undefined;
        const done = Promise.resolve()
          .then(() => c.close())
          .then(
            () => 'closed' as const,
            () => 'failed' as const,
          );
        const out = await Promise.race([done, new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), deadlineMs)))]);
        clearTimeout(timer);
        if (out === 'closed') continue;
        late.push(c.name);
        if (out === 'late' && c.force) await Promise.resolve().then(() => c.force!()).catch(() => undefined);
      }
      return late;
    })());
  }
}
