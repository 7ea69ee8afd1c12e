// Does an interactive Claude Code session's input box hold a person's draft? Read from its pane (`capture-pane
// -p -e`: SGR kept), by the rule measured on the real CLI 2.1.328 (docs/real-cli-notes.md, "The input box";
// sim/real/fixtures/screens/input-box/): the input line is the LAST line that begins, at column 0, with "❯"
// followed by a no-break space, under a rule of "─"; the box runs down to the next rule (continuation lines of a
// multi-line draft are indented two spaces). The cursor is one reverse-video cell; placeholder text is dim, its
// first character under the cursor. Typed text = every cell after "❯\u00a0" that is not dim, the cursor cell
// left out when dim text follows it. No such line (a dialog is open) = not found: unknown, nothing is typed.
// Pure.

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

// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC starts the terminal's escape sequences this reads
const ESC_SGR = /\x1b\[([0-9;:]*)m/y;
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC starts the terminal's escape sequences this reads
const OTHER_CSI = /\x1b\[[0-9;?]*[A-Za-z]/y;
const GLYPH = '\u276f';
const NBSP = '\u00a0';
// a rule of ─; a named session's upper rule carries its name near the end (`───── pane-one ─`)
const RULE = /^\u2500{10,}(?: .* \u2500+)?\s*$/u;

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
