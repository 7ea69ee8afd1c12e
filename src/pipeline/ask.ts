// The one message (ADR-0010 decision 2), by the way `fleet.askVia` says: over the session's messaging socket,
// so its model is sent the text and can write its close-out (`socket`; `auto`, the default, where the session
// has one); a JSON file in its inbox folder, for a Driver that reads one (`inbox`; `auto`'s fallback); or typed
// into an interactive session's pane (`pane`, never over a person's draft). A delivery that fails sends
// nothing: it is tried again later, never counted as made.
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ASK_FILE_PREFIX, type SessionView } from '../evidence/fleet.js';
import { formatDuration } from '../duration.js';
import { paneDraft, typeIntoPane } from '../evidence/tmux.js';
import { writeFileAtomic } from '../store/atomic-file.js';
import { unsafeSegment } from '../doctrine/ids.js';
import { sendUserMessage } from './socket.js';

/** What the session finished: a Driver's task, or its own Claude Code job. */
export interface Finished {
  id: string;
  state: string;
  kind?: 'task' | 'job';
}

export function askText(f: Finished, askWait: number): string {
  const what = f.kind === 'job' ? `your job (${f.id}) is done` : `your task ${f.id} is ${f.state}`;
  return `sunset: ${what}. Please wrap up and write your close-out now; in about ${formatDuration(askWait)} this session will be asked to exit (its conversation stays resumable).`;
}

export type Delivered = { ok: true; via: 'socket' | 'inbox' | 'pane'; path?: string } | { ok: false; via: 'socket' | 'inbox' | 'pane'; why: string };

export async function deliverAsk(config: Config, view: SessionView, f: Finished, now: number): Promise<Delivered> {
  const text = askText(f, config.windows.askWait);
  const how = config.fleet.askVia;
  if (how === 'pane') {
    const pane = view.kind === 'interactive' ? view.evidence.pane : null;
    if (!pane) return { ok: false, via: 'pane', why: 'no pane holds this session' };
    const draft = await paneDraft(config.fleet.tmuxSocket, pane.paneId, config.probeTimeout);
    if (draft !== false) return { ok: false, via: 'pane', why: draft === null ? 'its pane cannot be read' : 'a person left a draft in its input box' };
    const r = await typeIntoPane(config.fleet.tmuxSocket, pane.paneId, text, config.probeTimeout);
    return r.ok ? { ok: true, via: 'pane' } : { ok: false, via: 'pane', why: r.error ?? 'tmux failed' };
  }
  const socket = view.evidence.socket;
  if (how === 'socket' || (how === 'auto' && socket)) {
    if (!socket) return { ok: false, via: 'socket', why: 'the session names no messaging socket (~/.claude/sessions/<pid>.json)' };
    try {
      await sendUserMessage(socket, text, config.probeTimeout);
      return { ok: true, via: 'socket', path: socket };
    } catch (err: any) {
      return { ok: false, via: 'socket', why: err?.message ?? String(err) };
    }
  }
  const bad = unsafeSegment(view.sessionId);
  if (bad) return { ok: false, via: 'inbox', why: `refusing to use session id ${JSON.stringify(view.sessionId)} as an inbox folder: ${bad}` };
  const dir = join(config.fleet.inboxDir, view.sessionId);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${ASK_FILE_PREFIX}${f.id}.json`);
  const body = { type: 'sunset-exit-ask', taskId: f.id, sessionId: view.sessionId, at: new Date(now).toISOString(), text };
  await writeFileAtomic(file, JSON.stringify(body, null, 2) + '\n', { durable: false }); // read only by its live session, which a power cut ends
  return { ok: true, via: 'inbox', path: file };
}

/**
 * Did this ask already reach the session? Its transcript holds the messages the session was sent: searched
 * (its last 1 MB) for the ask's text, for a replay whose claimant died between the send and marking it sent.
 */
export async function askInTranscript(view: SessionView, text: string): Promise<{ at: string; via: 'socket' } | null> {
  const file = view.evidence.transcript;
  if (!file) return null;
  try {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      const len = Math.min(size, 1 << 20);
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, size - len);
      return buf.toString('utf8').includes(JSON.stringify(text).slice(1, -1)) ? { at: new Date().toISOString(), via: 'socket' } : null;
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
}
