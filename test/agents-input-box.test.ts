// The input-box rule for Codex and Gemini CLI (sim/agents/input-box.ts) on screens captured from the real CLIs
// (sim/agents/fixtures/<cli>/screens/, written by sim/agents/capture-fixtures.ts). Pure: no CLI runs here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAgentInputBox } from '../sim/agents/input-box.js';

const screen = (cli: string, name: string): string =>
  readFileSync(join(import.meta.dirname, '..', 'sim', 'agents', 'fixtures', cli, 'screens', name), 'utf8');

describe.each(['codex', 'gemini'] as const)('%s input box', (cli) => {
  for (const ext of ['ansi', 'txt']) {
    it(`reads empty, one-line and two-line drafts (${ext})`, () => {
      expect(readAgentInputBox(cli, screen(cli, `idle-empty.${ext}`))).toEqual({ found: true, empty: true, draft: '' });
      expect(readAgentInputBox(cli, screen(cli, `after-turn.${ext}`))).toEqual({ found: true, empty: true, draft: '' });
      expect(readAgentInputBox(cli, screen(cli, `draft-one-line.${ext}`))).toEqual({
        found: true,
        empty: false,
        draft: 'a one-line draft',
      });
      expect(readAgentInputBox(cli, screen(cli, `draft-two-lines.${ext}`))).toEqual({
        found: true,
        empty: false,
        draft: 'a one-line draft\nand a second line',
      });
    });
    it(`a turn in flight leaves the box readable and empty (${ext})`, () => {
      expect(readAgentInputBox(cli, screen(cli, `busy.${ext}`))).toEqual({ found: true, empty: true, draft: '' });
    });
  }
  it('a screen with no box is not found', () => {
    expect(readAgentInputBox(cli, 'some other program\n$ ').found).toBe(false);
  });
});
