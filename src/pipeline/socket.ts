// A session's messaging socket (Claude Code's sessions/<pid>.json `messagingSocketPath`; docs/claude-code.md):
// JSON lines over a Unix socket. A `user` message starts a turn: the model is sent the text, told it came from
// another program on the box. This is how the one message reaches the model itself. A `control` line
// (notify_when_idle) asks the session to say when it next goes idle or exits (src/pipeline/idle-notices.ts).
import { createConnection } from 'node:net';

/** The line that sends the model one message. */
export function userLine(text: string): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: text } })}\n`;
}

/** Connect, write one `user` message, end. Resolves once the line is written and the socket is done; rejects (with why) otherwise. */
export function sendUserMessage(path: string, text: string, timeoutMs: number): Promise<void> {
  return sendLines(path, userLine(text), timeoutMs);
}

/** Connect, write the lines, end; resolves once they are flushed with no reset soon after, rejects (with why) otherwise. */
export function sendLines(path: string, lines: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${path} within ${timeoutMs} ms`)), timeoutMs);
    const sock = createConnection(path);
    sock.on('error', (err: NodeJS.ErrnoException) =>
      done(new Error(`the messaging socket ${path} refused the message: ${err.code ?? err.message}`)),
    );
    // the session answers nothing and keeps the connection open (docs/real-cli-notes.md): the line is out once it
    // is flushed with no error soon after — a socket left by a killed session can accept the connect, then reset
    sock.on('connect', () => sock.end(lines));
    sock.on('finish', () => setTimeout(() => done(), 50));
  });
}
