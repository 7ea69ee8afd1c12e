// Claude Code's small JSON files (sessions/<pid>.json, jobs/<id>/state.json, jobs/pins.json), read for every
// sweep: plain synchronous reads (a few hundred bytes each on the local disk: a stat and a read, where the
// thread pool takes four round trips), and a file is parsed again only when a stat of its path no longer gives
// the (dev, ino, size, mtime, ctime) it was read under. The racy-timestamp rule is the tasks cache's
// (src/tasks/read-tasks.ts): a file younger than its settle time when read is read again next time, since a rewrite
// within the file system's timestamp granularity could keep all five.
import * as fs from 'node:fs';
import { sameKey, settledAt, type StatKey } from '../tasks/read-tasks.js';
import { errorCode } from '../errors.js';

interface Entry extends StatKey {
  text: string;
}

/** A read: the text, 'missing' (no such file: ENOENT, ENOTDIR), or the error's code (unreadable). */
export type CachedText = { ok: true; text: string } | { ok: false; missing: boolean; code: string };

const cache = new Map<string, Entry>();
/** Files seen since the last prune: an entry a whole prune cycle did not ask for goes (an ended session's file). */
let seen = new Set<string>();

/** The file's text, from the cache while its stat is unchanged. Never throws. */
export function readCachedText(file: string): CachedText {
  seen.add(file);
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(file, { throwIfNoEntry: false });
  } catch (e) {
    return { ok: false, missing: errorCode(e) === 'ENOTDIR', code: errorCode(e) ?? 'EIO' };
  }
  if (!st) {
    cache.delete(file);
    return { ok: false, missing: true, code: 'ENOENT' };
  }
  const hit = cache.get(file);
  if (hit && sameKey(hit, st)) return { ok: true, text: hit.text };
  const before = Date.now();
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    cache.delete(file);
    return { ok: false, missing: errorCode(e) === 'ENOENT' || errorCode(e) === 'ENOTDIR', code: errorCode(e) ?? 'EIO' };
  }
  // kept under the stat taken before the read: a write after it moves the stat, so the next read sees it
  if (settledAt(before, st) && Buffer.byteLength(text) === st.size)
    cache.set(file, { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, text });
  else cache.delete(file);
  return { ok: true, text };
}

/** What a parse made of a file's text, kept while the text is the same (a big file parsed once, not each sweep). */
const parsed = new Map<string, { text: string; parse: (text: string) => unknown; value: unknown }>();

/** The file parsed by `parse`, parsed again only when its text changed. Never throws (but for what `parse` throws). */
export function readCachedParsed<T>(file: string, parse: (text: string) => T): { ok: true; value: T } | Extract<CachedText, { ok: false }> {
  const r = readCachedText(file);
  if (!r.ok) {
    parsed.delete(file);
    return r;
  }
  const hit = parsed.get(file);
  if (hit && hit.parse === parse && hit.text === r.text) return { ok: true, value: hit.value as T };
  const value = parse(r.text);
  parsed.set(file, { text: r.text, parse, value });
  return { ok: true, value };
}

/** Drop the entries no read asked for since the last prune (called once per sweep). */
export function pruneFileCache(): void {
  for (const k of cache.keys()) if (!seen.has(k)) cache.delete(k);
  for (const k of parsed.keys()) if (!seen.has(k)) parsed.delete(k);
  seen = new Set();
}
