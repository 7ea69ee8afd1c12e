#!/usr/bin/env node
// Stand-in `claude` CLI for sunset's test fleet. Plain JS (ESM), no dependencies.
// Loaded by the generated <root>/bin/claude, so argv[1] is <root>/bin/claude and the registry is
// <root>/registry (SUNSET_FLEET_REGISTRY overrides).
//
//   claude agents --json [--all]     the roster (JSON array; rows without a live pid only with --all), in the
//                                    real CLI's shapes (docs/claude-code.md): interactive rows carry no `id` and
//                                    no `state` and vanish when they end; background records keep no pid and
//                                    no status; startedAt is epoch ms; a background row's state is its job's
//                                    (<root>/.claude/jobs/<id>/state.json: the fleet's root plays its HOME)
//   claude agents [--cwd <path>]     the agent view: a person's TUI; here it prints the rows and sits until killed
//                                    (with --cwd, as the real CLI: only background rows whose job's folder is
//                                    <path>, resolved from its own folder through symlinks, or below it)
//   claude stop <id|prefix>          ask a background session to leave (writes registry/stop/<id>, waits ≤ 3 s)
//   claude attach <id|prefix|name>   an attached client: sits until killed
//   claude --resume <sessionId>      the conversation back, in the foreground (an agent with the same ids)
//   claude --model <m> agents        the agent view too: as the real CLI, the defaults of the sessions it dispatches
//                                    (--model, --permission-mode, --effort, --agent) may come before `agents`
//   claude                           the agent view when $HOME/.claude.json says "defaultToAgentsView": true
//                                    (read as it starts); else a usage error (the stand-in runs no interactive REPL)
//
// It never sends a signal to anything.
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync, renameSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { spawn } from 'node:child_process';

const REG = process.env.SUNSET_FLEET_REGISTRY || resolve(dirname(process.argv[1] ?? '.'), '..', 'registry');
const p = (...parts) => join(REG, ...parts);
const CLAUDE_DIR = join(REG, '..', '.claude');

function die(code, msg) {
  process.stderr.write(`claude: ${msg}\n`);
  process.exit(code);
}

function checkId(id) {
  if (typeof id !== 'string' || id === '') die(2, 'missing session id');
  if (id.includes('/') || id.includes('\0') || id.includes('..') || id.startsWith('.')) die(2, `invalid session id: ${JSON.stringify(id)}`);
  return id;
}

function alive(pid) {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The names in a folder, read once per call of this CLI (a roster of thousands then costs one readdir, not a failed open a row). */
const listings = new Map();
function has(dir, name) {
  let names = listings.get(dir);
  if (!names) {
    try {
      names = new Set(readdirSync(dir));
    } catch {
      names = new Set();
    }
    listings.set(dir, names);
  }
  return names.has(name);
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Every row as stored (agent rows, single records, bulk records), not yet normalised. */
function storedRows() {
  const rows = [];
  let names = [];
  try {
    names = readdirSync(p('agents'));
  } catch {
    die(1, `cannot read the session registry at ${REG}`);
  }
  for (const name of names) {
    if (name.startsWith('.') || !name.endsWith('.json')) continue;
    const row = readJson(p('agents', name));
    if (row && typeof row === 'object' && typeof row.id === 'string') rows.push(row);
  }
  const bulk = readText(p('records.jsonl'));
  if (bulk) {
    for (const line of bulk.split('\n')) {
      if (!line) continue;
      try {
        rows.push(JSON.parse(line));
      } catch {
        /* torn line */
      }
    }
  }
  return rows;
}

/**
 * What `claude agents` prints for a stored row, in the real CLI's shapes; null when the real CLI would list
 * nothing (an interactive session that has ended). Fields starting with `_` are the harness's own.
 */
function present(row) {
  const out = {};
  for (const [k, v] of Object.entries(row)) if (!k.startsWith('_')) out[k] = v;
  const live = out.pid !== null && out.pid !== undefined && alive(out.pid);
  if (row.kind === 'background' && has(join(CLAUDE_DIR, 'jobs'), row.id)) {
    const job = readJson(join(CLAUDE_DIR, 'jobs', row.id, 'state.json'));
    if (job && typeof job.state === 'string') out.state = job.state;
  }
  if (!live) {
    if (row.kind === 'interactive' && !row._keepRecord) return null;
    delete out.pid;
    delete out.status;
    if (row.kind === 'background' && out.state === 'working') out.state = 'stopped';
  }
  if (live && has(p('status'), row.id)) {
    const override = readText(p('status', row.id));
    if (override?.trim()) out.status = override.trim();
  }
  if (row.kind === 'interactive') {
    delete out.id;
    delete out.state;
  }
  if (typeof out.startedAt === 'string' && Number.isFinite(Date.parse(out.startedAt))) out.startedAt = Date.parse(out.startedAt);
  const extra = has(p('extra'), `${row.id}.json`) ? readJson(p('extra', `${row.id}.json`)) : null;
  if (extra && typeof extra === 'object') Object.assign(out, extra);
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k];
  return out;
}

function agents(args) {
  // one line per call: the idle bench counts roster calls (issue 15: none between reconciles when nothing is due)
  try {
    appendFileSync(p('roster-calls.log'), `${Date.now()}\n`);
  } catch {
    /* registry gone */
  }
  const fault = (readText(p('fault')) ?? '').trim();
  if (fault === 'fail') die(1, 'failed to reach the session daemon (injected fault)');
  if (fault === 'hang') {
    setInterval(() => {
      if (!existsSync(p('agents'))) process.exit(0);
    }, 1000);
    return;
  }
  if (fault === 'garbage') {
    process.stdout.write('not json {{{\n');
    return;
  }
  const all = args.includes('--all') || args.includes('-a');
  const json = args.includes('--json');
  let rows = storedRows().map(present).filter(Boolean);
  if (!all) rows = rows.filter((r) => typeof r.pid === 'number');
  rows.sort((a, b) => Number(a.startedAt ?? 0) - Number(b.startedAt ?? 0) || String(a.sessionId).localeCompare(String(b.sessionId)));
  if (json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  // the agent view: a person's screen, from which any background session it lists can be opened; it sits
  const under = viewFilter(args);
  if (under) rows = rows.filter((r) => r.kind === 'background' && listedUnder(under, r));
  for (const r of rows)
    process.stdout.write(`${r.id ?? r.sessionId}\t${r.kind}\t${r.pid ?? '-'}\t${r.state ?? ''}\t${r.status ?? ''}\t${r.cwd}\n`);
  setInterval(() => {
    if (!existsSync(p('agents'))) process.exit(0);
  }, 1000);
  // open, for the harness: it waits for this, not for its argv (a plain `claude` has read its config by now)
  try {
    mkdirSync(p('views'), { recursive: true });
    writeFileSync(p('views', String(process.pid)), '');
  } catch {
    /* registry gone */
  }
}

/** The agent view's --cwd (the last one; `--cwd P` or `--cwd=P`), resolved as the real CLI does; null = all. */
function viewFilter(args) {
  let arg = null;
  args.forEach((w, i) => {
    if (w === '--cwd') arg = args[i + 1] ?? null;
    else if (w.startsWith('--cwd=')) arg = w.slice(6);
  });
  if (!arg) return null;
  const path = resolve(process.cwd(), arg);
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Is a row's job filed under `dir` (its originCwd, else its cwd; a .claude/worktrees/ folder counts as its repository)? */
function listedUnder(dir, row) {
  const job = readJson(join(CLAUDE_DIR, 'jobs', row.id, 'state.json')) ?? {};
  const cwd = job.cwd ?? row.cwd ?? '';
  const rel = relative(dir, job.originCwd || (/^(.+?)[/\\]\.claude[/\\]worktrees[/\\]/.exec(cwd)?.[1] ?? cwd));
  return rel.split(/[/\\]/, 1)[0] !== '..' && !isAbsolute(rel);
}

/** A live background row whose id is `id`, or starts with it (the real CLI takes a prefix); else null. */
function findBackground(id) {
  const rows = storedRows().filter((r) => r.kind === 'background');
  const exact = rows.find((r) => r.id === id);
  if (exact) return exact;
  const byPrefix = rows.filter((r) => typeof r.id === 'string' && r.id.startsWith(id));
  return byPrefix.length === 1 ? byPrefix[0] : null;
}

function stop(args) {
  const given = checkId(args[0]);
  // like the real CLI: only a background session's short id (or a prefix of it); an interactive one is no match
  const row = findBackground(given);
  if (!row) die(1, `No session matching '${given}'`);
  const id = row.id;
  const pid = row.pid;
  if (pid === null || pid === undefined || !alive(pid)) {
    process.stdout.write(`stopped ${id}\n`); // the real CLI answers the same for a session already stopped
    return;
  }
  const stopFile = p('stop', id);
  const tmp = p('stop', `.${id}.${process.pid}.tmp`);
  writeFileSync(tmp, `${JSON.stringify({ id, pid, by: process.pid, at: new Date().toISOString() })}\n`);
  renameSync(tmp, stopFile);
  if (row._light) {
    process.stdout.write(`stop requested for ${id}\n`);
    return;
  }
  const endedFile = p('ended', `${id}-${pid}.json`);
  const deadline = Date.now() + 3000;
  const poll = () => {
    if (!alive(pid)) return done(`stopped ${id}`);
    if (!existsSync(stopFile) && !existsSync(endedFile)) return done(`stop acknowledged by ${id}`);
    if (Date.now() > deadline) return done(`stop requested for ${id} (still running)`);
    setTimeout(poll, 20);
  };
  const done = (msg) => {
    process.stdout.write(`${msg}\n`);
    process.exit(0);
  };
  poll();
}

/**
 * `claude --resume <sessionId>`: the conversation comes back — an agent with the same id and session id,
 * in the foreground (a tmux pane, or the caller's terminal), interactive when stdin is a terminal.
 */
function resume(args) {
  const sid = checkId(args[0]);
  const row = storedRows().find((r) => r.sessionId === sid);
  if (!row) die(1, `no conversation found with session id ${sid}`);
  const cwd = process.cwd();
  const slug = cwd.replace(/\//g, '-');
  const transcript = join(REG, '..', 'projects', slug, `${sid}.jsonl`);
  const agent = join(dirname(new URL(import.meta.url).pathname), 'agent.mjs');
  const kind = process.stdin.isTTY ? 'interactive' : 'background';
  const child = spawn(
    process.execPath,
    [
      agent,
      '--registry',
      REG,
      '--id',
      row.id,
      '--session-id',
      sid,
      '--kind',
      kind,
      '--mode',
      'idle',
      '--cwd',
      cwd,
      '--transcript',
      transcript,
    ],
    { stdio: 'inherit' },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
}

function attach(args) {
  if (!args[0]) die(2, 'missing session id or name');
  // An attached client: it just sits. Leaves on its own when the fleet's registry is removed.
  setInterval(() => {
    if (!existsSync(p('agents'))) process.exit(0);
  }, 1000);
}

/** Does $HOME/.claude.json say to open the agent view by default? */
function defaultToAgentsView() {
  try {
    return JSON.parse(readFileSync(join(process.env.HOME ?? '', '.claude.json'), 'utf8')).defaultToAgentsView === true;
  } catch {
    return false;
  }
}

const args = process.argv.slice(2);
while (['--model', '--permission-mode', '--effort', '--agent'].includes(args[0]) && args[2] === 'agents') args.splice(0, 2);
if (args.length === 0 && defaultToAgentsView()) args.push('agents');
const [verb, ...rest] = args;
switch (verb) {
  case 'agents':
    agents(rest);
    break;
  case 'stop':
    stop(rest);
    break;
  case 'attach':
    attach(rest);
    break;
  case '--resume':
  case '-r':
    resume(rest);
    break;
  case '--version':
  case '-v':
    process.stdout.write('0.0.0 (sunset test-fleet stand-in)\n');
    break;
  default:
    die(2, `usage: claude agents --json --all | claude stop <id> | claude attach <id> (got ${JSON.stringify(verb ?? '')})`);
}
