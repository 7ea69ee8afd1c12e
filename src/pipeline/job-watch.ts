// Claude Code's job files as events (fs.watch, inotify): a live background job's `jobs/<id>/state.json` is
// rewritten (by rename) whenever its state moves. When one does, the pipeline looks at once — a sweep on Claude
// Code's files, no roster call — instead of at the next reconcile, minutes away: a job that settled `done` starts
// its chain (fleet.jobChain), a job now waiting on a person is pinned against Claude Code's own reaper
// (fleet.pinProtected; under low memory that reaper acts within 60 s). The folders watched follow the sweeps:
// each live background job's, and `jobs/` itself (a new job's folder). A lost event only delays: reconcile
// derives the same again.
import { errorMessage } from '../errors.js';
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { FleetSnapshot } from '../evidence/fleet.js';
import { readJobState } from '../evidence/claude-code.js';
import type { PipelineDeps } from './deps.js';
import { beginJobChains } from './chain-kinds/job.js';
import { syncPins } from './pins.js';
import { Debounced } from './debounced.js';

export interface JobWatchOptions {
  jobsDir: string;
  log: Logger;
  /** What to do once the events of a moment have settled (a files sweep, then the chains and pins). */
  onChange: (jobIds: string[]) => Promise<void>;
  debounceMs?: number;
}

export class JobWatcher {
  private root: FSWatcher | null = null;
  private readonly folders = new Map<string, FSWatcher>();
  private readonly batch: Debounced;
  private closed = false;

  constructor(private readonly o: JobWatchOptions) {
    this.batch = new Debounced({
      debounceMs: o.debounceMs ?? 250,
      run: (ids) => o.onChange(ids),
      onError: (err) =>
        o.log.warn({ event: 'jobs-watch:failed', error: errorMessage(err) }, `a job's change could not be looked at: ${errorMessage(err)}`),
    });
  }

  start(): void {
    if (this.closed || this.root) return;
    try {
      this.root = watch(this.o.jobsDir, { persistent: false }, (_ev, name) => {
        // a new job's folder (or one removed): watch it from the next sweep on, and look now
        // (not the pins file, nor its lock: sunset writes those itself)
        if (name && !String(name).startsWith('.') && !String(name).startsWith('pins.json')) this.poke(String(name));
      });
      this.root.on('error', () => this.drop());
    } catch {
      this.root = null; // no jobs folder yet (no background session has run): the next sweep tries again
    }
  }

  /** Watch the folders of the live background jobs this sweep saw; stop watching the others. */
  follow(snap: FleetSnapshot): void {
    if (this.closed || !snap.roster.ok) return;
    if (!this.root) this.start();
    const live = new Set(snap.sessions.filter((s) => s.kind === 'background' && s.id !== null && s.live === true).map((s) => s.id!));
    for (const [id, w] of this.folders) {
      if (live.has(id)) continue;
      w.close();
      this.folders.delete(id);
    }
    for (const id of live) {
      if (this.folders.has(id) || id.includes('/') || id.startsWith('.')) continue;
      try {
        const w = watch(join(this.o.jobsDir, id), { persistent: false }, (_ev, name) => {
          if (name && String(name).startsWith('state.json')) this.poke(id);
        });
        w.on('error', () => {
          w.close();
          this.folders.delete(id);
        });
        this.folders.set(id, w);
      } catch {
        /* its folder is not there (yet): the next sweep tries again */
      }
    }
  }

  /** How many folders are watched (tests, the bench). */
  get watching(): number {
    return this.folders.size + (this.root ? 1 : 0);
  }

  private poke(id: string): void {
    if (!this.closed) this.batch.poke(id);
  }

  private drop(): void {
    this.root?.close();
    this.root = null;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.drop();
    for (const w of this.folders.values()) w.close();
    this.folders.clear();
    await this.batch.close();
  }
}

/**
 * `sunset up`'s job watcher, when Claude Code's files are read and a job chain or pins can follow from them: the
 * watched folders follow the pipeline's sweeps. Returns its close, or null when there is nothing to watch.
 */
export function startJobWatch(deps: PipelineDeps, log: Logger): (() => Promise<void>) | null {
  const f = deps.config.fleet;
  const claudeDir = f.claudeDir;
  if (claudeDir === null || !(f.jobChain || f.pinProtected) || !deps.fleet.onSweep) return null;
  // a working job rewrites its state.json often (each turn): only a move in what the chain and the pins read is worth a sweep
  const seen = new Map<string, string>();
  const moved = (id: string) => {
    const j = readJobState(claudeDir, id);
    const now = j ? `${j.state}|${j.tempo}|${j.inFlight === null ? '?' : j.inFlight > 0}` : 'unread';
    const was = seen.get(id);
    if (seen.size > 4096) seen.clear();
    seen.set(id, now);
    return was !== now;
  };
  const jw = new JobWatcher({
    jobsDir: join(claudeDir, 'jobs'),
    log,
    onChange: async (changed) => {
      const ids = changed.filter(moved);
      if (!ids.length) return;
      const snap = await deps.fleet(0, { tmux: 'if-needed' });
      if (!snap.roster.ok) return;
      const chains = f.jobChain ? await beginJobChains(deps, snap, new Set(ids)) : 0;
      if (f.pinProtected) await syncPins(deps, snap);
      log.debug({ event: 'jobs-watch:looked', jobs: ids, chains }, `job files changed (${ids.join(', ')}): looked`);
    },
  });
  jw.start();
  const stop = deps.fleet.onSweep((snap) => jw.follow(snap));
  return async () => {
    stop();
    await jw.close();
  };
}
