// Events instead of polls, where the client offers them (docs/claude-code.md, "Idle notices"). A chain job
// deferred because its session is busy asks the session, over its messaging socket, to say when it next goes
// idle or exits (Claude Code's `notify_when_idle`, peerFeatures "notify_idle"); when the notice comes, the
// deferred job is promoted and judged again on a sweep taken after it, instead of at the next recheck. Polling
// stays the fallback: a notice that never comes only leaves the job where it was.
//
// The protocol, measured on 2.1.328 (docs/real-cli-notes.md): we listen on `<the target's socket folder>/
// sunset-<pid>-<hex>.sock` and send, from this same process (the target checks who listens), the line
// {"type":"control","action":"notify_when_idle","from":"uds:<ours>","msg_id":<uuid>}. The target answers
// once, by connecting to us and writing {"action":"peer_idle_notice","orig_msg_id":…,"state":"idle"|"exited"}.
// A second request from us to the same target replaces the first, so each target has one pending request,
// which every job waiting on that session shares.
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../log.js';
import type { SessionView } from '../evidence/fleet.js';
import { sendLines } from './socket.js';
import { errorMessage } from '../errors.js';

/** A deferred job to promote when its session says it is idle or has exited. */
export interface Wake {
  queue: 'ask' | 'retry' | 'exit';
  jobId: string;
}

/** Protections that end when the session's turn ends: worth a notice. (A shell in flight does not hold idle.) */
const ENDS_WITH_THE_TURN = new Set<string>(['status-busy', 'status-waiting', 'hook-busy', 'hook-waiting', 'hook-disagrees', 'job-working']);

/** Below this, a target that just said idle is not asked again at once (its roster may lag its notice by a moment). */
const REASK_AFTER_MS = 2_000;
/** A notice's line is short; anything longer is not one. */
const MAX_LINE = 64 * 1024;

interface Pending {
  msgId: string;
  sessionId: string;
  wakes: Map<string, Wake>;
}

export interface IdleNoticeDeps {
  log: Logger;
  /** Promote a deferred job (nothing when it is not delayed any more). */
  promote: (w: Wake) => Promise<boolean>;
  timeoutMs: number;
}

export class IdleNotices {
  private readonly listeners = new Map<string, Promise<{ server: Server; path: string } | null>>();
  /** target socket path → its one pending request */
  private readonly pending = new Map<string, Pending>();
  private readonly byMsg = new Map<string, string>();
  /** sessionId → when its last notice came, and what it said */
  private readonly said = new Map<string, { at: number; state: string }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** sessionId → the deferred jobs a move of its session file may end (a session's sessions/<pid>.json: session-watch.ts) */
  private readonly byFile = new Map<string, Map<string, Wake>>();
  private closed = false;

  constructor(private readonly d: IdleNoticeDeps) {}

  /** Would a notice from this session end what protects it? (A socket that offers notices, a turn under way.) */
  static worthIt(view: SessionView | undefined): view is SessionView & { evidence: { socket: string } } {
    if (!view?.evidence.socket || !view.evidence.notifyIdle || view.due?.passes === false) return false;
    return view.reasons.some((r) => ENDS_WITH_THE_TURN.has(r));
  }

  /** When the session last said it was idle or had exited (a sweep before that cannot tell what it said). */
  noticeAt(sessionId: string): number | undefined {
    return this.said.get(sessionId)?.at;
  }

  /** The session said it exited (a job promoted early by it may end its chain before its step's time). */
  saidExited(sessionId: string): boolean {
    return this.said.get(sessionId)?.state === 'exited';
  }

  /**
   * Ask the session to say when it next goes idle or exits, and promote `wake` then. Never throws. A busy
   * session's job is also promoted when its session file says it went idle or the file goes (session-watch.ts):
   * the fallback for a session that offers no notices, and a second chance for one that does.
   */
  watch(view: SessionView | undefined, wake: Wake, why: 'busy' | 'confirm' = 'busy'): void {
    if (this.closed || !view) return;
    if (why === 'busy' && view.due?.passes !== false && view.reasons.some((r) => ENDS_WITH_THE_TURN.has(r)))
      this.onFileMove(view.sessionId, wake);
    if (!view.evidence.socket || !view.evidence.notifyIdle) return;
    if (why === 'busy' && !IdleNotices.worthIt(view)) return;
    const target = view.evidence.socket;
    const p = this.pending.get(target);
    if (p) {
      p.wakes.set(`${wake.queue}/${wake.jobId}`, wake); // the request already out serves this job too
      return;
    }
    const entry: Pending = { msgId: randomUUID(), sessionId: view.sessionId, wakes: new Map([[`${wake.queue}/${wake.jobId}`, wake]]) };
    this.pending.set(target, entry);
    this.byMsg.set(entry.msgId, target);
    const last = this.said.get(view.sessionId);
    const wait = last && last.state === 'idle' ? Math.max(0, last.at + REASK_AFTER_MS - Date.now()) : 0;
    const send = () => void this.send(target, entry);
    if (wait === 0) {
      send();
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      send();
    }, wait);
    t.unref();
    this.timers.add(t);
  }

  private onFileMove(sessionId: string, wake: Wake) {
    let w = this.byFile.get(sessionId);
    if (!w) {
      if (this.byFile.size >= 10_000) this.byFile.delete(this.byFile.keys().next().value!);
      this.byFile.set(sessionId, (w = new Map()));
    }
    w.set(`${wake.queue}/${wake.jobId}`, wake);
  }

  /** How many sessions have jobs waiting on a move of their session file (session-watch.ts: worth watching). */
  get waitingOnFiles(): number {
    return this.byFile.size;
  }

  /**
   * The session's file says it went idle, or is gone (its process ended): promote every job waiting on it, as a
   * notice would. A wrong guess costs one look: the job is judged again on a sweep taken after this.
   */
  async moved(sessionId: string, state: 'idle' | 'exited'): Promise<string[]> {
    const wakes = new Map(this.byFile.get(sessionId));
    this.byFile.delete(sessionId);
    for (const entry of this.pending.values()) {
      if (entry.sessionId !== sessionId) continue;
      for (const [k, w] of entry.wakes) wakes.set(k, w);
    }
    if (!wakes.size) return [];
    this.said.set(sessionId, { at: Date.now(), state });
    if (this.said.size > 10_000) this.said.delete(this.said.keys().next().value!);
    const woke: string[] = [];
    for (const w of wakes.values()) if (await this.d.promote(w).catch(() => false)) woke.push(w.jobId);
    this.d.log.info(
      { event: 'idle:file-moved', sessionId, state, woke },
      `session ${sessionId}'s file says it is ${state === 'exited' ? 'gone' : state}: ${woke.length ? `looking again now (${woke.join(', ')})` : 'nothing was waiting on it'}`,
    );
    return woke;
  }

  private async send(target: string, entry: Pending): Promise<void> {
    if (this.closed || this.pending.get(target) !== entry) return;
    const l = await this.listener(dirname(target));
    if (!l) return this.forget(target, entry);
    const line = `${JSON.stringify({ type: 'control', action: 'notify_when_idle', from: `uds:${l.path}`, msg_id: entry.msgId })}\n`;
    try {
      await sendLines(target, line, this.d.timeoutMs);
      this.d.log.debug(
        { event: 'idle:asked', sessionId: entry.sessionId, socket: target, jobs: [...entry.wakes.keys()] },
        `asked session ${entry.sessionId} to say when it is next idle`,
      );
    } catch (err) {
      // no notice will come: the jobs stay deferred to their recheck (the fallback)
      this.d.log.debug(
        { event: 'idle:not-asked', sessionId: entry.sessionId, error: errorMessage(err) },
        `could not ask session ${entry.sessionId} for an idle notice: ${errorMessage(err)}`,
      );
      this.forget(target, entry);
    }
  }

  private forget(target: string, entry: Pending) {
    if (this.pending.get(target) === entry) this.pending.delete(target);
    this.byMsg.delete(entry.msgId);
  }

  /** One listening socket per socket folder, opened on first use (null: it cannot be opened; polling goes on). */
  private listener(dir: string) {
    let l = this.listeners.get(dir);
    if (!l) {
      const path = join(dir, `sunset-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
      l = new Promise((resolve) => {
        const server = createServer((s) => this.accept(s));
        server.once('error', (err) => {
          this.d.log.warn(
            { event: 'idle:listen-failed', path, error: err.message },
            `cannot listen for idle notices at ${path} (${err.message}); busy sessions are looked at again at each recheck`,
          );
          resolve(null);
        });
        server.listen(path, () => {
          server.unref();
          resolve({ server, path });
        });
      });
      this.listeners.set(dir, l);
    }
    return l;
  }

  private accept(s: Socket) {
    let buf = '';
    s.setEncoding('utf8');
    s.on('error', () => undefined);
    s.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > MAX_LINE) return s.destroy();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 1);
        void this.onLine(raw);
      }
    });
    s.on('end', () => {
      if (buf.trim()) void this.onLine(buf);
      buf = '';
    });
  }

  private async onLine(raw: string) {
    let m: { action?: unknown; orig_msg_id?: unknown; state?: unknown; [k: string]: unknown } | null;
    try {
      m = JSON.parse(raw);
    } catch {
      return;
    }
    if (m?.action !== 'peer_idle_notice' || typeof m.orig_msg_id !== 'string') return;
    const target = this.byMsg.get(m.orig_msg_id);
    const entry = target ? this.pending.get(target) : undefined;
    if (!target || !entry || entry.msgId !== m.orig_msg_id) return; // not ours, or an answer already taken
    this.forget(target, entry);
    this.byFile.delete(entry.sessionId); // promoted below, or already: what the file would say adds nothing
    const state = m.state === 'exited' ? 'exited' : m.state === 'idle' ? 'idle' : 'unknown';
    this.said.set(entry.sessionId, { at: Date.now(), state });
    if (this.said.size > 10_000) this.said.delete(this.said.keys().next().value!);
    const woke: string[] = [];
    for (const w of entry.wakes.values()) if (await this.d.promote(w).catch(() => false)) woke.push(w.jobId);
    this.d.log.info(
      { event: 'idle:notice', sessionId: entry.sessionId, state, woke },
      `session ${entry.sessionId} says it is ${state === 'exited' ? 'gone' : state}: ${woke.length ? `looking again now (${woke.join(', ')})` : 'nothing was waiting on it'}`,
    );
  }

  async close() {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const l of this.listeners.values()) {
      const got = await l;
      if (!got) continue;
      await new Promise<void>((resolve) => got.server.close(() => resolve()));
      rmSync(got.path, { force: true });
    }
    this.listeners.clear();
  }
}
