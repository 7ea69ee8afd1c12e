// Talking to a REAL Claude Code session over its messaging socket (sim/real/), the way another program on the
// machine does: `messagingSocketPath` from ~/.claude/sessions/<pid>.json (`/tmp/cc-socks/<pid>.sock`), one
// JSON object per line. Measured against 2.1.328; see docs/real-cli-notes.md ("The messaging socket").
//
//   const r = await sendToSocket(path, 'please wrap up');          // {type:"user",message:{role,content}}
//   r.received === ''                                              // the session never answers on the socket
//   const w = await IdleWatcher.open();                             // listens on /tmp/cc-socks/sunset-<pid>-<hex>.sock
//   const sub = await w.notifyWhenIdle(path);                       // sends the control line
//   const notice = await sub.next(30_000);                          // {action:"peer_idle_notice", state:"idle"|"exited", …}
//   await w.close();
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The line that starts a turn (or is queued behind the running one). */
export function userLine(text: string, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: text }, ...extra })}\n`;
}

/** The optional auth line (token = peerToken of ~/.claude/sessions/<pid>.<hash>.key). Not needed on Linux. */
export function authLine(token: string): string {
  return `${JSON.stringify({ type: 'auth', token })}\n`;
}

/** peerToken of a session's key file (~/.claude/sessions/<pid>.<hash>.key), or null. A secret: never log it. */
export function peerToken(claudeDir: string, pid: number): string | null {
  const dir = join(claudeDir, 'sessions');
  try {
    for (const n of readdirSync(dir)) {
      if (!n.startsWith(`${pid}.`) || !n.endsWith('.key')) continue;
      const j = JSON.parse(readFileSync(join(dir, n), 'utf8'));
      if (typeof j?.peerToken === 'string') return j.peerToken;
    }
  } catch {
    /* none */
  }
  return null;
}

export interface SendResult {
  path: string;
  /** ms from createConnection to 'connect' (undefined when it failed) */
  connectMs?: number;
  /** ms from createConnection until every line was flushed to the kernel */
  writtenMs?: number;
  /** everything the session wrote back on this connection (2.1.328: always '') */
  received: string;
  /** the server ended or closed its side before we did */
  closedByServer: boolean;
  /** the connect/write error code (ENOENT: no such socket, ECONNREFUSED: a stale socket file nobody listens on) */
  error?: string;
}

/**
 * Connect to a session's messaging socket, write the lines (a string is sent as one user message), keep the
 * connection open holdMs to see whether anything comes back, then end it. Never throws for a connect error:
 * the code is in .error.
 */
export function sendToSocket(path: string, what: string | string[], opts: { holdMs?: number } = {}): Promise<SendResult> {
  const lines = typeof what === 'string' ? [userLine(what)] : what;
  const holdMs = opts.holdMs ?? 0;
  return new Promise((resolve) => {
    const t0 = performance.now();
    const out: SendResult = { path, received: '', closedByServer: false };
    let weEnded = false;
    let settled = false;
    const finish = (): void => {
      if (settled) return;
      settled = true;
      resolve(out);
    };
    const c = createConnection(path);
    c.on('connect', () => {
      out.connectMs = +(performance.now() - t0).toFixed(2);
      const data = lines.join('');
      c.write(data, () => {
        out.writtenMs = +(performance.now() - t0).toFixed(2);
        setTimeout(() => {
          weEnded = true;
          c.end();
        }, holdMs);
      });
    });
    c.on('data', (d: Buffer) => (out.received += d.toString('utf8')));
    c.on('end', () => {
      if (!weEnded) out.closedByServer = true;
    });
    c.on('error', (e: NodeJS.ErrnoException) => {
      out.error = e.code ?? e.message;
      finish();
    });
    c.on('close', () => {
      if (!weEnded && out.connectMs !== undefined) out.closedByServer = true;
      finish();
    });
  });
}

/** A peer_idle_notice as it arrives on our socket (2.1.328). */
export interface IdleNotice {
  type: 'control';
  action: 'peer_idle_notice';
  orig_msg_id: string;
  state: 'idle' | 'exited' | string;
  /** epoch ms: when the turn ended (idle, when a turn of this conversation ended) or when it exited */
  finished_at?: number;
  /** the last reply's summary, only for a sender that is a registered session itself */
  detail?: string;
  /** the target's own address, `uds:/tmp/cc-socks/<pid>.sock` */
  from?: string;
  msgV?: number;
  msg_id?: string;
  [k: string]: unknown;
}

export interface ArrivedLine {
  /** epoch ms */
  at: number;
  /** the raw line, without its newline */
  raw: string;
  json: any;
}

/**
 * A listening socket of our own in the sessions' socket folder (/tmp/cc-socks by default), the reply address for
 * notify_when_idle. The target only accepts a reply path in the same folder as its own that ends in `.sock`,
 * and when it answers it checks (SO_PEERCRED) that the process listening is the process that asked — so the
 * control line must be sent from this process (we do).
 */
export class IdleWatcher {
  readonly path: string;
  readonly address: string;
  readonly lines: ArrivedLine[] = [];
  /** connections the targets made to us */
  connections = 0;
  private readonly server: Server;
  private readonly waiters = new Set<() => void>();

  private constructor(path: string, server: Server) {
    this.path = path;
    this.address = `uds:${path}`;
    this.server = server;
  }

  static async open(dir = '/tmp/cc-socks'): Promise<IdleWatcher> {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `sunset-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
    let w: IdleWatcher | undefined;
    const server = createServer({ allowHalfOpen: false }, (s: Socket) => w!.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    w = new IdleWatcher(path, server);
    return w;
  }

  private accept(s: Socket): void {
    this.connections++;
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!raw.trim()) continue;
        let json: any = null;
        try {
          json = JSON.parse(raw);
        } catch {
          /* keep raw */
        }
        this.lines.push({ at: Date.now(), raw, json });
        for (const f of [...this.waiters]) f();
      }
    });
    s.on('error', () => {});
  }

  /** The idle notices that arrived so far (auth lines, if any, left out). */
  notices(): IdleNotice[] {
    return this.lines.filter((l) => l.json?.action === 'peer_idle_notice').map((l) => l.json as IdleNotice);
  }

  /** Send notify_when_idle to a target's socket from this process; returns the msg_id and a waiter for its notice. */
  async notifyWhenIdle(
    targetPath: string,
    opts: { msgId?: string; viaLines?: string[] } = {},
  ): Promise<{ msgId: string; send: SendResult; next: (timeoutMs: number) => Promise<IdleNotice | null> }> {
    const msgId = opts.msgId ?? randomUUID();
    const line = `${JSON.stringify({ type: 'control', action: 'notify_when_idle', from: this.address, msg_id: msgId })}\n`;
    const send = await sendToSocket(targetPath, [...(opts.viaLines ?? []), line]);
    return { msgId, send, next: (timeoutMs: number) => this.waitNotice(msgId, timeoutMs) };
  }

  /** Resolve with the notice answering msgId (null at the deadline). */
  waitNotice(msgId: string, timeoutMs: number): Promise<IdleNotice | null> {
    return new Promise((resolve) => {
      const check = (): boolean => {
        const n = this.notices().find((x) => x.orig_msg_id === msgId);
        if (!n) return false;
        this.waiters.delete(f);
        clearTimeout(t);
        resolve(n);
        return true;
      };
      const f = (): void => void check();
      const t = setTimeout(() => {
        this.waiters.delete(f);
        resolve(null);
      }, timeoutMs);
      this.waiters.add(f);
      check();
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.path, { force: true });
  }
}

/** The folder a session's socket sits in (a reply socket must sit in the same one). */
export function socketDir(messagingSocketPath: string): string {
  return dirname(messagingSocketPath);
}
