// The one message (ADR-0010 decision 2): a JSON file in the session's inbox, or — when configured —
// a line typed into an interactive session's pane. Written again after a crash it is the same file.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ASK_FILE_PREFIX, type SessionView } from '../evidence/fleet.js';
import { formatDuration } from '../duration.js';
import { typeIntoPane } from '../evidence/tmux.js';
import { writeFileAtomic } from '../store/atomic-file.js';

export function askText(taskId: string, state: string, askWait: number): string {
  return `sunset: your task ${taskId} is ${state}. Please wrap up and write your close-out now; in about ${formatDuration(askWait)} this session will be asked to exit (its conversation stays resumable).`;
}

import { unsafeSegment } from '../doctrine/ids.js';

export async function deliverAsk(config: Config, view: SessionView, task: { id: string; state: string }, now: number): Promise<{ via: 'inbox' | 'pane'; path?: string }> {
  const text = askText(task.id, task.state, config.windows.askWait);
  if (config.fleet.askVia === 'pane' && view.kind === 'interactive' && view.evidence.pane) {
    const r = await typeIntoPane(config.fleet.tmuxSocket, view.evidence.pane.paneId, text, config.probeTimeout);
    if (!r.ok) throw new Error(r.error);
    return { via: 'pane' };
  }
  const bad = unsafeSegment(view.sessionId);
  if (bad) throw new Error(`refusing to use session id ${JSON.stringify(view.sessionId)} as an inbox folder: ${bad}`);
  const dir = join(config.fleet.inboxDir, view.sessionId);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${ASK_FILE_PREFIX}${task.id}.json`);
  const body = { type: 'sunset-exit-ask', taskId: task.id, sessionId: view.sessionId, at: new Date(now).toISOString(), text };
  await writeFileAtomic(file, JSON.stringify(body, null, 2) + '\n');
  return { via: 'inbox', path: file };
}
