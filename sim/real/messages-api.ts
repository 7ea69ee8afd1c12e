// A stand-in Anthropic Messages API for the REAL Claude Code CLI (sim/real/): an HTTP server on 127.0.0.1,
// a free port. No mock of Claude Code: the real binary talks to this over HTTP, exactly as it would to the
// real API (point it here with ANTHROPIC_BASE_URL).
//
//   const api = await MessagesApi.start();        // api.url → ANTHROPIC_BASE_URL
//   ... a prompt "[[state:done]] fix it" ...       // the classifier answers done
//   api.userTextsSeen()                            // every new human prompt the model was sent, once each
//   api.onRequest((r) => r.kind === 'main' ? { text: 'hi' } : undefined)
//   await api.close();
//
// What the CLI sends (2.1.328, seen):
//   - main turns: POST /v1/messages?beta=true, stream: true, `tools` non-empty, header x-claude-code-session-id;
//   - after each turn of a background session: a small non-streaming *classifier* request (system prompt
//     "...decide which of four states it's in..."; user content a string with `User's most recent ask: "…"`
//     and `Assistant message tail …`), answered with JSON {state, detail, tempo, needs?, output:{result?}}.
//     A non-JSON answer makes it retry once ("Previous response was not valid JSON") and then keep `working`;
//   - once per background job: a *label* request ("2-4 word lowercase label for this job") whose plain-text
//     answer becomes the session's `name` (nameSource "auto") unless the session was given one;
//   - when a person comes back to a session (attach, open from the agent view): a *recap* request, a main-
//     shaped request whose last human text starts "The user stepped away and is coming back. Recap …";
//   - POST /v1/messages/count_tokens now and then.
//
// Markers in the human prompt text steer the answers (combine freely):
//   [[state:done]]            classifier → done, tempo idle, output.result set
//   [[state:blocked needs=…]] classifier → blocked, tempo blocked, needs …; the main reply ends with that question
//   [[state:working]]         classifier → working, tempo active
//   [[state:failed]]          classifier → failed, tempo idle
//   (no state marker)         classifier answers plain text → the CLI retries once, the state stays `working`
//   [[slow:MS]]               the main reply streams over MS milliseconds (the session is `busy` meanwhile)
//   [[bg:COMMAND]]            the model first calls Bash {command, run_in_background: true} (default
//                             `sleep 600`), then, given the tool result, replies in text: in-flight work
//   [[bash:COMMAND]]          the model calls Bash (foreground) with COMMAND, then replies in text
//   [[reply:TEXT]]            the main reply is exactly TEXT (up to the next marker / end of the prompt)
//   [[label:TEXT]]            the label request's answer (the auto name); default: the prompt's first words
//   [[error:STATUS]]          main requests answer an API error with that HTTP status (e.g. 529, 400)
//   [[hang]]                  the main request is accepted and never answered (until close())
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export type RequestKind = 'main' | 'classifier' | 'label' | 'recap' | 'count_tokens' | 'aux' | 'other';

export interface Markers {
  state?: 'done' | 'blocked' | 'working' | 'failed';
  needs?: string;
  slowMs?: number;
  bg?: string;
  bash?: string;
  reply?: string;
  label?: string;
  error?: number;
  hang?: boolean;
}

export interface LoggedRequest {
  seq: number;
  /** epoch ms when the request's body had arrived */
  at: number;
  method: string;
  /** path without the query, e.g. /v1/messages */
  path: string;
  /** the raw query string without '?', e.g. beta=true */
  query: string;
  /** every header except authorization and x-api-key (lower-case names) */
  headers: Record<string, string>;
  /** parsed JSON body (or the raw text when it is not JSON; null when empty) */
  body: any;
  kind: RequestKind;
  /** x-claude-code-session-id */
  sessionId: string | null;
  /** main: the latest human text of the conversation; classifier/label: the user's ask quoted in it */
  prompt: string | null;
  /** main: the last message is a tool_result (the turn is going on); else false */
  toolResultTurn: boolean;
  markers: Markers;
  /** what the stand-in answered (filled once answered) */
  answer?: { status: number; text?: string; toolUses?: string[]; json?: unknown; stopReason?: string };
}

export interface ToolUse {
  name: string;
  input: Record<string, unknown>;
  id?: string;
}

export interface Answer {
  /** assistant text (main/aux/label); for a classifier request, the raw text answered (use json for JSON) */
  text?: string;
  /** tool calls after the text (main requests); stop_reason becomes tool_use */
  toolUses?: ToolUse[];
  /** answered as the text JSON.stringify(json) (classifier) */
  json?: unknown;
  /** stream the content over this many ms (streaming requests only) */
  slowMs?: number;
  /** wait this long before answering at all */
  delayMs?: number;
  stopReason?: string;
  /** answer an API error instead */
  error?: { status: number; type?: string; message?: string };
  /** never answer */
  hang?: boolean;
}

export type RequestHandler = (req: LoggedRequest) => Answer | undefined | Promise<Answer | undefined>;

const MARKER = /\[\[([a-z]+)(?::([^\]]*))?\]\]/g;

/** Markers found in a text (later ones win). */
export function parseMarkers(text: string | null | undefined): Markers {
  const m: Markers = {};
  if (!text) return m;
  for (const x of text.matchAll(MARKER)) {
    const key = x[1];
    const arg = (x[2] ?? '').trim();
    switch (key) {
      case 'state': {
        const [st, ...rest] = arg.split(/\s+/);
        if (st === 'done' || st === 'blocked' || st === 'working' || st === 'failed') m.state = st;
        const r = rest.join(' ');
        const n = /(?:^|\s)needs=(.*)$/.exec(r);
        if (n) m.needs = n[1].trim();
        break;
      }
      case 'slow':
        if (/^\d+$/.test(arg)) m.slowMs = Number(arg);
        break;
      case 'bg':
        m.bg = arg || 'sleep 600';
        break;
      case 'bash':
        if (arg) m.bash = arg;
        break;
      case 'reply':
        m.reply = arg;
        break;
      case 'label':
        if (arg) m.label = arg;
        break;
      case 'error':
        if (/^\d{3}$/.test(arg)) m.error = Number(arg);
        break;
      case 'hang':
        m.hang = true;
        break;
      default:
        break;
    }
  }
  return m;
}

/** The text with every [[marker]] removed and spaces collapsed. */
export function stripMarkers(text: string): string {
  return text.replace(MARKER, ' ').replace(/\s+/g, ' ').trim();
}

type Block = { type: string; text?: string; [k: string]: unknown };
type Msg = { role: string; content: string | Block[] };

/** How 2.1.328 frames a message that came in over the messaging socket (group 1: the mid-turn variant; 2: the text). */
export const PEER_FRAME =
  /(?:Another Claude session|A peer session) sent a message( while you were working)?:\n([\s\S]*?)\n\n(?:This came from another Claude session|That "other Claude session")/g;

const isReminder = (t: string): boolean => t.trimStart().startsWith('<system-reminder>');

/** The human text blocks of one message (user role; system reminders and tool results left out). */
export function humanTexts(m: Msg | undefined): string[] {
  if (m?.role !== 'user') return [];
  if (typeof m.content === 'string') return isReminder(m.content) ? [] : [m.content];
  if (!Array.isArray(m.content)) return [];
  const out: string[] = [];
  for (const b of m.content) if (b && b.type === 'text' && typeof b.text === 'string' && !isReminder(b.text)) out.push(b.text);
  return out;
}

/** Every human text of a request's conversation, oldest first. */
export function conversationTexts(body: any): string[] {
  const msgs: Msg[] = Array.isArray(body?.messages) ? body.messages : [];
  return msgs.flatMap((m) => humanTexts(m));
}

function systemText(body: any): string {
  const s = body?.system;
  if (typeof s === 'string') return s;
  if (Array.isArray(s)) return s.map((b: Block) => (typeof b?.text === 'string' ? b.text : '')).join('\n');
  return '';
}

function firstUserString(body: any): string {
  const m: Msg | undefined = Array.isArray(body?.messages) ? body.messages.find((x: Msg) => x.role === 'user') : undefined;
  if (!m) return '';
  if (typeof m.content === 'string') return m.content;
  return (m.content ?? []).map((b) => (typeof b.text === 'string' ? b.text : '')).join('\n');
}

function lastMessage(body: any): Msg | undefined {
  const msgs: Msg[] = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i].role !== 'system') return msgs[i];
  return undefined;
}

function hasToolResult(m: Msg | undefined): boolean {
  return !!m && m.role === 'user' && Array.isArray(m.content) && m.content.some((b) => b?.type === 'tool_result');
}

/** The latest human text of the conversation (for a main request). */
function latestHumanText(body: any): string | null {
  const msgs: Msg[] = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    const t = humanTexts(msgs[i]);
    if (t.length) return t.join('\n');
  }
  return null;
}

/** The user's ask quoted in a classifier or label request. */
function quotedAsk(s: string): string | null {
  const m = /User's most recent ask: "([\s\S]*?)"\n/.exec(s) ?? /\nUser: "([\s\S]*?)"\n/.exec(s);
  return m ? m[1] : null;
}

export function classify(path: string, body: any): RequestKind {
  if (path.endsWith('/count_tokens')) return 'count_tokens';
  if (!/\/v1\/messages$/.test(path)) return 'other';
  const sys = systemText(body);
  const first = firstUserString(body);
  if (/decide which of four states/.test(sys)) return 'classifier';
  if (/label for this job/.test(first)) return 'label';
  if (Array.isArray(body?.tools) && body.tools.length > 0) {
    // a person coming back to a session (attach / open from the agent view) gets a recap: a side query
    // on the conversation whose last human text is this instruction; it is not a turn of the session
    if (/^\s*The user stepped away and is coming back/.test(latestHumanText(body) ?? '')) return 'recap';
    return 'main';
  }
  return 'aux';
}

/** A value that satisfies a (simple) JSON schema, for requests asking for structured output. */
function fillSchema(schema: any, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 8) return null;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if ('const' in schema) return schema.const;
  const t = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (t) {
    case 'object': {
      const o: Record<string, unknown> = {};
      for (const k of Array.isArray(schema.required) ? schema.required : Object.keys(schema.properties ?? {})) {
        o[k] = fillSchema(schema.properties?.[k], depth + 1);
      }
      return o;
    }
    case 'array':
      return [];
    case 'string':
      return 'stand-in';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return false;
    default:
      if (schema.anyOf?.[0]) return fillSchema(schema.anyOf[0], depth + 1);
      if (schema.oneOf?.[0]) return fillSchema(schema.oneOf[0], depth + 1);
      return null;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class MessagesApi {
  readonly port: number;
  readonly url: string;
  private readonly server: Server;
  private readonly log: LoggedRequest[] = [];
  private readonly handlers: RequestHandler[] = [];
  private readonly open = new Set<ServerResponse>();
  private readonly waiters = new Set<() => void>();
  private seq = 0;
  private closed = false;

  private constructor(server: Server) {
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  static async start(opts: { port?: number } = {}): Promise<MessagesApi> {
    let api: MessagesApi | undefined;
    const server = createServer((req, res) => {
      void api!.handle(req, res);
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    api = new MessagesApi(server);
    return api;
  }

  /** Add an answer override: the first handler (newest first) that returns an Answer decides. Returns a remover. */
  onRequest(fn: RequestHandler): () => void {
    this.handlers.unshift(fn);
    return () => {
      const i = this.handlers.indexOf(fn);
      if (i >= 0) this.handlers.splice(i, 1);
    };
  }

  /** Every request so far (optionally filtered), oldest first. */
  requests(filter?: { kind?: RequestKind; sessionId?: string } | ((r: LoggedRequest) => boolean)): LoggedRequest[] {
    if (!filter) return [...this.log];
    if (typeof filter === 'function') return this.log.filter(filter);
    return this.log.filter((r) => (!filter.kind || r.kind === filter.kind) && (!filter.sessionId || r.sessionId === filter.sessionId));
  }

  /**
   * The human prompts the model was sent as NEW turns, in order: for each main request whose last message
   * is a human message, its human text; a request repeating an earlier one (a retry: same session, same
   * position in the conversation, same text) is counted once. A resumed conversation's old prompts, sent
   * again as history, are not new turns and are not counted here (see conversationTexts / requestsContaining).
   */
  userTextsSeen(sessionId?: string): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const r of this.log) {
      if (r.kind !== 'main' || (sessionId && r.sessionId !== sessionId)) continue;
      const msgs: Msg[] = Array.isArray(r.body?.messages) ? r.body.messages : [];
      let idx = msgs.length - 1;
      while (idx >= 0 && msgs[idx].role === 'system') idx--;
      const texts = humanTexts(msgs[idx]);
      if (!texts.length) continue;
      const text = texts.join('\n');
      const key = `${r.sessionId}\0${idx}\0${text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(text);
    }
    return out;
  }

  /**
   * Messages other programs sent over a session's messaging socket, as the model was shown them, oldest first,
   * once each. 2.1.328 frames one that arrives while the session is idle (or after a turn without tool calls)
   * as a new user turn "Another Claude session sent a message:\n<text>\n\nThis came from another Claude
   * session — …", and one absorbed mid-turn (at a tool boundary, or after a permission prompt) as a
   * role:"system" message "Another Claude session sent a message while you were working:\n<text>\n\n…".
   * userTextsSeen() counts only the first kind (system messages are not human text); this sees both.
   */
  peerMessagesSeen(sessionId?: string): Array<{ text: string; midTurn: boolean; sessionId: string | null; seq: number }> {
    const out: Array<{ text: string; midTurn: boolean; sessionId: string | null; seq: number }> = [];
    const seen = new Set<string>();
    for (const r of this.log) {
      if (r.kind !== 'main' || (sessionId && r.sessionId !== sessionId)) continue;
      const msgs: Msg[] = Array.isArray(r.body?.messages) ? r.body.messages : [];
      msgs.forEach((m, idx) => {
        const blocks =
          typeof m.content === 'string'
            ? [m.content]
            : Array.isArray(m.content)
              ? m.content.map((b) => (typeof b?.text === 'string' ? b.text : ''))
              : [];
        for (const t of blocks) {
          for (const x of t.matchAll(PEER_FRAME)) {
            const key = `${r.sessionId}\0${idx}\0${x[2]}`;
            if (seen.has(key)) continue;
            seen.add(key);
            out.push({ text: x[2], midTurn: !!x[1], sessionId: r.sessionId, seq: r.seq });
          }
        }
      });
    }
    return out;
  }

  /** How many times `text` was sent to the model as a new prompt (substring match on userTextsSeen). */
  timesSent(text: string, sessionId?: string): number {
    return this.userTextsSeen(sessionId).filter((t) => t.includes(text)).length;
  }

  /** Main requests whose conversation (any human text, history included) contains `text`. */
  requestsContaining(text: string, kind: RequestKind = 'main'): LoggedRequest[] {
    return this.log.filter((r) => r.kind === kind && conversationTexts(r.body).some((t) => t.includes(text)));
  }

  /** Resolve once a request matching pred has arrived (true), or false at the deadline. */
  async waitForRequest(pred: (r: LoggedRequest) => boolean, timeoutMs: number): Promise<LoggedRequest | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.log.find(pred);
      if (hit) return hit;
      const left = deadline - Date.now();
      if (left <= 0 || this.closed) return null;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 250));
        function done(): void {
          clearTimeout(t);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  /** Forget the request log (e.g. between tests sharing one API). */
  clearLog(): void {
    this.log.length = 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const res of this.open) res.destroy();
    this.open.clear();
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const w of this.waiters) w();
  }

  // ---------------------------------------------------------------- serving

  private notify(): void {
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const full = req.url ?? '/';
    const qi = full.indexOf('?');
    const path = qi >= 0 ? full.slice(0, qi) : full;
    const query = qi >= 0 ? full.slice(qi + 1) : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (k === 'authorization' || k === 'x-api-key' || v === undefined) continue;
      headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const kind = req.method === 'POST' ? classify(path, body) : 'other';
    let prompt: string | null = null;
    let toolResultTurn = false;
    let markers: Markers = {};
    if (kind === 'main') {
      prompt = latestHumanText(body);
      toolResultTurn = hasToolResult(lastMessage(body));
      markers = parseMarkers(prompt);
    } else if (kind === 'classifier' || kind === 'label') {
      const s = firstUserString(body);
      prompt = quotedAsk(s);
      markers = parseMarkers(prompt ?? s);
      if (!markers.state) markers = { ...parseMarkers(s), ...markers };
    }
    const entry: LoggedRequest = {
      seq: ++this.seq,
      at: Date.now(),
      method: req.method ?? 'GET',
      path,
      query,
      headers,
      body,
      kind,
      sessionId: headers['x-claude-code-session-id'] ?? null,
      prompt,
      toolResultTurn,
      markers,
    };
    this.log.push(entry);
    this.notify();

    let answer: Answer | undefined;
    for (const h of [...this.handlers]) {
      try {
        answer = await h(entry);
      } catch (e) {
        answer = { error: { status: 500, type: 'api_error', message: `stand-in handler threw: ${(e as Error).message}` } };
      }
      if (answer) break;
    }
    answer ??= this.defaultAnswer(entry);
    if (answer.hang) return; // held open until close()
    if (answer.delayMs) await sleep(answer.delayMs);
    if (res.destroyed) return;
    if (answer.error) {
      const status = answer.error.status;
      const type =
        answer.error.type ??
        (status === 529 ? 'overloaded_error' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error');
      const message = answer.error.message ?? `stand-in error ${status}`;
      entry.answer = { status, text: message };
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(8).toString('hex')}` });
      res.end(JSON.stringify({ type: 'error', error: { type, message } }));
      return;
    }
    if (kind === 'count_tokens') {
      const n = Math.max(1, Math.ceil(JSON.stringify(body ?? '').length / 4));
      entry.answer = { status: 200, json: { input_tokens: n } };
      this.json(res, 200, { input_tokens: n });
      return;
    }
    if (kind === 'other') {
      entry.answer = { status: 404 };
      this.json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `stand-in: no ${entry.method} ${path}` } });
      return;
    }
    await this.reply(entry, body, answer, res);
  }

  private defaultAnswer(r: LoggedRequest): Answer {
    const m = r.markers;
    switch (r.kind) {
      case 'classifier': {
        switch (m.state) {
          case 'done':
            return { json: { state: 'done', detail: 'stand-in: task finished', tempo: 'idle', output: { result: 'stand-in result' } } };
          case 'blocked': {
            const needs = m.needs || 'Which option should I take?';
            return { json: { state: 'blocked', detail: 'stand-in: waiting for the user', tempo: 'blocked', needs, output: {} } };
          }
          case 'working':
            return { json: { state: 'working', detail: 'stand-in: still working', tempo: 'active', output: {} } };
          case 'failed':
            return { json: { state: 'failed', detail: 'stand-in: gave up', tempo: 'idle', output: {} } };
          default:
            return { text: 'stand-in: no classification' };
        }
      }
      case 'label': {
        if (m.label) return { text: m.label };
        const words = stripMarkers(r.prompt ?? 'stand-in job')
          .toLowerCase()
          .replace(/[^a-z0-9 ._-]/g, ' ')
          .split(/\s+/)
          .filter(Boolean);
        return { text: words.slice(0, 4).join(' ') || 'stand-in job' };
      }
      case 'recap':
        return { text: 'Stand-in recap: the last turn is answered; nothing is pending.' };
      case 'main': {
        if (m.error) return { error: { status: m.error } };
        if (m.hang && !r.toolResultTurn) return { hang: true };
        const cmd = m.bg ?? m.bash;
        if (cmd && !r.toolResultTurn) {
          const input: Record<string, unknown> = { command: cmd, description: 'Run the stand-in command' };
          if (m.bg) input.run_in_background = true;
          return { text: m.bg ? 'Starting it in the background.' : 'Running it.', toolUses: [{ name: 'Bash', input }], slowMs: m.slowMs };
        }
        let text: string;
        if (m.reply !== undefined) text = m.reply;
        else if (r.toolResultTurn)
          text = cmd && m.bg ? `Started \`${cmd}\` in the background; it is still running.` : 'The command finished.';
        else {
          const ask = stripMarkers(r.prompt ?? '');
          text = `Stand-in reply to: ${ask.slice(0, 200) || '(empty prompt)'}`;
        }
        // (no `result:` line for done: the CLI reads one as "done" itself and never asks the classifier)
        if (m.state === 'blocked') text += `\n\n${m.needs || 'Which option should I take?'}`;
        return { text, slowMs: m.slowMs };
      }
      default: {
        const fmt = r.body?.output_config?.format;
        if (fmt && typeof fmt === 'object' && fmt.schema) return { json: fillSchema(fmt.schema) };
        return { text: 'stand-in' };
      }
    }
  }

  private json(res: ServerResponse, status: number, obj: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(8).toString('hex')}` });
    res.end(JSON.stringify(obj));
  }

  private async reply(entry: LoggedRequest, body: any, a: Answer, res: ServerResponse): Promise<void> {
    const text = a.json !== undefined ? JSON.stringify(a.json) : (a.text ?? '');
    const tools = (a.toolUses ?? []).map((t) => ({ ...t, id: t.id ?? `toolu_${randomBytes(12).toString('hex')}` }));
    const stopReason = a.stopReason ?? (tools.length ? 'tool_use' : 'end_turn');
    const model = typeof body?.model === 'string' ? body.model : 'claude-stand-in';
    const inputTokens = Math.max(1, Math.ceil(JSON.stringify(body?.messages ?? '').length / 4));
    const outputTokens = Math.max(1, Math.ceil((text.length + JSON.stringify(tools).length) / 4));
    const id = `msg_${randomBytes(12).toString('hex')}`;
    entry.answer = { status: 200, text, toolUses: tools.map((t) => t.name), json: a.json, stopReason };
    const content: Block[] = [];
    if (text) content.push({ type: 'text', text });
    for (const t of tools) content.push({ type: 'tool_use', id: t.id, name: t.name, input: t.input });
    const usage = { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

    if (!body?.stream) {
      this.json(res, 200, { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage });
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'request-id': `req_${randomBytes(8).toString('hex')}`,
    });
    const write = (type: string, data: Record<string, unknown>): boolean => {
      if (res.destroyed || this.closed) return false;
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      return true;
    };
    // the pieces of the stream: text deltas and tool JSON deltas, spread over slowMs
    const pieces: Array<() => boolean> = [];
    write('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    let index = 0;
    if (text) {
      const i = index++;
      pieces.push(() => write('content_block_start', { index: i, content_block: { type: 'text', text: '' } }));
      const n = a.slowMs ? Math.max(4, Math.min(40, Math.ceil(a.slowMs / 100))) : 1;
      const size = Math.max(1, Math.ceil(text.length / n));
      for (let p = 0; p < text.length; p += size) {
        const part = text.slice(p, p + size);
        pieces.push(() => write('content_block_delta', { index: i, delta: { type: 'text_delta', text: part } }));
      }
      pieces.push(() => write('content_block_stop', { index: i }));
    }
    for (const t of tools) {
      const i = index++;
      pieces.push(() => write('content_block_start', { index: i, content_block: { type: 'tool_use', id: t.id, name: t.name, input: {} } }));
      pieces.push(() =>
        write('content_block_delta', { index: i, delta: { type: 'input_json_delta', partial_json: JSON.stringify(t.input) } }),
      );
      pieces.push(() => write('content_block_stop', { index: i }));
    }
    const gap = a.slowMs ? a.slowMs / Math.max(1, pieces.length) : 0;
    for (const p of pieces) {
      if (gap) {
        await sleep(gap);
        if (!write('ping', {})) return;
      }
      if (!p()) return;
    }
    if (!write('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }))
      return;
    write('message_stop', {});
    res.end();
  }
}
