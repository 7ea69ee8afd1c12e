// Changes gathered for a moment, then handled together, one batch at a time (a change that comes during a batch
// waits for the next). The file watchers of Claude Code's job and session files share it.

export interface DebouncedOptions {
  debounceMs: number;
  /** Handle one batch of changed keys. */
  run: (keys: string[]) => Promise<void>;
  /** A batch that failed (the watcher says so; a lost change only waits for the next sweep). */
  onError: (err: unknown) => void;
}

export class Debounced {
  private readonly changed = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly o: DebouncedOptions) {}

  poke(key: string): void {
    this.changed.add(key);
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.o.debounceMs);
    this.timer.unref();
  }

  private async flush(): Promise<void> {
    if (this.closed) return;
    // one batch at a time; changes meanwhile wait for the next
    if (this.running) {
      await this.running;
      if (this.changed.size && !this.timer) this.poke([...this.changed][0]);
      return;
    }
    const keys = [...this.changed];
    this.changed.clear();
    this.running = this.o
      .run(keys)
      .catch((err) => this.o.onError(err))
      .finally(() => {
        this.running = null;
      });
    await this.running;
  }

  /** No batch after this one; resolves when the one running (if any) is done. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
