// A stand-in model API for the REAL agent CLIs of sim/agents/ (Codex, Gemini CLI, and any OpenAI-chat client):
// one HTTP server on 127.0.0.1, a free port, speaking the wire format each CLI uses. No mock of any CLI: the
// real binary talks to this over HTTP exactly as it would to its vendor's API.
//
//   const api = await AgentApi.start();            // api.url → the CLI's base-URL setting (see agent-specs.ts)
//   ... a prompt "[[slow:8000]] fix it" ...         // the reply streams over 8 s: the turn is busy meanwhile
//   api.humanTexts()                               // every human prompt, as the model was sent it, once each
//   api.requestsContaining('secret-word')          // turns whose conversation (history included) holds it
//   await api.close();
//
// Wire formats (one server answers all three; the path says which):
//   POST /v1/responses                                       OpenAI Responses API, SSE (Codex: wire_api = "responses")
//   POST /v1beta/models/<m>:streamGenerateContent?alt=sse    Gemini API, SSE (Gemini CLI: GOOGLE_GEMINI_BASE_URL)
//   POST /v1beta/models/<m>:generateContent                  Gemini API, JSON (Gemini CLI's side requests)
//   POST /v1/chat/completions                                OpenAI Chat Completions, SSE or JSON (Qwen Code,
//                                                            opencode, Copilot CLI BYOK)
//
// Markers in the latest human text steer the answer (combine freely; the same words as sim/real's):
//   [[slow:MS]]        the reply streams over MS milliseconds: the turn is in flight that long
//   [[bash:COMMAND]]   the model first calls the CLI's shell tool with COMMAND, then, given its result, replies
//   [[reply:TEXT]]     the reply is exactly TEXT
//   [[error:STATUS]]   answer an API error with that HTTP status
//   [[hang]]           accept the request and never answer (until close())
// Without markers the reply is "Stand-in reply to: <the prompt>".
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export type Wire = 'responses' | 'gemini' | 'chat';
export type RequestKind = 'turn' | 'side' | 'other';

export interface Markers {
  slowMs?: number;
  bash?: string;
  reply?: string;
  error?: number;
  hang?: boolean;
}

/** One turn of a conversation as every wire format has it. */
export interface Said {
  role: 'human' | 'model' | 'tool-call' | 'tool-result' | 'system';
  text: string;
}

export interface LoggedRequest {
  seq: number;
  at: number;
  method: string;
  path: string;
  query: string;
  /** every header but authorization / x-api-key / x-goog-api-key (lower-case names) */
  headers: Record<string, string>;
  body: any;
  wire: Wire | null;
  /** turn: a streaming request with tools (the agent's own turn); side: anything else the CLI asks the model */
  kind: RequestKind;
  /** the session id the request names, where its wire carries one (Codex: header session-id) */
  sessionId: string | null;
  /** the conversation as sent, oldest first */
  said: Said[];
  /** the latest human text (null when none) */
  prompt: string | null;
  /** the last thing in the conversation is a tool result: the turn is going on */
  toolResultTurn: boolean;
  /** names of the tools offered */
  tools: string[];
  markers: Markers;
  answer?: { status: number; text?: string; toolCall?: { name: string; args: Record<string, unknown> } };
}

export interface Answer {
  text?: string;
  toolCall?: { name: string; args: Record<string, unknown> };
  /** stream the reply over this many ms */
  slowMs?: number;
  error?: { status: number; message?: string };
  hang?: boolean;
  /** a JSON value as the whole reply text (side requests with a schema) */
  json?: unknown;
}

export type RequestHandler = (req: LoggedRequest) => Answer | undefined | Promise<Answer | undefined>;

const MARKER = /\[\[([a-z]+)(?::([^\]]*))?\]\]/g;

export function parseMarkers(text: string | null | undefined): Markers {
  const m: Markers = {};
  if (!text) return m;
  for (const x of text.matchAll(MARKER)) {
    const arg = (x[2] ?? '').trim();
    if (x[1] === 'slow' && /^\d+$/.test(arg)) m.slowMs = Number(arg);
    else if (x[1] === 'bash' && arg) m.bash = arg;
    else if (x[1] === 'reply') m.reply = arg;
    else if (x[1] === 'error' && /^\d{3}$/.test(arg)) m.error = Number(arg);
    else if (x[1] === 'hang') m.hang = true;
  }
  return m;
}

export function stripMarkers(text: string): string {
  return text.replace(MARKER, ' ').replace(/\s+/g, ' ').trim();
}

// The shell tool each CLI offers, in order of preference (Codex 0.171: exec_command; older Codex: shell;
// Gemini CLI / Qwen Code: run_shell_command; opencode: bash; Copilot CLI: bash).
const SHELL_TOOLS = ['exec_command', 'shell', 'run_shell_command', 'bash', 'shell_command'];

function shellArgs(tool: string, cmd: string): Record<string, unknown> {
  if (tool === 'exec_command') return { cmd, yield_time_ms: 30_000 };
  if (tool === 'shell') return { command: ['bash', '-lc', cmd] };
  if (tool === 'bash') return { command: cmd, description: 'Run the stand-in command' };
  return { command: cmd, description: 'Run the stand-in command' };
}

// ------------------------------------------------------------------ reading each wire's conversation

const textOf = (c: unknown): string => {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
};

// Codex sends its environment and instructions as user/developer messages in XML-ish tags: not a person's words.
const isFraming = (t: string): boolean => /^\s*<[a-z_]+>/.test(t) || t.startsWith('# AGENTS.md');

function saidResponses(body: any): Said[] {
  const out: Said[] = [];
  for (const it of Array.isArray(body?.input) ? body.input : []) {
    if (it?.type === 'message' || (it?.role && !it.type)) {
      const t = textOf(it.content);
      if (it.role === 'user') out.push({ role: isFraming(t) ? 'system' : 'human', text: t });
      else if (it.role === 'assistant') out.push({ role: 'model', text: t });
      else out.push({ role: 'system', text: t });
    } else if (it?.type === 'function_call' || it?.type === 'local_shell_call' || it?.type === 'custom_tool_call') {
      out.push({ role: 'tool-call', text: `${it.name ?? it.type} ${it.arguments ?? it.input ?? ''}` });
    } else if (typeof it?.type === 'string' && it.type.endsWith('_output')) {
      out.push({ role: 'tool-result', text: textOf(it.output) || JSON.stringify(it.output ?? '') });
    }
  }
  return out;
}

function saidGemini(body: any): Said[] {
  const out: Said[] = [];
  for (const c of Array.isArray(body?.contents) ? body.contents : []) {
    for (const p of Array.isArray(c?.parts) ? c.parts : []) {
      if (p?.functionCall) out.push({ role: 'tool-call', text: `${p.functionCall.name} ${JSON.stringify(p.functionCall.args ?? {})}` });
      else if (p?.functionResponse) out.push({ role: 'tool-result', text: JSON.stringify(p.functionResponse.response ?? {}) });
      else if (typeof p?.text === 'string' && !p.thought) {
        // Gemini CLI puts its session context (date, folder listing) in a first user part of its own
        const framing = /^This is the Gemini CLI\. We are setting up the context/.test(p.text) || /^<session_context>/.test(p.text);
        out.push({ role: c.role === 'model' ? 'model' : framing ? 'system' : 'human', text: p.text });
      }
    }
  }
  return out;
}

function saidChat(body: any): Said[] {
  const out: Said[] = [];
  for (const m of Array.isArray(body?.messages) ? body.messages : []) {
    const t = textOf(m?.content);
    if (m?.role === 'user') out.push({ role: isFraming(t) ? 'system' : 'human', text: t });
    else if (m?.role === 'assistant') {
      if (t) out.push({ role: 'model', text: t });
      for (const tc of Array.isArray(m.tool_calls) ? m.tool_calls : [])
        out.push({ role: 'tool-call', text: `${tc?.function?.name} ${tc?.function?.arguments ?? ''}` });
    } else if (m?.role === 'tool') out.push({ role: 'tool-result', text: t });
    else out.push({ role: 'system', text: t });
  }
  return out;
}

function toolNames(wire: Wire, body: any): string[] {
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  if (wire === 'gemini')
    return tools
      .flatMap((t: any) => (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations.map((f: any) => f?.name) : []))
      .filter(Boolean);
  if (wire === 'chat') return tools.map((t: any) => t?.function?.name).filter(Boolean);
  return tools.map((t: any) => t?.name).filter(Boolean);
}

function fillSchema(schema: any, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 8) return null;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const t = String(Array.isArray(schema.type) ? schema.type[0] : (schema.type ?? '')).toLowerCase();
  if (t === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Array.isArray(schema.required) ? schema.required : Object.keys(schema.properties ?? {}))
      o[k] = fillSchema(schema.properties?.[k], depth + 1);
    return o;
  }
  if (t === 'array') return [];
  if (t === 'string') return 'stand-in';
  if (t === 'number' || t === 'integer') return 0;
  if (t === 'boolean') return false;
  if (schema.anyOf?.[0]) return fillSchema(schema.anyOf[0], depth + 1);
  return null;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const rid = (p: string): string => `${p}${randomBytes(12).toString('hex')}`;

// ------------------------------------------------------------------ the server

export class AgentApi {
  readonly url: string;
  readonly port: number;
  readonly log: LoggedRequest[] = [];
  private readonly server: Server;
  private readonly handlers: RequestHandler[] = [];
  private readonly open = new Set<ServerResponse>();
  private seq = 0;
  private closed = false;

  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(): Promise<AgentApi> {
    let api: AgentApi | undefined;
    const server = createServer((req, res) => void api!.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    api = new AgentApi(server, (server.address() as AddressInfo).port);
    return api;
  }

  /** A handler that may answer a request before the default script (return undefined to pass). */
  onRequest(h: RequestHandler): () => void {
    this.handlers.unshift(h);
    return () => {
      const i = this.handlers.indexOf(h);
      if (i >= 0) this.handlers.splice(i, 1);
    };
  }

  /** Turn requests (optionally of one session id). */
  turns(sessionId?: string): LoggedRequest[] {
    return this.log.filter((r) => r.kind === 'turn' && (!sessionId || r.sessionId === sessionId));
  }

  /** The human prompts sent as new turns, in order, once each (a retry or a later request's history is not new). */
  humanTexts(): string[] {
    const out: string[] = [];
    let seenCount = 0;
    for (const r of this.log) {
      if (r.kind !== 'turn') continue;
      const humans = r.said.filter((s) => s.role === 'human').map((s) => s.text);
      // each request carries the whole conversation: what is new is what lies past the longest one seen
      if (humans.length > seenCount) {
        out.push(...humans.slice(seenCount));
        seenCount = humans.length;
      }
    }
    return out;
  }

  /** Turn requests whose conversation (history included) has a human text containing `text`. */
  requestsContaining(text: string): LoggedRequest[] {
    return this.log.filter((r) => r.kind === 'turn' && r.said.some((s) => s.role === 'human' && s.text.includes(text)));
  }

  /** Turn requests whose LATEST human text contains `text`. */
  requestsFor(text: string): LoggedRequest[] {
    return this.log.filter((r) => r.kind === 'turn' && (r.prompt ?? '').includes(text));
  }

  async waitForRequest(pred: (r: LoggedRequest) => boolean, timeoutMs: number): Promise<LoggedRequest | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.log.find(pred);
      if (hit) return hit;
      if (Date.now() >= deadline || this.closed) return null;
      await sleep(50);
    }
  }

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
  }

  // ---------------------------------------------------------------- serving

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
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    const full = req.url ?? '/';
    const qi = full.indexOf('?');
    const path = qi >= 0 ? full.slice(0, qi) : full;
    const query = qi >= 0 ? full.slice(qi + 1) : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (k === 'authorization' || k === 'x-api-key' || k === 'x-goog-api-key' || v === undefined) continue;
      headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const post = req.method === 'POST';
    const wire: Wire | null =
      post && /\/responses$/.test(path)
        ? 'responses'
        : post && /\/models\/[^/]+:(stream)?[gG]enerateContent$/.test(path)
          ? 'gemini'
          : post && /\/chat\/completions$/.test(path)
            ? 'chat'
            : null;
    const said = wire === 'responses' ? saidResponses(body) : wire === 'gemini' ? saidGemini(body) : wire === 'chat' ? saidChat(body) : [];
    const tools = wire ? toolNames(wire, body) : [];
    const streaming = wire === 'gemini' ? /:streamGenerateContent$/.test(path) : !!body?.stream;
    const kind: RequestKind = !wire ? 'other' : streaming && tools.length ? 'turn' : 'side';
    const humans = said.filter((s) => s.role === 'human');
    const prompt = humans.length ? humans[humans.length - 1].text : null;
    const lastReal = [...said].reverse().find((s) => s.role !== 'system');
    const entry: LoggedRequest = {
      seq: ++this.seq,
      at: Date.now(),
      method: req.method ?? 'GET',
      path,
      query,
      headers,
      body,
      wire,
      kind,
      sessionId: headers['session-id'] ?? headers['x-session-id'] ?? null,
      said,
      prompt,
      toolResultTurn: lastReal?.role === 'tool-result',
      tools,
      markers: kind === 'turn' ? parseMarkers(prompt) : {},
    };
    this.log.push(entry);

    let answer: Answer | undefined;
    for (const h of [...this.handlers]) {
      try {
        answer = await h(entry);
      } catch (e) {
        answer = { error: { status: 500, message: `stand-in handler threw: ${(e as Error).message}` } };
      }
      if (answer) break;
    }
    answer ??= this.defaultAnswer(entry);
    if (answer.hang) return;
    if (res.destroyed) return;
    if (!wire) {
      entry.answer = { status: 404 };
      return this.json(res, 404, { error: { message: `stand-in: no ${entry.method} ${path}`, code: 404 } });
    }
    if (answer.error) {
      const message = answer.error.message ?? `stand-in error ${answer.error.status}`;
      entry.answer = { status: answer.error.status, text: message };
      return this.json(res, answer.error.status, {
        error: { message, type: 'stand_in_error', code: answer.error.status, status: 'UNAVAILABLE' },
      });
    }
    const text = answer.json !== undefined ? JSON.stringify(answer.json) : (answer.text ?? '');
    entry.answer = { status: 200, text, toolCall: answer.toolCall };
    if (wire === 'responses') return this.replyResponses(entry, text, answer, res);
    if (wire === 'gemini') return this.replyGemini(streaming, text, answer, res);
    return this.replyChat(streaming, body, text, answer, res);
  }

  private defaultAnswer(r: LoggedRequest): Answer {
    if (r.kind === 'side') {
      // Gemini CLI asks flash-lite side questions with a JSON schema (model routing, next speaker, …)
      const g = r.body?.generationConfig;
      const schema =
        g?.responseJsonSchema ?? g?.responseSchema ?? r.body?.response_format?.json_schema?.schema ?? r.body?.text?.format?.schema;
      if (schema) return { json: fillSchema(schema) };
      return { text: 'stand-in' };
    }
    if (r.kind !== 'turn') return { text: '' };
    const m = r.markers;
    if (m.error) return { error: { status: m.error } };
    if (m.hang && !r.toolResultTurn) return { hang: true };
    if (m.bash && !r.toolResultTurn) {
      const tool = SHELL_TOOLS.find((t) => r.tools.includes(t));
      if (tool) return { text: 'Running it.', toolCall: { name: tool, args: shellArgs(tool, m.bash) }, slowMs: m.slowMs };
      return { text: `stand-in: no shell tool offered (tools: ${r.tools.join(', ')})` };
    }
    if (m.reply !== undefined) return { text: m.reply, slowMs: r.toolResultTurn ? undefined : m.slowMs };
    if (r.toolResultTurn) return { text: 'The command finished.' };
    return { text: `Stand-in reply to: ${stripMarkers(r.prompt ?? '').slice(0, 200) || '(empty prompt)'}`, slowMs: m.slowMs };
  }

  private json(res: ServerResponse, status: number, obj: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  }

  /** Write SSE frames spread over slowMs (at least every 500 ms something goes out, so no idle timeout trips). */
  private async stream(res: ServerResponse, frames: string[], slowMs: number | undefined, keepalive: string | null): Promise<boolean> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    if (!slowMs) {
      for (const f of frames) res.write(f);
      return true;
    }
    const until = Date.now() + slowMs;
    const per = slowMs / Math.max(1, frames.length);
    for (const f of frames) {
      const next = Math.min(until, Date.now() + per);
      while (Date.now() < next) {
        await sleep(Math.min(500, next - Date.now()));
        if (res.destroyed || this.closed) return false;
        if (keepalive && Date.now() < next) res.write(keepalive);
      }
      if (res.destroyed || this.closed) return false;
      res.write(f);
    }
    return true;
  }

  private async replyResponses(entry: LoggedRequest, text: string, a: Answer, res: ServerResponse): Promise<void> {
    const id = rid('resp_');
    const model = typeof entry.body?.model === 'string' ? entry.body.model : 'stand-in';
    let n = 0;
    const ev = (type: string, data: Record<string, unknown>): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
    const output: any[] = [];
    const frames: string[] = [];
    const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'in_progress', output: [] };
    frames.push(ev('response.created', { response: base }), ev('response.in_progress', { response: base }));
    if (text) {
      const msgId = rid('msg_');
      const idx = output.length;
      frames.push(
        ev('response.output_item.added', {
          output_index: idx,
          item: { id: msgId, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
        }),
      );
      frames.push(
        ev('response.content_part.added', {
          item_id: msgId,
          output_index: idx,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [] },
        }),
      );
      for (const part of pieces(text, a.slowMs))
        frames.push(ev('response.output_text.delta', { item_id: msgId, output_index: idx, content_index: 0, delta: part }));
      frames.push(ev('response.output_text.done', { item_id: msgId, output_index: idx, content_index: 0, text }));
      const done = {
        id: msgId,
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [] }],
      };
      frames.push(ev('response.content_part.done', { item_id: msgId, output_index: idx, content_index: 0, part: done.content[0] }));
      frames.push(ev('response.output_item.done', { output_index: idx, item: done }));
      output.push(done);
    }
    if (a.toolCall) {
      const idx = output.length;
      const item = {
        id: rid('fc_'),
        type: 'function_call',
        status: 'completed',
        call_id: rid('call_'),
        name: a.toolCall.name,
        arguments: JSON.stringify(a.toolCall.args),
      };
      frames.push(ev('response.output_item.added', { output_index: idx, item: { ...item, status: 'in_progress', arguments: '' } }));
      frames.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: idx, delta: item.arguments }));
      frames.push(ev('response.function_call_arguments.done', { item_id: item.id, output_index: idx, arguments: item.arguments }));
      frames.push(ev('response.output_item.done', { output_index: idx, item }));
      output.push(item);
    }
    const inTok = Math.ceil(JSON.stringify(entry.body?.input ?? '').length / 4);
    const outTok = Math.max(1, Math.ceil(text.length / 4));
    const usage = {
      input_tokens: inTok,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outTok,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inTok + outTok,
    };
    frames.push(ev('response.completed', { response: { ...base, status: 'completed', output, usage } }));
    if (await this.stream(res, frames, a.slowMs, null)) res.end();
  }

  private async replyGemini(streaming: boolean, text: string, a: Answer, res: ServerResponse): Promise<void> {
    const usage = (t: string) => ({
      promptTokenCount: 10,
      candidatesTokenCount: Math.max(1, Math.ceil(t.length / 4)),
      totalTokenCount: 10 + Math.ceil(t.length / 4),
    });
    const call = a.toolCall ? [{ functionCall: { name: a.toolCall.name, args: a.toolCall.args } }] : [];
    if (!streaming) {
      const parts = [...(text ? [{ text }] : []), ...call];
      return this.json(res, 200, {
        candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: usage(text),
        modelVersion: 'stand-in',
      });
    }
    const frames: string[] = [];
    const chunk = (parts: unknown[], last: boolean, t: string): string =>
      `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }], ...(last ? { usageMetadata: usage(t) } : {}), modelVersion: 'stand-in' })}\r\n\r\n`;
    const ps = text ? pieces(text, a.slowMs) : [];
    for (const [i, p] of ps.entries()) frames.push(chunk([{ text: p }], i === ps.length - 1 && !call.length, text));
    if (call.length) frames.push(chunk(call, true, text));
    if (!frames.length) frames.push(chunk([{ text: '' }], true, ''));
    if (await this.stream(res, frames, a.slowMs, null)) res.end();
  }

  private async replyChat(streaming: boolean, body: any, text: string, a: Answer, res: ServerResponse): Promise<void> {
    const id = rid('chatcmpl-');
    const model = typeof body?.model === 'string' ? body.model : 'stand-in';
    const created = Math.floor(Date.now() / 1000);
    const tc = a.toolCall
      ? { id: rid('call_'), type: 'function', function: { name: a.toolCall.name, arguments: JSON.stringify(a.toolCall.args) } }
      : null;
    const finish = tc ? 'tool_calls' : 'stop';
    const usage = {
      prompt_tokens: 10,
      completion_tokens: Math.max(1, Math.ceil(text.length / 4)),
      total_tokens: 10 + Math.ceil(text.length / 4),
    };
    if (!streaming) {
      return this.json(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          { index: 0, message: { role: 'assistant', content: text || null, ...(tc ? { tool_calls: [tc] } : {}) }, finish_reason: finish },
        ],
        usage,
      });
    }
    const chunk = (delta: unknown, fin: string | null, extra: Record<string, unknown> = {}): string =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: fin }], ...extra })}\n\n`;
    const frames = [chunk({ role: 'assistant', content: '' }, null)];
    if (text) for (const p of pieces(text, a.slowMs)) frames.push(chunk({ content: p }, null));
    if (tc) frames.push(chunk({ tool_calls: [{ index: 0, ...tc }] }, null));
    frames.push(
      chunk({}, finish),
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      'data: [DONE]\n\n',
    );
    if (await this.stream(res, frames, a.slowMs, ': keepalive\n\n')) res.end();
  }
}

/** A reply's text in pieces: one piece, or ~10 a second over slowMs. */
function pieces(text: string, slowMs: number | undefined): string[] {
  const n = slowMs ? Math.max(2, Math.min(200, Math.ceil(slowMs / 100))) : 1;
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let p = 0; p < text.length; p += size) out.push(text.slice(p, p + size));
  return out.length ? out : [''];
}
