// The one message (ADR-0010 decision 2), by the way `fleet.askVia` says: over the session's messaging socket,
// so its model is sent the text and can write its close-out (`socket`; `auto`, the default, where the session
// has one); a JSON file in its inbox folder, for a Driver that reads one (`inbox`; `auto`'s fallback); or typed
// into an interactive session's pane (`pane`, never over a person's draft). A delivery that fails sends
// nothing: it is tried again later, never counted as made.
import { open } from 'node:fs/promises';
import type { Config } from '../config.js';
import type { SessionView } from '../evidence/fleet.js';
import { formatDuration } from '../duration.js';
import { exitPathOf } from '../agents/index.js';
import type { Delivered } from '../agents/types.js';

export type { Delivered } from '../agents/types.js';

/** What the session finished: a Driver's task, or its own Claude Code job. */
export interface Finished {
  id: string;
  state: string;
  kind?: 'task' | 'job';
  /** What finished, in a chain kind's own words ("your review of PR 12 is done"); absent: said by `kind`. */
  words?: string;
}

export function askText(f: Finished, askWait: number): string {
  const what = f.words ?? (f.kind === 'job' ? `your job (${f.id}) is done` : `your task ${f.id} is ${f.state}`);
  return `sunset: ${what}. Please wrap up and write your close-out now; in about ${formatDuration(askWait)} this session will be asked to exit (its conversation stays resumable).`;
}

/** The one message, by the session's exit path (src/agents/), which knows how its kind of session is reached. */
export async function deliverAsk(config: Config, view: SessionView, f: Finished, now: number): Promise<Delivered> {
  const path = exitPathOf(view);
  const how = config.fleet.askVia;
  // unreachable from the ask worker (its verdict protects such a session: kind-unknown): nothing is sent
  if (!path) return { ok: false, via: how === 'auto' ? 'socket' : how, why: 'what kind of session this is cannot be told: no exit path' };
  return path.ask({ config }, view, { id: f.id, text: askText(f, config.windows.askWait), at: now });
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
