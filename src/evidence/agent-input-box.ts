// Reading the input box of a REAL Codex (0.171.0) or Gemini CLI (0.61.0) session from a tmux capture with SGR
// kept (`capture-pane -p -e`), to tell "empty" from "a person left a draft": the rule measured on the screens in
// sim/agents/fixtures/<cli>/screens/ (docs/agents/<cli>.md, "Screens"). sunset's Codex and Gemini adapters read
// drafts with it; the agent harness (sim/agents/) reads its panes with it too.
//
//   readAgentInputBox('codex', fleet.screen(paneId, { ansi: true }))  → { found, empty, draft }
//
// Codex: the box is the LAST line that starts, at column 0, with "›" (U+203A) not drawn dim — prompts already
//   sent, above it, are drawn "›" bold+dim (SGR 1;2) on a grey background; the box's is bold (SGR 1). The placeholder ("Ask Codex to
//   do anything") is drawn dim (SGR 2); typed text is not. Further lines of a draft are indented two spaces and
//   run to the first blank line.
// Gemini CLI: the box is the LAST line starting " > " between the last rule (a line of U+2500 "─") and the
//   footer — sent prompts above the rule look the same. The cursor is one reverse-video cell (SGR 7); the
//   placeholder ("Type your message or @path/to/file") is drawn in grey (SGR 38;5;248), typed text in white
//   (38;5;231). Further lines are indented three spaces, up to the footer's blank line.
// A plain capture cannot tell a placeholder from a draft by attributes: the known placeholder texts are used.

export interface AgentInputBox {
  /** the box was found on the screen (false: a dialog or something else holds the screen) */
  found: boolean;
  /** found and nothing typed in it */
  empty: boolean;
  /** what a person typed (lines joined with \n; '' when empty) */
  draft: string;
}

interface Cell {
  ch: string;
  bold: boolean;
  dim: boolean;
  reverse: boolean;
  fg: string | null;
}

/** One captured line as cells with the SGR state each was drawn in. */
export function cellsOf(line: string): Cell[] {
  const cells: Cell[] = [];
  let bold = false;
  let dim = false;
  let reverse = false;
  let fg: string | null = null;
  for (let i = 0; i < line.length; ) {
    if (line[i] === '\u001b' && line[i + 1] === '[') {
      const end = line.slice(i + 2).search(/[@-~]/);
      if (end < 0) break;
      const final = line[i + 2 + end];
      const params = line.slice(i + 2, i + 2 + end);
      i += 3 + end;
      if (final !== 'm') continue;
      const ps = params === '' ? [0] : params.split(';').map(Number);
      for (let k = 0; k < ps.length; k++) {
        const p = ps[k];
        if (p === 0) [bold, dim, reverse, fg] = [false, false, false, null];
        else if (p === 1) bold = true;
        else if (p === 2) dim = true;
        else if (p === 22) [bold, dim] = [false, false];
        else if (p === 7) reverse = true;
        else if (p === 27) reverse = false;
        else if (p === 39) fg = null;
        else if (p === 38 && ps[k + 1] === 5) {
          fg = `5;${ps[k + 2]}`;
          k += 2;
        } else if (p === 38 && ps[k + 1] === 2) {
          fg = `2;${ps[k + 2]};${ps[k + 3]};${ps[k + 4]}`;
          k += 4;
        } else if (p === 48 && ps[k + 1] === 5) k += 2;
        else if (p === 48 && ps[k + 1] === 2) k += 4;
        else if (p >= 30 && p <= 37) fg = String(p);
      }
      continue;
    }
    const cp = line.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    cells.push({ ch, bold, dim, reverse, fg });
    i += ch.length;
  }
  return cells;
}

const plain = (cells: Cell[]): string => cells.map((c) => c.ch).join('');
const NOT_FOUND: AgentInputBox = { found: false, empty: false, draft: '' };

function codexBox(lines: Cell[][]): AgentInputBox {
  let at = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i];
    if (l[0]?.ch === '\u203a' && !l[0].dim && l[1]?.ch === ' ') {
      at = i;
      break;
    }
  }
  if (at < 0) return NOT_FOUND;
  const parts: string[] = [typed(lines[at].slice(2))];
  for (let i = at + 1; i < lines.length; i++) {
    const t = plain(lines[i]);
    if (!t.trim() || !t.startsWith('  ')) break;
    parts.push(typed(lines[i].slice(2)));
  }
  return result(parts);
}

function geminiBox(lines: Cell[][]): AgentInputBox {
  let rule = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^\u2500{20,}\s*$/.test(plain(lines[i]))) {
      rule = i;
      break;
    }
  }
  if (rule < 0) return NOT_FOUND;
  let at = -1;
  for (let i = rule + 1; i < lines.length; i++) {
    if (plain(lines[i]).startsWith(' > ')) {
      at = i;
      break;
    }
  }
  if (at < 0) return NOT_FOUND;
  const parts: string[] = [typed(lines[at].slice(3), '5;248')];
  for (let i = at + 1; i < lines.length; i++) {
    const t = plain(lines[i]);
    if (!t.trim() || !t.startsWith('   ')) break;
    parts.push(typed(lines[i].slice(3), '5;248'));
  }
  return result(parts);
}

/** The typed text of cells: dim cells (and those in the placeholder colour) and the cursor cell left out. */
function typed(cells: Cell[], placeholderFg?: string): string {
  return cells
    .filter((c) => !c.dim && !(placeholderFg && c.fg === placeholderFg) && !(c.reverse && c.ch === ' '))
    .map((c) => c.ch)
    .join('')
    .replace(/\s+$/, '');
}

function result(parts: string[]): AgentInputBox {
  const draft = parts.join('\n').replace(/\s+$/, '');
  return { found: true, empty: draft.trim() === '', draft: draft.trim() === '' ? '' : draft };
}

/** Known placeholder texts, for plain captures. */
export const PLACEHOLDERS: Record<'codex' | 'gemini', RegExp[]> = {
  codex: [/^Ask Codex to do anything$/],
  gemini: [/^Type your message or @path\/to\/file$/],
};

/** The input box of a screen captured with `capture-pane -p -e`. */
export function readAgentInputBox(cli: 'codex' | 'gemini', ansiScreen: string): AgentInputBox {
  const lines = ansiScreen.split('\n').map(cellsOf);
  const box = cli === 'codex' ? codexBox(lines) : geminiBox(lines);
  // a plain capture has no attributes: a known placeholder is an empty box
  if (box.found && !box.empty && PLACEHOLDERS[cli].some((re) => re.test(box.draft.trim()))) return { found: true, empty: true, draft: '' };
  return box;
}
