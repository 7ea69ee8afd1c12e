// Typing into an agent CLI's input box and checking that it took: the text shown whole in the box before Enter, and
// the box without it after. Measured on Gemini CLI 0.61 (docs/agents/gemini.md): keys that land while its TUI
// redraws are lost (just after a resume, on a loaded box: the first character, or the Enter), and a '?' in the first
// burst into an empty box opens its shortcuts panel instead; Codex reads a burst during its load as a paste, where
// Enter is a newline. So the first key goes alone and is typed again until the box shows it, the rest follows once
// the box holds the whole text and the screen has settled, and Enter is pressed again while the box still holds it.
// Only into a box seen empty: never over a person's draft; a part of ours left in the box is taken back. Codex lost
// the Enter after the text 5 times in 10 on a loaded box (docs/agents/codex.md). Every tmux command as argv words.
import { tmuxArgv } from '../evidence/tmux.js';
import { run } from '../run.js';

/** An agent CLI's input box on a screen captured with `capture-pane -p -e` (src/evidence/agent-input-box.ts). */
export type BoxReader = (screen: string) => { found: boolean; draft: string };

const PANE_ID = /^%\d+$/;
const flat = (s: string): string => s.replace(/\s+/g, '');

/** Where in `text` its first `n` characters that are not white space end. */
function afterChars(text: string, n: number): number {
  let seen = 0;
  for (let i = 0; i < text.length; i++) {
    if (seen === n) return i;
    if (!/\s/.test(text[i])) seen++;
  }
  return text.length;
}

export interface CheckedTyping {
  /** How long the whole typing may take (each tmux call is bounded by it too). */
  timeoutMs: number;
  /** How often the screen is read while waiting, ms (default 50). */
  poll?: number;
}

/** Type text into the pane's box and send it with Enter, checking the box at each step. */
export async function typeChecked(
  socket: string | null,
  paneId: string,
  text: string,
  readBox: BoxReader,
  o: CheckedTyping,
): Promise<{ ok: boolean; typed: boolean; error?: string }> {
  if (!PANE_ID.test(paneId)) return { ok: false, typed: false, error: `refusing pane target ${JSON.stringify(paneId)}: not a pane id` };
  if (!text || /[\r\n]/.test(text)) return { ok: false, typed: false, error: 'only one line of text is typed' };
  const deadline = Date.now() + o.timeoutMs;
  const poll = o.poll ?? 50;
  const tmux = (...args: string[]) => run(tmuxArgv(socket, ...args), { timeoutMs: o.timeoutMs });
  const screen = async (): Promise<string | null> => {
    const r = await tmux('capture-pane', '-p', '-e', '-t', paneId);
    return r.ok ? r.stdout : null;
  };
  const box = async () => {
    const s = await screen();
    return s === null ? null : readBox(s);
  };
  const until = async (cond: () => Promise<boolean>, ms: number): Promise<boolean> => {
    const end = Math.min(deadline, Date.now() + ms);
    for (;;) {
      if (await cond()) return true;
      if (Date.now() >= end) return false;
      await new Promise((r) => setTimeout(r, poll));
    }
  };
  const keys = async (...k: string[]) => {
    const r = await tmux('send-keys', '-t', paneId, ...k);
    return r.ok ? null : `tmux send-keys failed: ${r.error} ${r.stderr.trim()}`;
  };

  // a TUI redrawing (Gemini CLI just after a resume) shows no box for a moment: it is looked for up to 2 s
  const look = { box: null as Awaited<ReturnType<typeof box>> };
  await until(async () => !!(look.box = await box())?.found, 2_000);
  const before = look.box;
  if (!before) return { ok: false, typed: false, error: 'its pane cannot be read' };
  if (!before.found) return { ok: false, typed: false, error: 'its input box is not shown (a dialog, or another program)' };
  if (flat(before.draft) !== '') return { ok: false, typed: false, error: 'a person left a draft in its input box' };

  // the first key alone, again until the box shows it (a key lost in a redraw)
  const first = text.slice(0, 1);
  let shown = false;
  for (let attempt = 0; attempt < 5 && !shown; attempt++) {
    const err = await keys('-l', first);
    if (err) return { ok: false, typed: attempt > 0, error: err };
    let now = '';
    shown = await until(async () => (now = flat((await box())?.draft ?? '')) === flat(first), 1_000);
    if (!shown && now !== '') return { ok: false, typed: true, error: `the box shows ${JSON.stringify(now)} after the first key` };
  }
  if (!shown) return { ok: false, typed: true, error: 'the first key never showed in its input box' };
  // the rest, then the whole text in the box and the screen still for a moment (an Enter in the same burst can be
  // a newline). Keys lost in a redraw (Gemini CLI just after a resume dropped all but the first) are typed again
  // from where the box stops — only once the screen has held still for a second, so keys still being drawn are
  // never typed twice.
  if (text.length > 1) {
    const err = await keys('-l', text.slice(1));
    if (err) return { ok: false, typed: true, error: err };
  }
  const whole = flat(text);
  let last = '';
  let since = Date.now();
  let retyped = 0;
  let retypeError: string | null = null;
  const settled = await until(async () => {
    const s = (await screen()) ?? '';
    if (s !== last) [last, since] = [s, Date.now()];
    const inBox = flat(readBox(s).draft);
    if (inBox === whole) return Date.now() - since >= 150;
    if (retyped < 2 && Date.now() - since >= 1_000 && whole.startsWith(inBox)) {
      retyped++;
      retypeError = await keys('-l', text.slice(afterChars(text, inBox.length)));
      since = Date.now();
    }
    return retypeError !== null;
  }, o.timeoutMs);
  if (retypeError) return { ok: false, typed: true, error: retypeError };
  if (!settled) {
    // ours alone in the box (a part of the text): taken back, as left there it would read as a person's draft
    const left = (await box())?.draft ?? '';
    if (flat(left) && flat(text).startsWith(flat(left))) await keys(...Array<string>(left.length).fill('BSpace'));
    return {
      ok: false,
      typed: true,
      error: `the text did not show whole in its input box (it showed ${JSON.stringify(left.slice(0, 80))})`,
    };
  }

  const tail = flat(text).slice(-24);
  for (let press = 0; press < 3; press++) {
    const err = await keys('Enter');
    if (err) return { ok: false, typed: true, error: err };
    // sent: the box is drawn without the text, or no longer drawn (a dialog, the CLI leaving), or the pane is gone
    const sent = await until(async () => {
      const b = await box();
      return b === null || !b.found || !flat(b.draft).includes(tail);
    }, 3_000);
    if (sent) return { ok: true, typed: true };
  }
  return { ok: false, typed: true, error: 'Enter did not send the text: it is still in the input box' };
}
