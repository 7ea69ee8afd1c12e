// The ask as a file in the session's inbox folder, for a Driver that reads one (askVia `inbox`, and `auto`'s
// fallback). Sunset's own format, the same for every agent CLI: the real CLIs never read it.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { unsafeSegment } from '../doctrine/ids.js';
import { ASK_FILE_PREFIX, type SessionView } from '../evidence/fleet.js';
import { writeFileAtomic } from '../store/atomic-file.js';
import type { AskMessage, Delivered, ExitContext } from './types.js';

export async function askInInbox(ctx: ExitContext, view: SessionView, msg: AskMessage): Promise<Delivered> {
  const bad = unsafeSegment(view.sessionId);
  if (bad)
    return { ok: false, via: 'inbox', why: `refusing to use session id ${JSON.stringify(view.sessionId)} as an inbox folder: ${bad}` };
  const dir = join(ctx.config.fleet.inboxDir, view.sessionId);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${ASK_FILE_PREFIX}${msg.id}.json`);
  const body = { type: 'sunset-exit-ask', taskId: msg.id, sessionId: view.sessionId, at: new Date(msg.at).toISOString(), text: msg.text };
  await writeFileAtomic(file, `${JSON.stringify(body, null, 2)}\n`, { durable: false }); // read only by its live session, which a power cut ends
  return { ok: true, via: 'inbox', path: file };
}
