// Claude Code's session files as events (fs.watch, inotify): each live claude process keeps
// `~/.claude/sessions/<pid>.json`, with its `status` (idle, busy, waiting), and the file goes when the process ends.
// A chain job deferred because its session was busy waits for the session to go idle; when its file says it did,
// or the file goes, the job is promoted and judged again on a fresh sweep (IdleNotices.moved) — at once, not at its
// recheck. The messaging socket's idle notice says the same for a session that offers it; this covers one that
// does not, or a notice that never came. A wrong guess costs one look; a lost event only leaves the job at its
// recheck. One watch on the folder; each changed file is read once (the evidence's stat-keyed cache).
import { errorMessage } from '../errors.js';
import { watch, readdirSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { jsonObject } from '../evidence/claude-code.js';
import { readCachedText } from '../evidence/file-cache.js';
import type { IdleNotices } from './idle-notices.js';
import { Debounced } from './debounced.js';

/** What a session file says, as far as a wake is concerned. */
interface Seen {
  sessionId: string | null;
  status: string | null;
}

const SESSION_FILE = /^\d+\.json$/;

function readSeen(file: string): Seen | null {
  const r = readCachedText(file);
  if (!r.ok) return r.missing ? null : { sessionId: null, status: null };
  const o = jsonObject(r.text);
  return {
    sessionId: typeof o?.sessionId === 'string' && o.sessionId ? o.sessionId : null,
    status: typeof o?.status === 'string' ? o.status : null,
  };
}

export interface SessionWatchOptions {
  sessionsDir: string;
  idle: Pick<IdleNotices, 'moved'>;
  log: Logger;
  debounceMs?: number;
}

export class SessionWatcher {
  private w: FSWatcher | null = null;
  private retry: NodeJS.Timeout | null = null;
  private readonly last = new Map<string, Seen>();
  private readonly batch: Debounced;
  private closed = false;

  constructor(private readonly o: SessionWatchOptions) {
    this.batch = new Debounced({
      debounceMs: o.debounceMs ?? 100,
      run: (names) => this.look(names),
      onError: (err) =>
        o.log.warn(
          { event: 'sessions-watch:failed', error: errorMessage(err) },
          `a session file's change could not be looked at: ${errorMessage(err)}`,
        ),
    });
  }

  start(): void {
    if (this.closed || this.w) return;
    try {
      this.w = watch(this.o.sessionsDir, { persistent: false }, (_ev, name) => {
        if (name && SESSION_FILE.test(String(name))) this.poke(String(name));
      });
      this.w.on('error', () => this.again());
    } catch {
      this.again(); // no sessions folder yet (no claude has run here): look again in five minutes
      return;
    }
    // what each file says now: a move is a change from this
    let names: string[] = [];
    try {
      names = readdirSync(this.o.sessionsDir).filter((n) => SESSION_FILE.test(n));
    } catch {
      /* gone again: the watch's error follows */
    }
    for (const n of names) {
      const seen = readSeen(join(this.o.sessionsDir, n));
      if (seen) this.last.set(n, seen);
    }
  }

  private again() {
    this.w?.close();
    this.w = null;
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.start();
    }, 300_000);
    this.retry.unref();
  }

  private poke(name: string) {
    if (!this.closed) this.batch.poke(name);
  }

  private async look(names: string[]): Promise<void> {
    for (const name of names) {
      const was = this.last.get(name);
      const now = readSeen(join(this.o.sessionsDir, name));
      if (now) this.last.set(name, now);
      else this.last.delete(name);
      if (!now) {
        // the process ended (or its file was removed): whoever waited on its turn looks again
        if (was?.sessionId) await this.o.idle.moved(was.sessionId, 'exited');
        continue;
      }
      if (now.sessionId && now.status === 'idle' && was?.status !== 'idle') await this.o.idle.moved(now.sessionId, 'idle');
    }
  }

  /** How many session files it knows (tests). */
  get known(): number {
    return this.last.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.w?.close();
    this.w = null;
    await this.batch.close();
  }
}

/** `sunset up`'s session watcher, when Claude Code's files are read and idle notices are on. Returns its close, or null. */
export function startSessionWatch(claudeDir: string | null, idle: IdleNotices | null, log: Logger): (() => Promise<void>) | null {
  if (claudeDir === null || idle === null) return null;
  const sw = new SessionWatcher({ sessionsDir: join(claudeDir, 'sessions'), idle, log });
  sw.start();
  return () => sw.close();
}
