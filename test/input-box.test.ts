// The input-box rule (src/evidence/input-box.ts) on every screen captured from the real CLI 2.1.328
// (sim/real/fixtures/screens/input-box/, `capture-pane -p -e`): a draft is seen as the person left it, an empty
// box (placeholders, a cleared box, spaces only) as empty, and an open dialog as no box at all.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readInputBox } from '../src/evidence/input-box.js';
import { readInputBoxPlain } from '../sim/real/input-box.js';

const DIR = join(import.meta.dirname, '..', 'sim', 'real', 'fixtures', 'screens', 'input-box');
const DRAFTS: Record<string, string> = {
  'c-draft-one-line': 'a draft left here',
  'd-draft-multiline-backslash-enter': 'line one\nline two',
  'd-draft-multiline-bracketed-paste': 'pasted one\npasted two',
  'd-draft-multiline-shift-enter': 'first\nsecond',
  'e-busy-with-draft': 'typed while busy',
  'e-idle-draft-kept-after-busy': 'typed while busy',
  'i-draft-cursor-at-start': 'abc def',
  'i-draft-cursor-in-middle': 'abc def',
  'i-draft-one-char-cursor-on-it': 'x',
  'k-draft-slash-command-menu-open': '/exi',
  'l-named-session-draft': 'a note for later', // a named session's upper rule carries its name
};
const NO_BOX = new Set(['h-permission-dialog-no-input-box']);
const screens = readdirSync(DIR)
  .filter((n) => n.endsWith('.ansi.txt'))
  .map((n) => n.slice(0, -'.ansi.txt'.length));

describe('the input box of the real CLI', () => {
  it('has fixtures to read', () => expect(screens.length).toBeGreaterThanOrEqual(25));
  it.each(screens)('%s', (name) => {
    const box = readInputBox(readFileSync(join(DIR, `${name}.ansi.txt`), 'utf8'));
    if (NO_BOX.has(name)) return expect(box.found).toBe(false);
    expect(box.found).toBe(true);
    expect({ empty: box.empty, draft: box.draft }).toEqual(
      DRAFTS[name] !== undefined ? { empty: false, draft: DRAFTS[name] } : { empty: true, draft: '' },
    );
  });
  it('a plain capture cannot see dim text: a known placeholder reads maybePlaceholder', () => {
    const plain = readInputBoxPlain(readFileSync(join(DIR, 'f-placeholder-queued-typed.txt'), 'utf8'));
    expect(plain).toMatchObject({ found: true, maybePlaceholder: true });
    expect(readInputBoxPlain(readFileSync(join(DIR, 'c-draft-one-line.txt'), 'utf8')).maybePlaceholder).toBe(false);
  });
});

describe('every pane of a tmux server, read in one call (panesDrafts)', () => {
  it('tells each pane apart whatever its id (%0 … %11: a "%4" in a tmux format was once taken for strftime)', async () => {
    const { execFileSync } = await import('node:child_process');
    const { panesDrafts } = await import('../src/evidence/tmux.js');
    const socket = `sunset-panes-${process.pid}-${Date.now().toString(36)}`;
    const tmux = (...a: string[]) => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...a], { encoding: 'utf8' });
    const want = new Map<string, boolean>();
    let socketPath: string | null = null;
    try {
      for (let i = 0; i < 12; i++) {
        const screen = join(DIR, `${i % 2 ? 'c-draft-one-line' : 'b-idle-after-turn'}.ansi.txt`);
        const pane = tmux(
          'new-session',
          '-d',
          '-P',
          '-F',
          '#{pane_id}',
          '-x',
          '200',
          '-y',
          '50',
          '-s',
          `p${i}`,
          `cat '${screen}'; exec sleep 60`,
        ).trim();
        want.set(pane, i % 2 === 1);
      }
      socketPath = tmux('display-message', '-p', '#{socket_path}').trim();
      const deadline = Date.now() + 10_000;
      let got = new Map<string, boolean | null>();
      while (Date.now() < deadline) {
        got = await panesDrafts(socket, [...want.keys()], 5000);
        if ([...want].every(([p, d]) => got.get(p) === d)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(Object.fromEntries(got)).toEqual(Object.fromEntries(want));
      expect([...want.keys()]).toContain('%4');
    } finally {
      try {
        tmux('kill-server');
      } catch {
        /* gone */
      }
      // the server leaves its socket file behind: ours, so it goes too
      if (socketPath) (await import('node:fs')).rmSync(socketPath, { force: true });
    }
  });
});
