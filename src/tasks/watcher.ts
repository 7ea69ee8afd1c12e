// The task-folder watcher: fs events (inotify), debounced per file, robust to tools that write by rename.
// Any event on <id>.json re-reads that task and enqueues its next step; events caused by sunset's own
// writes are ignored. A lost event only delays a step: the reconcile pass derives it again.
import * as fs from 'node:fs';
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { readTaskFile, type TaskRead } from './tasks.js';
import { errorCode, errorMessage } from '../errors.js';

export interface WatcherOptions {
  dir: string;
  debounceMs?: number;
  log: Logger;
  /** The file's bytes are one of sunset's own writes (its latches): not a change to act on. */
  isOwnWrite: (file: string, bytes: Buffer) => boolean;
  /** The file, by a stat of it, is still the one sunset last wrote there (checked first: a stat, not a read). */
  isOwnStat?: (file: string, st: fs.Stats) => boolean;
  /** `read`: what the watcher read to tell an own write from another's — the handler may use it rather than read the file again. */
  onTask: (taskId: string, read: TaskRead) => Promise<void>;
}

function statIfThere(file: string): fs.Stats | null {
  try {
    return fs.statSync(file, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

export class TaskWatcher {
  private w: FSWatcher | null = null;
  private timers = new Map<string, NodeJS.Timeout>();
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private inflight = new Set<Promise<void>>();

  constructor(private readonly o: WatcherOptions) {}

  start(): void {
    if (this.closed) return;
    try {
      this.w = watch(this.o.dir, { persistent: false }, (_ev, name) => {
        if (name) this.poke(String(name));
      });
      this.w.on('error', (err) => {
        this.o.log.warn({ event: 'watcher:error', dir: this.o.dir, error: err.message }, 'task watcher failed; re-watching');
        this.restart();
      });
      this.o.log.debug({ event: 'watcher:started', dir: this.o.dir });
    } catch (err) {
      // the folder may not exist yet: look again soon (reconcile covers the gap)
      this.o.log.debug({ event: 'watcher:waiting', dir: this.o.dir, error: errorCode(err) ?? errorMessage(err) });
      this.restart();
    }
  }

  private restart() {
    this.w?.close();
    this.w = null;
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.start();
    }, 1000);
    this.retry.unref();
  }

  private poke(name: string) {
    if (!name.endsWith('.json') || name.startsWith('.')) return;
    const prev = this.timers.get(name);
    if (prev) clearTimeout(prev);
    this.timers.set(
      name,
      setTimeout(() => {
        this.timers.delete(name);
        const p = this.handle(name).finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }, this.o.debounceMs ?? 15),
    );
  }

  private async handle(name: string) {
    const file = join(this.o.dir, name);
    try {
      // one synchronous read (a small file): the thread pool's four round trips cost more, and it is
      // busy with the latches' creates and fsyncs during a burst
      // and an own write is told by a stat of the file, else by its bytes, before they are judged
      if (this.o.isOwnStat) {
        const st = statIfThere(file);
        if (st === null || this.o.isOwnStat(file, st)) return;
      }
      const r = readTaskFile(file, (bytes) => this.o.isOwnWrite(file, bytes));
      if (r === null || r === 'own') return;
      await this.o.onTask(name.slice(0, -'.json'.length), r.read);
    } catch (err) {
      this.o.log.warn({ event: 'watcher:handle-failed', file, error: errorMessage(err) }, `could not handle a change to ${name}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.w?.close();
    if (this.retry) clearTimeout(this.retry);
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inflight]);
  }
}
