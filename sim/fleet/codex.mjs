#!/usr/bin/env node
// sunset test fleet: a stand-in of the Codex TUI (codex 0.171.0, docs/agents/codex.md), small and with no
// dependencies, found by sunset's REAL Codex adapter unchanged (src/agents/codex.ts): run as `node <this script>`
// with the script as fleet.agents.codex.command, CODEX_HOME in its environment. Like the real TUI:
//   - its session's rollout is created on its first prompt (the words after its options, or the first line typed):
//     $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local start>-<id>.jsonl, first line a session_meta (id, its cwd,
//     the thread's creation a moment after the process start, originator codex-tui), then event_msg task_started /
//     task_complete around each turn;
//   - its screen: sent prompts "›" bold+dim, `• Working (Ns • esc to interrupt)` during a turn, the input box "› "
//     (bold "›") with the placeholder "Ask Codex to do anything" dim when empty, typed text not dim;
//   - keys in raw mode: characters, Backspace, Enter; `/quit` (or `/exit`) + Enter leaves at once (exit 0).
// A turn takes about a second and answers one line. Signals: the defaults (a SIGHUP or SIGTERM ends it).
// Options: -C/--cd <dir> (its folder). SUNSET_STANDIN_SESSION_ID (env): the session id to use (the test fleet's
// Driver names it in a task file before the first prompt); else a random one.
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PLACEHOLDER = 'Ask Codex to do anything';
const TURN_MS = 1000;
const startMs = Date.now();

const argv = process.argv.slice(2);
const words = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '-C' || a === '--cd') process.chdir(argv[++i]);
  else if (a.startsWith('--cd=')) process.chdir(a.slice(5));
  else if (!a.startsWith('-')) words.push(a);
}
const cwd = process.cwd();
const home = process.env.CODEX_HOME || join(process.env.HOME || '/tmp', '.codex');
const sessionId = process.env.SUNSET_STANDIN_SESSION_ID || randomUUID();

let rollout = null;
const history = []; // lines above the box, as drawn
let draft = '';
let turn = null; // { started: ms, timer }

const pad = (n) => String(n).padStart(2, '0');
const iso = () => new Date().toISOString();

function write(obj) {
  appendFileSync(rollout, `${JSON.stringify({ timestamp: iso(), ...obj })}\n`);
}

/** The thread is created on the first prompt: its rollout and session_meta. */
function createThread() {
  const d = new Date(startMs);
  const day = join(home, 'sessions', String(d.getFullYear()), pad(d.getMonth() + 1), pad(d.getDate()));
  mkdirSync(day, { recursive: true });
  const stamp = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}-${pad(d.getMinutes())}-${pad(d.getSeconds())}`;
  rollout = join(day, `rollout-${stamp}-${sessionId}.jsonl`);
  const created = new Date(Math.max(Date.now(), startMs + 50)).toISOString();
  writeFileSync(
    rollout,
    `${JSON.stringify({
      timestamp: iso(),
      type: 'session_meta',
      payload: {
        session_id: sessionId,
        id: sessionId,
        timestamp: created,
        cwd,
        originator: 'codex-tui',
        cli_version: '0.171.0-standin',
        source: 'cli',
        thread_source: 'user',
        model_provider: 'standin',
      },
    })}\n`,
  );
}

function draw() {
  const out = ['\x1b[H\x1b[2J'];
  out.push('\x1b[1m>_ OpenAI Codex\x1b[0m \x1b[2m(stand-in)\x1b[0m\r\n\r\n');
  for (const l of history.slice(-30)) out.push(`${l}\r\n`);
  out.push('\r\n');
  if (turn) {
    const s = Math.floor((Date.now() - turn.started) / 1000);
    out.push(`• \x1b[2mWorking\x1b[0m \x1b[2m(${s}s • \x1b[0;1mesc\x1b[0;2m to interrupt)\x1b[0m\r\n\r\n`);
  }
  out.push(draft ? `\x1b[1m›\x1b[0m ${draft}` : `\x1b[1m›\x1b[0m \x1b[2m${PLACEHOLDER}\x1b[0m`);
  out.push('\r\n\r\n  \x1b[2mstand-in-model default · ');
  out.push(cwd);
  out.push('\x1b[0m');
  process.stdout.write(out.join(''));
}

function startTurn(text) {
  if (!rollout) createThread();
  history.push(`\x1b[1;2m›\x1b[0m ${text}`, '');
  write({ type: 'event_msg', payload: { type: 'task_started', turn_id: randomUUID() } });
  write({ type: 'event_msg', payload: { type: 'user_message', message: text } });
  turn = { started: Date.now(), timer: setInterval(draw, 250) };
  draw();
  setTimeout(() => {
    clearInterval(turn.timer);
    turn = null;
    const answer = `Done: ${text.length > 60 ? `${text.slice(0, 57)}…` : text}`;
    history.push(`• ${answer}`, '');
    write({ type: 'event_msg', payload: { type: 'agent_message', message: answer } });
    write({ type: 'event_msg', payload: { type: 'task_complete', last_agent_message: answer } });
    draw();
  }, TURN_MS);
}

function enter() {
  const text = draft.trim();
  if (text === '/quit' || text === '/exit') {
    process.stdout.write('\x1b[H\x1b[2J');
    process.exit(0);
  }
  if (!text || turn) return; // a line typed mid-turn stays in the box
  draft = '';
  startTurn(text);
}

function onData(buf) {
  const s = buf.toString('utf8');
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\x1b') {
      // an escape sequence (arrows, focus, a paste's brackets): passed over
      const m = /^(\[[0-9;?]*[ -/]*[@-~]|O.|.)?/.exec(s.slice(i + 1));
      i += m?.[0].length ?? 0;
      continue;
    }
    if (c === '\r' || c === '\n') enter();
    else if (c === '\x7f' || c === '\b') draft = [...draft].slice(0, -1).join('');
    else if (c === '\x03') process.exit(0);
    else if (c >= ' ') draft += c;
  }
  draw();
}

if (process.stdin.isTTY) process.stdin.setRawMode(true);
process.stdin.on('data', onData);
process.stdin.on('end', () => process.exit(0));
draw();
if (words.length) setTimeout(() => startTurn(words.join(' ')), 100);
