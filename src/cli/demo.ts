import { catchStopSignals, secondsLeft, type StopEvent } from '../stop-signals.js';
import { EXIT, type Command } from './common.js';

const WHAT = 'its stand-in sessions, its tmux server, its folder, its keys in Redis';

/** What the demo says at a Ctrl-C (or SIGTERM): the first starts the removal, any later one says it is under way. */
export function stopLine(e: StopEvent): string {
  if (e.first && !e.cleaning)
    return `\n${e.signal === 'interrupt' ? 'Interrupted' : 'Terminated'}: stopping the demo and removing what it started (${WHAT}), ${secondsLeft(e.leftMs)}…`;
  return `Still cleaning up (${WHAT}), ${secondsLeft(e.leftMs)}: the demo leaves nothing half-removed.`;
}

export const demoCommand: Command = {
  name: 'demo',
  summary: 'watch sunset work on a simulated fleet (ends by itself in about a minute)',
  usage: `usage: sunset demo [--keep] [--port N]

Builds a simulated fleet — finished, busy, attached, awaiting-human, active, stubborn,
interactive and untasked sessions, plus pid-less records — with stand-in agents and a
private tmux server, compresses the windows to seconds, runs the real pipeline and
narrates each decision, then prints a summary and cleans up.
Redis: $REDIS_URL, else 127.0.0.1:6379, else a private redis-server it starts.
--keep leaves it running until Ctrl-C, and prints the command that points the CLI at its
config. --port serves the web pages there (default: a free port); a busy one fails at once,
before anything starts. The pages close with the demo (unless --keep).
Ctrl-C (or kill PID) at any moment stops it and, within 10 s, removes all it started: its
stand-in sessions, its tmux server, its temp folder (the fleet's tasks, transcripts and HOME),
its keys in Redis (a redis-server it started too). A
second Ctrl-C says it is still cleaning up; it never leaves half of it.

Exit codes: 0 done, 1 failure (cleaned up), 2 bad usage (a busy or bad --port),
130 stopped by Ctrl-C (143 by kill PID), a --keep demo included (cleaned up).`,
  options: { keep: { type: 'boolean' }, port: { type: 'string' } },
  async run({ values }, io) {
    // from here on a Ctrl-C is the demo's to handle: it removes what it started (src/demo-parts.ts); the demo's
    // modules (BullMQ, the web) load after, so that a Ctrl-C while they load is caught too
    const stop = catchStopSignals({ on: (e) => io.out(stopLine(e)) });
    const { runDemo } = await import('../demo.js');
    const { startWeb } = await import('../web/server.js');
    const code = await runDemo({
      env: io.env,
      out: io.out,
      err: io.err,
      keep: Boolean(values.keep),
      startWeb,
      webPort: values.port !== undefined ? Number(values.port) : 0,
      stop,
    });
    // stopped: all it started is removed; what it was doing when the signal came (a spawn, a probe) may still
    // hold the event loop, so end now rather than at the bound
    if (stop.code !== null) process.exit(stop.code);
    return code === 0 ? EXIT.ok : code === 2 ? EXIT.usage : EXIT.failure;
  },
};
