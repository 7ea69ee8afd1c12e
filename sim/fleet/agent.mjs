#!/usr/bin/env node
// Stand-in agent session for sunset's test fleet. Plain JS, no dependencies.
//
// It writes its roster row into the registry, keeps a transcript, and leaves ONLY by its own exit path:
//   background:  a stop request file registry/stop/<id> (written by the stand-in `claude stop <id>`)
//   interactive: the line `/exit` typed into its tmux pane (it is the pane's own process)
// It records every signal it receives (registry/signals.jsonl) and does not exit on any of them, so a
// supervisor that signals an agent is caught. Every clean exit writes registry/ended/<id>-<pid>.json;
// a process gone without that file was killed (TestFleet.unexplainedDeaths()).
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createConnection, createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

function parseArgs(argv) {
  const o = { bgOnExit: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) fail(`missing value for ${a}`);
      return v;
    };
    switch (a) {
      case '--registry':
        o.registry = next();
        break;
      case '--id':
        o.id = next();
        break;
      case '--session-id':
        o.sessionId = next();
        break;
      case '--kind':
        o.kind = next();
        break;
      case '--mode':
        o.mode = next();
        break;
      case '--transcript':
        o.transcript = next();
        break;
      case '--cwd':
        o.cwd = next();
        break;
      case '--started-at':
        o.startedAt = next();
        break;
      case '--bg-on-exit':
        o.bgOnExit = true;
        break;
      case '--ballast-mb':
        o.ballastMB = Number(next());
        break;
      case '--name':
        o.name = next();
        break;
      case '--claude-dir':
        o.claudeDir = next();
        break;
      default:
        fail(`unknown argument ${a}`);
    }
  }
  for (const k of ['registry', 'id', 'sessionId', 'kind', 'mode', 'cwd']) if (!o[k]) fail(`missing --${k}`);
  if (!['background', 'interactive'].includes(o.kind)) fail(`bad --kind ${o.kind}`);
  if (!['idle', 'busy', 'waiting', 'stubborn'].includes(o.mode)) fail(`bad --mode ${o.mode}`);
  if (o.id.includes('/') || o.id.includes('\0') || o.id.includes('..')) fail(`bad --id ${o.id}`);
  return o;
}

function fail(msg) {
  process.stderr.write(`agent.mjs: ${msg}\n`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
// resident memory on purpose (memory-pressure tests): a buffer with every page touched
const ballast = [];
for (let i = 0; i < (opts.ballastMB || 0); i++) {
  const chunk = Buffer.allocUnsafeSlow(1024 * 1024);
  for (let j = 0; j < chunk.length; j += 4096) chunk[j] = (i + j) & 0xff;
  ballast.push(chunk);
}
globalThis.sunsetBallast = ballast; // reachable for the process's life, or GC would hand it back
const REG = opts.registry;
const pid = process.pid;
const p = (...parts) => join(REG, ...parts);
const rowPath = p('agents', `${opts.id}.json`);
const stopPath = p('stop', opts.id);
const startedAt = opts.startedAt || new Date().toISOString();
const status = opts.mode === 'stubborn' ? 'idle' : opts.mode;
let leaving = false;

function now() {
  return new Date().toISOString();
}

function appendLine(file, obj) {
  try {
    appendFileSync(file, `${JSON.stringify(obj)}\n`);
  } catch {
    /* registry gone: the harness is tearing down */
  }
}

function writeAtomic(file, text) {
  const tmp = join(dirname(file), `.${pid}.${Math.random().toString(16).slice(2)}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

function writeRow(fields) {
  const row = {
    id: opts.id,
    sessionId: opts.sessionId,
    kind: opts.kind,
    pid,
    state: 'working',
    status,
    cwd: opts.cwd,
    startedAt,
    ...(opts.name ? { name: opts.name } : {}),
    ...fields,
  };
  writeAtomic(rowPath, `${JSON.stringify(row)}\n`);
}

// A background job's state file, as Claude Code keeps it (<claude dir>/jobs/<id>/state.json): the harness
// changes it (TestFleet.setJob) to make a job blocked, done, or busy with work in flight.
const CLAUDE_DIR = opts.claudeDir || join(REG, '..', '.claude');
const jobFile = join(CLAUDE_DIR, 'jobs', opts.id, 'state.json');
function readJob() {
  try {
    return JSON.parse(readFileSync(jobFile, 'utf8'));
  } catch {
    return null;
  }
}
function writeJob(patch) {
  try {
    mkdirSync(dirname(jobFile), { recursive: true });
    const cur = readJob() ?? {};
    writeAtomic(jobFile, JSON.stringify({ ...cur, ...patch, updatedAt: Date.now() }, null, 2));
  } catch {
    /* folder gone: tearing down */
  }
}

function transcriptSize() {
  if (!opts.transcript) return 0;
  try {
    return statSync(opts.transcript).size;
  } catch {
    return 0;
  }
}

function transcriptLine(obj) {
  if (!opts.transcript) return;
  try {
    appendFileSync(opts.transcript, `${JSON.stringify({ ...obj, sessionId: opts.sessionId, at: now() })}\n`);
  } catch {
    /* transcript removed by the harness (deleteTranscript): stay silent */
  }
}

/** Append a final line and fsync it: the "flush" a real session does on its way out. */
function flushTranscript() {
  const before = transcriptSize();
  if (opts.transcript) {
    try {
      const fd = openSync(opts.transcript, 'a');
      writeSync(fd, `${JSON.stringify({ type: 'exit-flush', sessionId: opts.sessionId, pid, at: now() })}\n`);
      fsyncSync(fd);
      closeSync(fd);
    } catch {
      /* no transcript folder any more */
    }
  }
  return { before, after: transcriptSize() };
}

function writeEnded(how, bytes) {
  const rec = { id: opts.id, how, pid, transcriptBytesBefore: bytes.before, transcriptBytesAfter: bytes.after, at: now() };
  try {
    writeAtomic(p('ended', `${opts.id}-${pid}.json`), `${JSON.stringify(rec)}\n`);
  } catch {
    /* registry gone */
  }
}

function recordRequest(how) {
  appendLine(p('requests.jsonl'), { id: opts.id, pid, how, at: now() });
}

/** Leave by the session's own exit path: flush, record, become a record row, exit 0. */
function leave(how) {
  if (leaving) return;
  leaving = true;
  const bytes = flushTranscript();
  writeEnded(how, bytes);
  try {
    writeRow({ pid: null, state: 'stopped', status: 'idle', endedAt: now() });
  } catch {
    /* registry gone */
  }
  if (opts.kind === 'background' && readJob()?.state === 'working') writeJob({ state: 'stopped', tempo: 'idle' });
  closeSessionFile();
  try {
    unlinkSync(stopPath);
  } catch {
    /* no request pending (typed /exit) */
  }
  // as the real CLI does on its way out: pending idle-notice requests are answered "exited"
  answerNotices('exited').finally(() => process.exit(0));
}

// ---- signals: record, never exit (unless the harness is tearing down) ----
const SIGNALS = [
  'SIGTERM',
  'SIGINT',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
  'SIGCONT',
  'SIGTSTP',
  'SIGTTIN',
  'SIGTTOU',
  'SIGVTALRM',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGURG',
  'SIGPWR',
  'SIGSYS',
  'SIGTRAP',
  'SIGABRT',
  'SIGIO',
  'SIGSTKFLT',
  'SIGPROF',
];
// SIGWINCH is deliberately not recorded: tmux sends it to a pane's process whenever a client attaches
// or the window is resized, which is not something a supervisor did to the session. Nor SIGPIPE: the kernel
// raises it in a process that writes to a socket its peer has closed (an idle notice answered to a sunset that
// has just stopped), as node's default ignores it; nobody sent it.
for (const sig of SIGNALS) {
  try {
    process.on(sig, () => {
      if (existsSync(p('teardown')) || !existsSync(p('agents'))) process.exit(0);
      appendLine(p('signals.jsonl'), { id: opts.id, pid, signal: sig, at: now() });
    });
  } catch {
    /* not a signal on this platform */
  }
}

// ---- start ----
if (!existsSync(REG)) fail(`no registry at ${REG}`);
for (const d of ['agents', 'stop', 'ended']) mkdirSync(p(d), { recursive: true });
if (opts.transcript) {
  mkdirSync(dirname(opts.transcript), { recursive: true });
  transcriptLine({ type: 'start', pid, kind: opts.kind, mode: opts.mode });
}
// the harness's switches for agents started now, read before this agent says it is up (the harness may turn them
// off again as soon as the spawn returns): no messaging socket, or one that offers no idle notices
const NO_SOCKET = existsSync(p('no-socket'));
const NO_NOTIFY = existsSync(p('no-notify'));
appendLine(p('pids.jsonl'), { id: opts.id, pid, kind: opts.kind, at: now() });
if (opts.kind === 'background' && !readJob())
  writeJob({ state: 'working', tempo: 'idle', needs: null, inFlight: { tasks: 0, queued: 0 }, cwd: opts.cwd });
writeRow({});

if (opts.mode === 'busy') {
  // works (writes its transcript) until the harness says its turn is over: setStatus(a, 'idle' | 'waiting')
  let n = 0;
  setInterval(() => {
    let override = '';
    try {
      override = readFileSync(p('status', opts.id), 'utf8').trim();
    } catch {}
    if (override && override !== 'busy') return;
    transcriptLine({ type: 'work', n: ++n });
  }, 200);
}

// Leak guard: the harness removed the temp root → exit quietly.
setInterval(() => {
  if (!existsSync(p('agents'))) process.exit(0);
}, 1000);

// Stop requests (both kinds watch; only a background agent leaves by one).
setInterval(() => {
  if (leaving || !existsSync(stopPath)) return;
  recordRequest('stop');
  if (opts.kind === 'background' && opts.mode !== 'stubborn') return leave('stop');
  transcriptLine({ type: 'ignored-stop' });
  try {
    unlinkSync(stopPath); // acknowledged, but still here
  } catch {
    /* already gone */
  }
}, 25);

// ---- the messaging socket and sessions/<pid>.json, as Claude Code keeps them ----
// A `user` message over the socket starts a turn, as in the real CLI: the agent records it
// (registry/messages.jsonl), is busy for a moment, and writes it into its transcript.
const sessionFile = join(CLAUDE_DIR, 'sessions', `${pid}.json`);
const socketPath = join(REG, '..', 'socks', `${pid}.sock`);
function procStart() {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return null;
  }
}
function closeSessionFile() {
  for (const f of [sessionFile, socketPath]) {
    try {
      unlinkSync(f);
    } catch {
      /* none */
    }
  }
}
const server = createServer((conn) => {
  let buf = '';
  conn.on('data', (d) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let msg = null;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (msg?.type === 'control' && msg.action === 'notify_when_idle') {
        subscribe(msg);
        continue;
      }
      if (msg?.type !== 'user') continue;
      const text = typeof msg.message?.content === 'string' ? msg.message.content : JSON.stringify(msg.message?.content);
      appendLine(p('messages.jsonl'), { id: opts.id, pid, text, at: now() });
      transcriptLine({ type: 'peer-message', text });
    }
  });
  conn.on('error', () => undefined);
});
// notify_when_idle, as 2.1.328 answers it (docs/real-cli-notes.md): the reply socket must sit in our socket's
// folder and end in .sock; one request per reply socket (a second replaces the first); answered once — when the
// session is idle (after a short debounce; not while busy or waiting at a prompt), or "exited" on its way out —
// by connecting to the reply socket and writing one peer_idle_notice line.
const notifySubs = new Map(); // reply path → msg_id
function subscribe(msg) {
  const from = typeof msg.from === 'string' && msg.from.startsWith('uds:') ? msg.from.slice(4) : null;
  const ok = from !== null && dirname(from) === dirname(socketPath) && from.endsWith('.sock') && typeof msg.msg_id === 'string';
  appendLine(p('notify.jsonl'), { id: opts.id, pid, from: msg.from ?? null, msgId: msg.msg_id ?? null, accepted: ok, at: now() });
  if (ok) notifySubs.set(from, msg.msg_id);
}
function currentStatus() {
  try {
    return readFileSync(p('status', opts.id), 'utf8').trim() || status;
  } catch {
    return status;
  }
}
function answerNotices(state) {
  const subs = [...notifySubs];
  notifySubs.clear();
  const one = ([path, msgId]) =>
    new Promise((resolve) => {
      const line = `${JSON.stringify({
        type: 'control',
        action: 'peer_idle_notice',
        orig_msg_id: msgId,
        state,
        finished_at: Date.now(),
        from: `uds:${socketPath}`,
        msgV: 1,
        msg_id: randomUUID(),
      })}\n`;
      const c = createConnection(path);
      const t = setTimeout(() => {
        c.destroy();
        resolve();
      }, 300);
      c.on('connect', () => c.end(line));
      c.on('close', () => {
        clearTimeout(t);
        resolve();
      });
      c.on('error', () => undefined);
      appendLine(p('notices.jsonl'), { id: opts.id, pid, to: path, msgId, state, at: now() });
    });
  return Promise.all(subs.map(one));
}
let idleSince = null;
setInterval(() => {
  if (leaving || !notifySubs.size) return;
  if (currentStatus() !== 'idle') return void (idleSince = null);
  idleSince ??= Date.now();
  if (Date.now() - idleSince >= 50) void answerNotices('idle');
}, 25).unref();

if (!NO_SOCKET) {
  // registry/no-notify: a session whose socket offers no idle notices (an older CLI's), as its peerFeatures say
  const notify = !NO_NOTIFY;
  try {
    mkdirSync(dirname(socketPath), { recursive: true });
    server.listen(socketPath, () => {
      const tmuxPane = process.env.TMUX_PANE;
      const file = {
        pid,
        sessionId: opts.sessionId,
        cwd: opts.cwd,
        startedAt: Date.parse(startedAt),
        procStart: procStart(),
        kind: opts.kind === 'background' ? 'bg' : 'interactive',
        ...(opts.kind === 'background' ? { jobId: opts.id } : {}),
        ...(tmuxPane ? { tmux: `agent-${opts.id}:@0.${tmuxPane}` } : {}),
        messagingSocketPath: socketPath,
        peerProtocol: 1,
        peerFeatures: notify ? ['notify_idle'] : [],
        status: currentStatus(),
      };
      const write = () => {
        try {
          mkdirSync(dirname(sessionFile), { recursive: true });
          writeAtomic(sessionFile, JSON.stringify(file, null, 2));
        } catch {
          /* tearing down */
        }
      };
      write();
      // the file's status follows the session's, rewritten as Claude Code rewrites it when a turn starts or ends
      // (looked at five times a second: a census fleet runs hundreds of these)
      setInterval(() => {
        const now = currentStatus();
        if (leaving || now === file.status) return;
        file.status = now;
        write();
      }, 200).unref();
    });
    server.unref();
  } catch {
    /* no socket: the ask falls back to the inbox */
  }
}

// ---- interactive: read typed lines from the pane ----
if (opts.kind === 'interactive') {
  // the input box as the real CLI draws it (src/evidence/input-box.ts): a rule, "❯" + a no-break space, a rule
  // below, and the cursor put back after the glyph, where the terminal echoes what a person types
  // (a named session's upper rule carries its name, as the real CLI draws it: `───── name ─`)
  const RULE = '─'.repeat(40);
  const TOP = opts.name ? `${'─'.repeat(30)} ${opts.name} ─` : RULE;
  const promptBox = () => process.stdout.write(`\n${TOP}\n\u276f\u00a0\n${RULE}\x1b[1A\r\x1b[2C`);
  process.stdout.write(`stand-in claude session ${opts.id} (${opts.mode}). Type /exit to leave.`);
  promptBox();
  const rl = createInterface({ input: process.stdin, terminal: false, crlfDelay: Infinity });
  rl.on('line', (raw) => {
    const line = raw.replace(/[\r\n]+$/, '').trim();
    appendLine(p('typed.jsonl'), { id: opts.id, pid, line: raw, at: now() });
    if (line === '/exit') {
      recordRequest('exit-typed');
      if (opts.mode === 'stubborn') {
        process.stdout.write('\n(ignoring /exit)');
        promptBox();
        return;
      }
      if (opts.bgOnExit) return toBackground();
      return leave('exit-typed');
    }
    process.stdout.write('\n');
    promptBox();
  });
  rl.on('close', () => {
    appendLine(p('typed.jsonl'), { id: opts.id, pid, line: null, eof: true, at: now() });
  });
}

/** `/exit` in a session started with --bg-on-exit: the conversation goes on as a background session. */
function toBackground() {
  if (leaving) return;
  leaving = true;
  closeSessionFile();
  const args = [
    fileURLToPath(import.meta.url),
    '--registry',
    REG,
    '--id',
    opts.id,
    '--session-id',
    opts.sessionId,
    '--kind',
    'background',
    '--mode',
    opts.mode,
    '--cwd',
    opts.cwd,
    '--started-at',
    now(),
  ];
  if (opts.transcript) args.push('--transcript', opts.transcript);
  const child = spawn(process.execPath, args, { detached: true, stdio: 'ignore', cwd: opts.cwd });
  child.unref();
  const succ = child.pid;
  const deadline = Date.now() + 5000;
  const t = setInterval(() => {
    let rowPid = null;
    try {
      rowPid = JSON.parse(readFileSync(rowPath, 'utf8')).pid;
    } catch {
      /* mid-write or gone */
    }
    if (rowPid === succ || Date.now() > deadline) {
      clearInterval(t);
      const bytes = { before: transcriptSize(), after: transcriptSize() };
      writeEnded('to-background', bytes);
      process.stdout.write('(continuing in the background)\n');
      process.exit(0);
    }
  }, 20);
}
