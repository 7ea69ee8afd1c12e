// Session ids come from the roster, a program sunset does not control. Before one goes to another program
// as an argv word (`claude stop <id>`) or into a path (the inbox folder), it must be safe to use there.
// Pure, so the verdict can protect such a session outright (`id-unsafe`) and the effectful shells can
// refuse it again at the last moment.

/** An id goes to another program as one argv word; refuse what that program could take for an option. */
export function unsafeId(id: string): string | null {
  if (!id) return 'empty id';
  if (id.length > 256) return 'id longer than 256 characters';
  if (id.startsWith('-')) return 'id starts with "-" and would read as an option';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\x00-\x1f\x7f]/.test(id)) return 'id holds control characters';
  return null;
}

/** A session id used as a folder name must be one path segment. */
export function unsafeSegment(s: string): string | null {
  if (!s || s === '.' || s === '..') return 'empty or a dot segment';
  if (/[/\\\0]/.test(s)) return 'holds a path separator or NUL';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\x00-\x1f\x7f]/.test(s)) return 'holds control characters';
  return null;
}

/** Why this roster row's ids cannot be used safely, or null. `id` is null for a session that has none (interactive). */
export function unsafeSession(id: string | null, sessionId: string): string | null {
  const a = id === null ? null : unsafeId(id);
  if (a) return `id ${JSON.stringify(id)}: ${a}`;
  const b = unsafeSegment(sessionId);
  return b ? `session id ${JSON.stringify(sessionId)}: ${b}` : null;
}
