// Reading the input box of a REAL interactive Claude Code session (2.1.328) from a tmux capture, to tell "the
// box is empty" from "a person left a draft". Measured on the screens in fixtures/screens/ (see
// docs/real-cli-notes.md, "The input box"):
//
//   const box = readInputBox(fleet.tmux(['capture-pane', '-p', '-e', '-t', paneId]));   // -e: SGR kept
//   box.found && box.empty        // safe to type /exit
//   box.draft                     // what a person typed (lines joined with \n)
//   box.placeholder               // dim hint text the CLI drew in an empty box ("Press up to edit queued messages")
//
// The rule:
//   - the input line is the LAST line that begins, at column 0, with the prompt glyph U+276F "❯" followed by a
//     NO-BREAK SPACE (U+00A0). Sent prompts in the transcript begin "❯" + an ordinary space; menu rows and
//     permission-dialog choices are indented (" ❯ 1. Yes", "  ❯ /exit"). The line above it is a rule of
//     U+2500 "─"; the box runs down to the next such rule (continuation lines of a multi-line draft are indented
//     two spaces). No such line (a permission dialog or other dialog is open) → found: false.
//   - the terminal cursor is one cell in reverse video (SGR 7); placeholder text is drawn dim (SGR 2), its first
//     character sitting under the cursor (reverse, not dim) — e.g. `❯\u00a0\e[7mP\e[0;2m…ress up to edit queued
//     messages\e[0m`.
//   - typed text = every cell after "❯\u00a0" (and after the two-space indent on continuation lines) that is
//     not dim, leaving out the cursor cell when dim text follows it. empty ⇔ typed text is blank (whitespace only).
//   A plain capture (no -e) cannot tell a placeholder from a draft; readInputBoxPlain() flags the CLI's known
//   placeholder texts as `maybePlaceholder`.
// The rule itself is sunset's (src/evidence/input-box.ts): one implementation, read here for the harness and
// the fixture test (test/input-box.test.ts).
import { readInputBox, type InputBox } from '../../src/evidence/input-box.js';

export { readInputBox, type InputBox };

/** Hint texts 2.1.328 draws dim in an empty box (from its source strings). */
export const KNOWN_PLACEHOLDERS: RegExp[] = [
  /^Try ".*"$/,
  /^Press up to (edit queued messages|select a queued message)/,
  /^Press Enter to edit the selected message/,
  /^Message @.*\u2026$/,
  /^Taking your message back\u2026$/,
];

/**
 * The same from a plain capture (`capture-pane -p`): found/draft as above, but dim text cannot be seen, so a
 * box whose text is one of the CLI's placeholders reads `maybePlaceholder: true` (and empty: false).
 */
export function readInputBoxPlain(plainScreen: string): InputBox & { maybePlaceholder: boolean } {
  const box = readInputBox(plainScreen);
  const maybePlaceholder = box.found && !box.empty && !box.draft.includes('\n') && KNOWN_PLACEHOLDERS.some((re) => re.test(box.draft));
  return { ...box, maybePlaceholder };
}
