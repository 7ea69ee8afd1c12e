// Edits a JSON object's top-level members in place, as text, so every byte sunset does not
// own (big integers, key order, escapes, spacing, a trailing newline) stays exactly as written.

/** Where one top-level member sits in the text (half-open spans). */
export interface MemberSpan {
  /** The key as JSON.parse decodes it. */
  key: string;
  /** Just after the `{` or `,` that precedes this member: the member's leading whitespace starts here. */
  leadStart: number;
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

export interface ObjectSpans {
  /** Index of the top-level `{`. */
  open: number;
  /** Index of the matching `}`. */
  close: number;
  /** Every member in text order, duplicates included. */
  members: MemberSpan[];
}

export class JsonEditError extends Error {
  override name = 'JsonEditError';
}

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * Finds the top-level object's members. Meant for text JSON.parse has already accepted; it
 * checks only what it must to find spans, and throws JsonEditError on anything it cannot follow.
 */
export function scanTopLevelObject(text: string): ObjectSpans {
  let i = 0;
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) i = 1; // a byte-order mark is kept as it is
  const skipWs = (): void => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };
  const fail = (what: string): never => {
    throw new JsonEditError(`${what} at offset ${i}`);
  };

  const scanString = (): void => {
    // i is at the opening quote
    i++;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x5c) i += 2;
      else if (c === 0x22) {
        i++;
        return;
      } else i++;
    }
    fail('unterminated string');
  };

  const scanValue = (): void => {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      scanString();
      return;
    }
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x22) {
          scanString();
          continue;
        }
        if (d === 0x7b || d === 0x5b) depth++;
        else if (d === 0x7d || d === 0x5d) {
          depth--;
          if (depth === 0) {
            i++;
            return;
          }
        }
        i++;
      }
      fail('unterminated object or array');
    }
    // number, true, false, null
    const start = i;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isWs(d)) break;
      i++;
    }
    if (i === start) fail('expected a value');
  };

  skipWs();
  if (text.charCodeAt(i) !== 0x7b) fail('expected "{"');
  const open = i;
  i++;
  const members: MemberSpan[] = [];
  let leadStart = i;
  skipWs();
  if (text.charCodeAt(i) === 0x7d) {
    const close = i;
    i++;
    skipWs();
    if (i !== n) fail('unexpected text after the object');
    return { open, close, members };
  }
  for (;;) {
    if (text.charCodeAt(i) !== 0x22) fail('expected a key');
    const keyStart = i;
    scanString();
    const keyEnd = i;
    let key: unknown;
    try {
      key = JSON.parse(text.slice(keyStart, keyEnd));
    } catch {
      fail('bad key');
    }
    skipWs();
    if (text.charCodeAt(i) !== 0x3a) fail('expected ":"');
    i++;
    skipWs();
    const valueStart = i;
    scanValue();
    const valueEnd = i;
    members.push({ key: key as string, leadStart, keyStart, keyEnd, valueStart, valueEnd });
    skipWs();
    const c = text.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      leadStart = i;
      skipWs();
      continue;
    }
    if (c === 0x7d) {
      const close = i;
      i++;
      skipWs();
      if (i !== n) fail('unexpected text after the object');
      return { open, close, members };
    }
    fail('expected "," or "}"');
  }
}

/**
 * Sets top-level members of a JSON object text. An existing key (its last occurrence, the one
 * JSON.parse keeps) has just its value's bytes replaced; a new key is appended after the last
 * member, copying that member's indentation and colon spacing. Keys whose value is undefined
 * are skipped. Everything else in the text is returned unchanged.
 */
export function setTopLevelMembers(text: string, values: Record<string, unknown>): string {
  const spans = scanTopLevelObject(text);
  const lastByKey = new Map<string, MemberSpan>();
  for (const m of spans.members) lastByKey.set(m.key, m);

  const edits: { start: number; end: number; text: string }[] = [];
  const added: [string, string][] = [];
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const json = JSON.stringify(value);
    if (json === undefined) throw new JsonEditError(`value of ${JSON.stringify(key)} is not JSON`);
    const m = lastByKey.get(key);
    if (m) edits.push({ start: m.valueStart, end: m.valueEnd, text: json });
    else added.push([JSON.stringify(key), json]);
  }

  if (added.length > 0) {
    const last = spans.members[spans.members.length - 1];
    if (last) {
      const lead = normaliseLead(text.slice(last.leadStart, last.keyStart));
      const colon = text.slice(last.keyEnd, last.valueStart);
      const ins = added.map(([k, v]) => `,${lead}${k}${colon}${v}`).join('');
      edits.push({ start: last.valueEnd, end: last.valueEnd, text: ins });
    } else {
      const inner = text.slice(spans.open + 1, spans.close);
      const body = added.map(([k, v]) => `\n  ${k}: ${v}`).join(',');
      // `{}` or `{ }` becomes a two-space-indented object; `{\n}` keeps its own newline before `}`
      if (inner.includes('\n')) edits.push({ start: spans.open + 1, end: spans.open + 1, text: body });
      else edits.push({ start: spans.open + 1, end: spans.close, text: `${body}\n` });
    }
  }

  // right to left, so earlier offsets stay valid; an insertion at a value's end sorts after
  // that value's replacement and so lands after the new value
  edits.sort((a, b) => b.start - a.start || b.end - a.end);
  let out = text;
  for (const e of edits) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** A member's leading whitespace, reduced to one line break plus that line's indentation. */
function normaliseLead(lead: string): string {
  const nl = lead.lastIndexOf('\n');
  if (nl < 0) return lead;
  const eol = nl > 0 && lead[nl - 1] === '\r' ? '\r\n' : '\n';
  return eol + lead.slice(nl + 1);
}
