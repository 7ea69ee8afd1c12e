import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JsonEditError, scanTopLevelObject, setTopLevelMembers } from '../src/tasks/json-edit.js';

/** The raw text of every member, in order: lead, key, colon part, value. */
function rawMembers(text: string): { key: string; lead: string; keyRaw: string; colon: string; value: string }[] {
  return scanTopLevelObject(text).members.map((m) => ({
    key: m.key,
    lead: text.slice(m.leadStart, m.keyStart),
    keyRaw: text.slice(m.keyStart, m.keyEnd),
    colon: text.slice(m.keyEnd, m.valueStart),
    value: text.slice(m.valueStart, m.valueEnd),
  }));
}

describe('scanTopLevelObject', () => {
  it('finds members, skipping strings with escapes and nested values', () => {
    const text = '{ "a\\"b" : "x\\\\\\"}" ,"n":{"k":[1,{"}":"]"}]},\n"z":12345678901234567890 }\n';
    const spans = scanTopLevelObject(text);
    expect(spans.members.map((m) => m.key)).toEqual(['a"b', 'n', 'z']);
    expect(spans.members.map((m) => text.slice(m.valueStart, m.valueEnd))).toEqual([
      '"x\\\\\\"}"',
      '{"k":[1,{"}":"]"}]}',
      '12345678901234567890',
    ]);
    expect(text[spans.open]).toBe('{');
    expect(text[spans.close]).toBe('}');
    expect(spans.close).toBe(text.length - 2);
  });

  it('decodes escaped keys the way JSON.parse does', () => {
    const text = '{"exit\\u0052equests":1}';
    expect(scanTopLevelObject(text).members[0].key).toBe('exitRequests');
  });

  it('handles the empty object and a byte-order mark', () => {
    expect(scanTopLevelObject('{}').members).toEqual([]);
    expect(scanTopLevelObject('\uFEFF {\n}\n').members).toEqual([]);
  });

  it('refuses what is not one object', () => {
    for (const bad of ['[]', '"x"', '{"a":1} {}', '{"a":1', '{"a" 1}', '{"a":"x}', '{,}', '']) {
      expect(() => scanTopLevelObject(bad), bad).toThrow(JsonEditError);
    }
  });
});

describe('setTopLevelMembers', () => {
  it('replaces only the value bytes of an existing member', () => {
    const text = '{\n  "big": 12345678901234567890,\n  "releasedAt": null,\n  "u": "\\u00e9\u00e9"\n}\n';
    const out = setTopLevelMembers(text, { releasedAt: '2026-09-02T10:00:00Z' });
    expect(out).toBe('{\n  "big": 12345678901234567890,\n  "releasedAt": "2026-09-02T10:00:00Z",\n  "u": "\\u00e9\u00e9"\n}\n');
  });

  it('appends a new member with the indentation and colon style of the last one', () => {
    expect(setTopLevelMembers('{\n    "a" : 1\n}', { b: 2 })).toBe('{\n    "a" : 1,\n    "b" : 2\n}');
    expect(setTopLevelMembers('{"a":1}', { b: 2, c: 'x' })).toBe('{"a":1,"b":2,"c":"x"}');
    expect(setTopLevelMembers('{\r\n\t"a": 1\r\n}\r\n', { b: 2 })).toBe('{\r\n\t"a": 1,\r\n\t"b": 2\r\n}\r\n');
  });

  it('fills the empty object', () => {
    expect(setTopLevelMembers('{}', { a: 1 })).toBe('{\n  "a": 1\n}');
    expect(setTopLevelMembers('{ }\n', { a: 1, b: 2 })).toBe('{\n  "a": 1,\n  "b": 2\n}\n');
    expect(setTopLevelMembers('{\n}\n', { a: 1 })).toBe('{\n  "a": 1\n}\n');
  });

  it('edits the last of duplicate keys, the one JSON.parse keeps', () => {
    const text = '{"a": 1, "b": 2, "a": 3}';
    const out = setTopLevelMembers(text, { a: 9 });
    expect(out).toBe('{"a": 1, "b": 2, "a": 9}');
    expect(JSON.parse(out)).toEqual({ a: 9, b: 2 });
  });

  it('replaces the last member and appends after it in one go', () => {
    expect(setTopLevelMembers('{"a":1,"z":2}', { z: 3, n: 4 })).toBe('{"a":1,"z":3,"n":4}');
  });

  it('skips undefined values and refuses values that are not JSON', () => {
    expect(setTopLevelMembers('{"a":1}', { a: undefined })).toBe('{"a":1}');
    expect(() => setTopLevelMembers('{"a":1}', { f: () => 1 })).toThrow(JsonEditError);
  });

  it('keeps a byte-order mark', () => {
    const out = setTopLevelMembers('\uFEFF{"a":1}', { b: true });
    expect(out).toBe('\uFEFF{"a":1,"b":true}');
  });

  // Random objects in random layouts: the result parses to the expected object, and every
  // member's raw text (and everything around the members) is unchanged except the edited values.
  const key = fc
    .string({ unit: fc.constantFrom('a', 'b', 'c', 'é', '"', '\\', '\n', '}', '{', ',', ':', ' ', '\u2028', '😀'), maxLength: 4 })
    .filter((k) => k !== '__proto__');
  const jsonValue = fc.jsonValue({ maxDepth: 3 });
  const ws = fc.stringMatching(/^[ \t\r\n]{0,3}$/);

  /** A top-level object serialised by hand with random whitespace around every token, nested values by JSON.stringify with a random indent. */
  const layout = fc
    .record({
      entries: fc.array(fc.tuple(key, jsonValue), { maxLength: 8 }),
      gaps: fc.array(fc.tuple(ws, ws, ws, ws), { minLength: 9, maxLength: 9 }),
      indent: fc.constantFrom(0, 1, 2, 4, '\t'),
      head: ws,
      tail: ws,
      bom: fc.boolean(),
      style: fc.constantFrom('random', 'stringify'),
    })
    .map(({ entries, gaps, indent, head, tail, bom, style }) => {
      if (style === 'stringify') {
        const obj: Record<string, unknown> = {};
        for (const [k, v] of entries) obj[k] = v;
        return JSON.stringify(obj, null, indent) + tail;
      }
      const members = entries.map(
        ([k, v], i) => `${gaps[i][0]}${JSON.stringify(k)}${gaps[i][1]}:${gaps[i][2]}${JSON.stringify(v, null, indent)}${gaps[i][3]}`,
      );
      return `${bom ? '\uFEFF' : ''}${head}{${members.length ? members.join(',') : gaps[8][0]}}${tail}`;
    });

  it('property: result parses to the merged object and unedited bytes are unchanged', () => {
    fc.assert(
      fc.property(
        layout,
        fc.array(fc.tuple(key, jsonValue), { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        (text, newPairs, pickExisting) => {
          const original = JSON.parse(text.replace(/^\uFEFF/, '')) as Record<string, unknown>;
          const existingKeys = Object.keys(original);
          const values: Record<string, unknown> = {};
          for (const i of pickExisting) if (existingKeys.length) values[existingKeys[i % existingKeys.length]] = { edited: i };
          for (const [k, v] of newPairs) values[k] = v;

          const out = setTopLevelMembers(text, values);
          const expected = JSON.parse(JSON.stringify({ ...original, ...values }));
          expect(JSON.parse(out.replace(/^\uFEFF/, ''))).toEqual(expected);

          const before = rawMembers(text);
          const after = rawMembers(out);
          const lastIndex = new Map(before.map((m, i) => [m.key, i]));
          expect(after.length).toBe(before.length + Object.keys(values).filter((k) => !lastIndex.has(k)).length);
          before.forEach((m, i) => {
            const a = after[i];
            expect(a.lead).toBe(m.lead);
            expect(a.keyRaw).toBe(m.keyRaw);
            expect(a.colon).toBe(m.colon);
            if (lastIndex.get(m.key) === i && Object.hasOwn(values, m.key)) expect(a.value).toBe(JSON.stringify(values[m.key]));
            else expect(a.value).toBe(m.value);
          });
          // the text before the first member and after the last original member is untouched
          const sb = scanTopLevelObject(text);
          const sa = scanTopLevelObject(out);
          if (before.length > 0) {
            expect(out.slice(0, sa.members[0].leadStart)).toBe(text.slice(0, sb.members[0].leadStart));
            expect(out.slice(sa.close)).toBe(text.slice(sb.close));
            const lastB = sb.members[sb.members.length - 1];
            const lastA = sa.members[sa.members.length - 1];
            expect(out.slice(lastA.valueEnd, sa.close)).toBe(text.slice(lastB.valueEnd, sb.close));
          } else {
            expect(out.slice(0, sa.open + 1)).toBe(text.slice(0, sb.open + 1));
            expect(out.slice(sa.close + 1)).toBe(text.slice(sb.close + 1));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('property: duplicate keys — only the last occurrence changes', () => {
    fc.assert(
      fc.property(key, jsonValue, jsonValue, jsonValue, (k, first, last, next) => {
        const text = `{${JSON.stringify(k)}: ${JSON.stringify(first)}, "other": 1, ${JSON.stringify(k)}: ${JSON.stringify(last)}}`;
        const out = setTopLevelMembers(text, { [k]: next });
        const ms = rawMembers(out);
        expect(ms[0].value).toBe(JSON.stringify(first));
        expect(ms[2].value).toBe(JSON.stringify(next));
        expect(JSON.parse(out)[k]).toEqual(JSON.parse(JSON.stringify(next)));
      }),
      { numRuns: 200 },
    );
  });
});
