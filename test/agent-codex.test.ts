// The Codex adapter (src/agents/codex.ts, codex-interactive.ts) against the REAL Codex CLI 0.171.0 from npm, in
// tmux, answering through the stand-in model API (sim/agents/): discover finds each prompted session under its own
// session id and transcript and leaves out one never prompted; a turn in flight shows in the transcript, the screen
// and its tool call's process; the exit path types its ask only into an empty box, /quit ends the process (no
// signal: tmux keeps the dead pane and its status), and `codex resume <id>` brings the conversation back.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCliConfig, Discovery, FoundSession } from '../src/agents/agent-cli.js';
import { codex } from '../src/agents/codex.js';
import { EXIT_PATHS } from '../src/agents/index.js';
import type { ExitContext, ExitTarget } from '../src/agents/types.js';
import { parseConfig, type Config } from '../src/config.js';
import type { SessionView } from '../src/evidence/fleet.js';
import { readProcTable } from '../src/evidence/proc.js';
import { run } from '../src/run.js';
import { AgentFleet, cmdline, pidAlive, type AgentSession } from '../sim/agents/agent-fleet.js';

const path = EXIT_PATHS['codex-interactive'];
let fleet: AgentFleet;
let cfg: AgentCliConfig;
let config: Config;
let ctx: ExitContext;

beforeAll(async () => {
  fleet = await AgentFleet.create('codex');
  cfg = { command: fleet.binary, home: join(fleet.home, '.codex') };
  config = parseConfig({ fleet: { tmuxSocket: fleet.tmuxSocket, agents: { codex: cfg } }, windows: { exitConfirm: '20s' } }, { env: {} });
  ctx = { config, poll: 25 };
}, 600_000);
afterAll(async () => {
  await fleet?.destroy();
}, 60_000);

const discover = async (): Promise<Discovery> => codex.discover(await readProcTable(), cfg, Date.now());
const ansi = (s: AgentSession) => fleet.screen(s.paneId, { ansi: true });
/** Poll discover() until `ok` holds; the last discovery either way. */
async function discoverUntil(ok: (d: Discovery) => boolean, timeoutMs: number): Promise<Discovery> {
  let d = await discover();
  await fleet.waitFor(async () => ok((d = await discover())), timeoutMs, 200);
  return d;
}
const viewOf = (s: AgentSession, sessionId: string): SessionView =>
  ({
    id: null,
    sessionId,
    kind: 'interactive',
    pid: s.pid,
    evidence: { pane: { paneId: s.paneId, panePid: s.pid, dead: false, deadTime: null, sessionName: s.tmuxSession, clients: 0 } },
  }) as unknown as SessionView;
const targetOf = (s: AgentSession, f: FoundSession): ExitTarget => ({
  id: null,
  sessionId: f.sessionId,
  kind: 'interactive',
  agent: 'codex',
  pid: s.pid,
  startedAt: f.startedAt,
  paneId: s.paneId,
});

describe('codex (real CLI): discover, the turn, the exit path, resume', () => {
  let a: AgentSession;
  let b: AgentSession;
  let c: AgentSession;
  let found: Map<number, FoundSession>;
  const word = `okapi-${Math.random().toString(36).slice(2, 8)}`;

  it('finds two prompted sessions in two folders by pid, session id and transcript; one never prompted is not a session', async () => {
    a = await fleet.start(undefined, { cwd: fleet.workdir('alpha') });
    b = await fleet.start(undefined, { cwd: fleet.workdir('beta') });
    c = await fleet.start(undefined, { cwd: fleet.workdir('gamma') });
    await fleet.send(a.paneId, `Remember the word ${word}. [[reply:Noted.]]`);
    await fleet.send(b.paneId, 'Hello from beta [[reply:Hi beta.]]');
    await fleet.waitIdle(a);
    await fleet.waitIdle(b);
    const d = await discoverUntil((x) => x.sessions.length === 2, 20_000);
    found = new Map(d.sessions.map((s) => [s.pid, s]));
    expect([...found.keys()].sort()).toEqual([a.pid, b.pid].sort());
    for (const s of [a, b]) {
      const f = found.get(s.pid)!;
      const t = fleet.transcripts().find((x) => x.head?.cwd === s.cwd)!;
      expect(f).toMatchObject({ agent: 'codex', sessionId: t.head!.sessionId, cwd: s.cwd, turnInFlight: false, toolPids: [] });
      expect(f.transcript.path).toBe(t.path);
    }
    // the stand-in was told the session id in each request: the same one discover tied the pane to
    const req = fleet.api.requestsFor(word)[0];
    expect(req?.sessionId).toBe(found.get(a.pid)!.sessionId);
    expect(d.problems.some((p) => p.startsWith(`codex pid ${c.pid} in ${c.cwd}: no transcript yet`))).toBe(true);
    expect(d.problems.filter((p) => p.includes(`pid ${a.pid}`) || p.includes(`pid ${b.pid}`))).toEqual([]);
  }, 180_000);

  it('a turn in flight shows in the transcript and on the screen, with its tool call, then goes', async () => {
    await fleet.send(a.paneId, 'Run it [[bash:sleep 6]] [[slow:1500]]');
    const busy = await discoverUntil((x) => x.sessions.find((s) => s.pid === a.pid)?.turnInFlight === true, 15_000);
    expect(busy.sessions.find((s) => s.pid === a.pid)?.turnInFlight).toBe(true);
    expect(busyOnScreenSoon(a)).resolves.toBe(true);
    const tool = await discoverUntil((x) => (x.sessions.find((s) => s.pid === a.pid)?.toolPids.length ?? 0) > 0, 15_000);
    const pids = tool.sessions.find((s) => s.pid === a.pid)!.toolPids;
    expect(pids.map((p) => cmdline(p)?.join(' ')).some((x) => /sleep 6/.test(x ?? ''))).toBe(true);
    expect(tool.sessions.find((s) => s.pid === b.pid)?.toolPids).toEqual([]);
    const done = await discoverUntil((x) => x.sessions.find((s) => s.pid === a.pid)?.turnInFlight === false, 30_000);
    expect(done.sessions.find((s) => s.pid === a.pid)?.turnInFlight).toBe(false);
    await fleet.waitIdle(a);
    expect(codex.busyOnScreen(ansi(a))).toBe(false);
  }, 90_000);

  it('reads a draft; the ask is not typed over it, and is typed into the empty box', async () => {
    const view = viewOf(b, found.get(b.pid)!.sessionId);
    fleet.typeDraft(b.paneId, 'half a thought');
    expect(await fleet.waitFor(() => codex.draftOnScreen(ansi(b)) === true, 5_000)).toBe(true);
    const before = fleet.api.turns().length;
    const held = await path.ask(ctx, view, {
      id: 't-b',
      text: 'sunset: your task is done, wrap up [[reply:Wrapping up.]]',
      at: Date.now(),
    });
    expect(held).toEqual({ ok: false, via: 'pane', why: 'a person left a draft in its input box' });
    expect(fleet.inputBox(b.paneId).draft).toBe('half a thought');
    // the person clears it
    for (let i = 0; i < 'half a thought'.length; i++) fleet.pressKeys(b.paneId, 'BSpace');
    expect(await fleet.waitFor(() => codex.draftOnScreen(ansi(b)) === false, 5_000)).toBe(true);
    expect(fleet.api.turns().length).toBe(before);

    const typed = await path.ask(ctx, view, {
      id: 't-b',
      text: 'sunset: your task is done, wrap up [[reply:Wrapping up.]]',
      at: Date.now(),
    });
    expect(typed).toEqual({ ok: true, via: 'pane' });
    const req = await fleet.api.waitForRequest((r) => r.kind === 'turn' && (r.prompt ?? '').includes('sunset: your task is done'), 20_000);
    expect(req?.sessionId).toBe(found.get(b.pid)!.sessionId);
    await fleet.waitForScreen(b.paneId, /^• Wrapping up\./m, 20_000);
    await fleet.waitIdle(b);
  }, 90_000);

  it('leave() types /quit and the process ends by itself (no signal)', async () => {
    fleet.tmux(['set-option', '-t', b.tmuxSession, 'remain-on-exit', 'on']);
    const out = await path.leave(ctx, targetOf(b, found.get(b.pid)!));
    expect(out).toMatchObject({ method: 'typed-exit', called: true, exited: true });
    expect(out.ms).toBeLessThan(20_000);
    expect(pidAlive(b.pid)).toBe(false);
    // tmux kept the dead pane, and no signal ended it (tmux 3.3a records no exit status for Codex's pane: its pty
    // closes before the wrapper is reaped; a status, when there is one, is 0)
    const dead = await fleet.waitFor(() => /^\[1\] \[0?\] \[\]$/.test(deadPane(b)), 5_000, 50);
    expect(dead, deadPane(b)).toBe(true);
    expect(await path.confirm(ctx, { pid: b.pid, startedAt: found.get(b.pid)!.startedAt }, Date.now())).toBe(true);
    // gone from discovery; the other session is still found
    const d = await discover();
    expect(d.sessions.map((s) => s.pid)).toEqual([a.pid]);
  }, 60_000);

  it('its resume command, run in a pane as sunset resume would, brings the conversation back', async () => {
    const fa = found.get(a.pid)!;
    await fleet.waitIdle(a);
    const out = await path.leave(ctx, targetOf(a, fa));
    expect(out).toMatchObject({ called: true, exited: true });

    const resume = path.resumeCommand(config, fa.sessionId);
    expect(resume).toEqual(['env', `CODEX_HOME=${join(fleet.home, '.codex')}`, fleet.binary, 'resume', fa.sessionId]);
    const r = path.resumeArgv(config, { sessionId: fa.sessionId, id: null, cwd: fa.cwd, resume }, false);
    const started = await run(r.argv, { timeoutMs: 10_000 });
    expect(started.ok, started.stderr).toBe(true);
    const name = r.argv[r.argv.indexOf('-s') + 1];
    const [paneId, pidText] = fleet.tmux(['display-message', '-p', '-t', name, '#{pane_id} #{pane_pid}']).trim().split(' ');
    const again: AgentSession = { cli: 'codex', pid: Number(pidText), paneId, tmuxSession: name, cwd: fa.cwd, argv: resume };
    await fleet.waitReady(again);
    await fleet.waitIdle(again);
    // tied at once by the id in its argv, to the same transcript
    const d = await discoverUntil((x) => x.sessions.some((s) => s.pid === again.pid), 10_000);
    expect(d.sessions.find((s) => s.pid === again.pid)).toMatchObject({
      sessionId: fa.sessionId,
      transcript: { path: fa.transcript.path },
    });

    await fleet.send(again.paneId, 'What was the word? [[reply:It was in the history.]]');
    const req = await fleet.api.waitForRequest((x) => x.kind === 'turn' && (x.prompt ?? '').includes('What was the word?'), 30_000);
    expect(req!.said.some((x) => x.role === 'human' && x.text.includes(word))).toBe(true);
    await fleet.waitIdle(again);
    const bye = await path.leave(ctx, { ...targetOf(again, fa), startedAt: d.sessions.find((s) => s.pid === again.pid)!.startedAt });
    expect(bye).toMatchObject({ called: true, exited: true });
  }, 120_000);

  it('the never-prompted one is still left alone; /quit ends it too', async () => {
    expect(pidAlive(c.pid)).toBe(true);
    const d = await discover();
    expect(d.sessions).toEqual([]);
    await fleet.send(c.paneId, '/quit');
    expect(await fleet.waitForExit(c.pid, 20_000)).toBe(true);
  }, 60_000);
});

const deadPane = (s: AgentSession) =>
  fleet.tmux(['display-message', '-p', '-t', s.paneId, '[#{pane_dead}] [#{pane_dead_status}] [#{pane_dead_signal}]']).trim();

async function busyOnScreenSoon(s: AgentSession): Promise<boolean> {
  return fleet.waitFor(() => codex.busyOnScreen(ansi(s)) === true, 10_000, 50);
}
