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

export interface InputBox {
  /** an input line was found (false: a dialog is open, or this is not a claude screen) */
  found: boolean;
  /** no typed text (a placeholder may show) */
  empty: boolean;
  /** typed text, continuation lines joined with \n, trailing blanks trimmed per line */
  draft: string;
  /** the dim hint text, cursor character included ('' when none) */
  placeholder: string;
  /** 0-based index of the input line in the screen */
  line: number;
  /** number of screen lines the box's text takes */
  lines: number;
  /** the prompt glyph was drawn grey (38;5;246): the session is busy (a turn is running) */
  glyphDimmed: boolean;
}

interface Cell {
  ch: string;
  dim: boolean;
  reverse: boolean;
  fg: string | null;
}

const ESC_SGR = /\x1b\[([0-9;:]*)m/y;
const OTHER_CSI = /\x1b\[[0-9;?]*[A-Za-z]/y;
const GLYPH = '\u276f';
const NBSP = '\u00a0';
const RULE = /^[\u2500]{10,}\s*$/;

/** One screen line → its visible cells with the attributes that matter here. */
function cells(line: string): Cell[] {
  const out: Cell[] = [];
  let dim = false;
  let reverse = false;
  let fg: string | null = null;
  let i = 0;
  while (i < line.length) {
    if (line[i] === '\x1b') {
      ESC_SGR.lastIndex = i;
      const m = ESC_SGR.exec(line);
      if (m) {
        const ps = m[1] === '' ? ['0'] : m[1].split(/[;:]/);
        for (let k = 0; k < ps.length; k++) {
          const p = ps[k];
          if (p === '0' || p === '') {
            dim = false;
            reverse = false;
            fg = null;
          } else if (p === '2') dim = true;
          else if (p === '22') dim = false;
          else if (p === '7') reverse = true;
          else if (p === '27') reverse = false;
          else if (p === '39') fg = null;
          else if (p === '38' || p === '48') {
            const mode = ps[k + 1];
            const take = mode === '5' ? 2 : mode === '2' ? 4 : 0;
            if (p === '38') fg = ps.slice(k + 1, k + 1 + take).join(';');
            k += take;
          } else if (/^3[0-7]$|^9[0-7]$/.test(p)) fg = p;
        }
        i = ESC_SGR.lastIndex;
        continue;
      }
      OTHER_CSI.lastIndex = i;
      if (OTHER_CSI.exec(line)) {
        i = OTHER_CSI.lastIndex;
        continue;
      }
      i++;
      continue;
    }
    const cp = line.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    out.push({ ch, dim, reverse, fg });
    i += ch.length;
  }
  return out;
}

const text = (cs: Cell[]): string => cs.map((c) => c.ch).join('');

/** Read the input box from a `tmux capture-pane -p -e` screen (SGR escapes kept). */
export function readInputBox(ansiScreen: string): InputBox {
  const rows = ansiScreen.replace(/\r/g, '').split('\n').map(cells);
  const none: InputBox = { found: false, empty: false, draft: '', placeholder: '', line: -1, lines: 0, glyphDimmed: false };
  let at = -1;
  for (let r = rows.length - 1; r >= 0; r--) {
    const cs = rows[r];
    if (cs.length >= 2 && cs[0].ch === GLYPH && cs[1].ch === NBSP) {
      at = r;
      break;
    }
  }
  if (at < 0) return none;
  if (at === 0 || !RULE.test(text(rows[at - 1]))) return none;
  const boxRows: Cell[][] = [rows[at].slice(2)];
  let r = at + 1;
  for (; r < rows.length && !RULE.test(text(rows[r])); r++) {
    const cs = rows[r];
    // continuation lines are indented two spaces
    boxRows.push(cs[0]?.ch === ' ' && cs[1]?.ch === ' ' ? cs.slice(2) : cs);
  }
  if (r >= rows.length) return none; // no closing rule: not the box
  const typedLines: string[] = [];
  let placeholder = '';
  for (const cs of boxRows) {
    let typed = '';
    for (let k = 0; k < cs.length; k++) {
      const c = cs[k];
      if (c.dim) {
        placeholder += c.ch;
        continue;
      }
      if (c.reverse && cs[k + 1]?.dim) {
        placeholder += c.ch; // the placeholder's first character, under the cursor
        continue;
      }
      typed += c.ch;
    }
    typedLines.push(typed.replace(/[\s\u00a0]+$/u, ''));
  }
  while (typedLines.length > 1 && typedLines[typedLines.length - 1] === '') typedLines.pop();
  const draft = typedLines.join('\n');
  return {
    found: true,
    empty: draft.replace(/[\s\u00a0]/gu, '') === '',
    draft,
    placeholder: placeholder.trim(),
    line: at,
    lines: boxRows.length,
    glyphDimmed: rows[at][0].fg === '5;246',
  };
}

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
