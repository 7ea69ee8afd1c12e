import { runDemo } from '../demo.js';
import { EXIT, type Command } from './common.js';

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

Exit codes: 0 done, 1 failure (cleaned up), 2 bad usage (a busy or bad --port).`,
  options: { keep: { type: 'boolean' }, port: { type: 'string' } },
  async run({ values }, io) {
    const { startWeb } = await import('../web/server.js');
    const code = await runDemo({ env: io.env, out: io.out, err: io.err, keep: Boolean(values.keep), startWeb, webPort: values.port !== undefined ? Number(values.port) : 0 });
    return code === 0 ? EXIT.ok : code === 2 ? EXIT.usage : EXIT.failure;
  },
};
