// The demo's narration: sunset's structured log, as it decides, turned into sentences a newcomer can follow.
import { Writable } from 'node:stream';
import { REASONS, type Reason } from './doctrine/verdict.js';
import { MAX_EXIT_REQUESTS } from './doctrine/chain.js';
import { CLOSES_AS } from './demo-cast.js';

/** One JSON log line as the narrator reads it: any event's fields, each read where its event is known. */
// biome-ignore lint/suspicious/noExplicitAny: a log line's fields differ by event; each case reads its own
type LogEvent = Record<string, any>;

/** How each exit path is said: the command or the keystrokes, as a person would do it. */
const METHOD: Record<string, string> = { 'claude-stop': '`claude stop`', 'typed-exit': '`/exit` typed into its pane' };

/** Turns the pipeline's structured log into sentences a newcomer can follow. */
export class Narrator {
  private start = Date.now();
  /** The narration's clock starts over (at sunset's start: the times then match what the demo says happens when). */
  startClock(): void {
    this.start = Date.now();
  }
  private seen = new Set<string>();
  constructor(
    private readonly out: (s: string) => void,
    /** Each session's name in the demo, by id and by session id. */
    private readonly names: Map<string, string>,
  ) {}
  stream() {
    return new Writable({
      write: (chunk, _e, cb) => {
        for (const line of String(chunk).split('\n')) {
          if (!line.trim()) continue;
          try {
            this.say(JSON.parse(line));
          } catch {
            /* not ours */
          }
        }
        cb();
      },
    });
  }
  private who(e: LogEvent) {
    return this.names.get(e.sessionId) ?? this.names.get(e.id) ?? e.id ?? e.sessionId ?? '?';
  }
  private say(e: LogEvent) {
    const t = `${((Date.now() - this.start) / 1000).toFixed(1).padStart(5)}s`;
    const w = this.who(e);
    const once = (key: string, text: string) => {
      if (this.seen.has(key)) return;
      this.seen.add(key);
      this.out(`${t}  ${text}`);
    };
    switch (e.event) {
      case 'task:released':
        return once(
          `rel/${e.taskId}`,
          `task ${e.taskId} is ${CLOSES_AS[e.taskId] ?? 'finished'} → released its loop (never the session); the grace window starts for its session, ${w}`,
        );
      case 'ask:deferred':
        return once(
          `def/${e.taskId}/${e.why}`,
          `${w}: not yet — ${String(e.why)
            .split(',')
            .map((r) => REASONS[r as Reason] ?? r)
            .join('; ')}`,
        );
      case 'chain:ended':
        return once(`end/${e.taskId}`, `${w}: chain ends (${e.why})`);
      case 'exit:asked':
        return once(
          `ask/${e.taskId}`,
          `${w}: asked once to wrap up (${e.via === 'socket' ? 'a message over its messaging socket' : e.via === 'pane' ? 'a message typed into its pane' : 'a message in its inbox'})`,
        );
      case 'exit:requested':
        return once(`req/${e.taskId}/${e.n}`, `${w}: exit request ${e.n} of ${MAX_EXIT_REQUESTS} (on the rate-limited exit queue)`);
      case 'expire:requested':
        return once(
          `exp/${e.sessionId}/${e.n}`,
          `${w}: untasked and idle past the expire window → exit request ${e.n} of ${MAX_EXIT_REQUESTS}`,
        );
      case 'exit:exited':
        return once(
          `ok/${e.jobId}`,
          `${w}: left by its own exit path (${(e.method === 'typed-exit' && e.agent ? '`/quit` typed into its pane' : METHOD[e.method]) ?? e.method}); conversation resumable`,
        );
      case 'exit:still-running':
        return once(`no/${e.jobId}`, `${w}: still running after the request — sunset waits, never forces`);
      case 'exit:spared':
        return once(`sp/${e.jobId}`, `${w}: re-checked just before acting and spared (${(e.reasons ?? []).join(', ')})`);
      case 'exit:gave-up':
        return once(`gu/${e.taskId}`, `${w}: three requests ignored → gave up; a person decides now`);
      case 'alarm:raised':
        return once(`al/${e.key}`, `ALARM ${e.kind}: ${e.message}`);
    }
  }
}
