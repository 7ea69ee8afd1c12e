// sunset's Gemini CLI adapter (src/agents/gemini.ts, gemini-interactive.ts) on the REAL Gemini CLI 0.61.0 from npm,
// run by sim/agents/ against the stand-in model API in a private HOME and tmux server: discover ties each session's
// pid to its session id and transcript, and leaves out a process it cannot tie; a turn in flight shows in the
// transcript, the screen and the tool calls' processes; the exit path asks by typing into the box (never over a
// draft), leaves by /quit (the process ends by itself: no signal), and its resume brings the conversation back.
// Pure tests of the screen reads (fixtures captured from the real CLI), argv and the tie come first.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentCliConfig, Discovery } from '../src/agents/agent-cli.js';
import { agentCliOf } from '../src/agents/clis.js';
import { gemini, readGeminiArgv, TIE_WINDOW_MS, tieFolder } from '../src/agents/gemini.js';
import type { ChatFile } from '../src/agents/gemini-files.js';
import { EXIT_PATHS, exitPathOf } from '../src/agents/index.js';
import type { ExitContext, ExitTarget } from '../src/agents/types.js';
import { parseConfig } from '../src/config.js';
import type { SessionView } from '../src/evidence/fleet.js';
import { type ProcInfo, readProcTable } from '../src/evidence/proc.js';
import { AgentFleet, type AgentSession, pidAlive } from '../sim/agents/agent-fleet.js';

const screen = (name: string): string =>
  readFileSync(join(import.meta.dirname, '..', 'sim', 'agents', 'fixtures', 'gemini', 'screens', name), 'utf8');

describe('gemini: pure reads', () => {
  it('reads a draft and the busy marker on screens captured from the real CLI (ansi and plain)', () => {
    for (const ext of ['ansi', 'txt']) {
      const at = (n: string) => [gemini.draftOnScreen(screen(`${n}.${ext}`)), gemini.busyOnScreen(screen(`${n}.${ext}`))];
      expect(at('idle-empty'), ext).toEqual([false, false]);
      expect(at('after-turn'), ext).toEqual([false, false]);
      expect(at('draft-one-line'), ext).toEqual([true, false]);
      expect(at('draft-two-lines'), ext).toEqual([true, false]);
      expect(at('busy'), ext).toEqual([false, true]);
      expect(at('busy-with-typed-message'), ext).toEqual([false, true]);
      expect(at('tool-call-running'), ext).toEqual([false, true]);
    }
    // no box on the screen (a dialog, another program): unknown
    expect(gemini.draftOnScreen('$ ls\nfile\n')).toBeNull();
    expect(gemini.busyOnScreen('$ ls\n(esc to cancel, 3s)\n')).toBeNull();
  });

  it('knows the CLI by its script, its relaunch and its command; leaves out runs that are no session', () => {
    const cmds = new Set(['gemini']);
    const script = '/x/node_modules/@google/gemini-cli/bundle/gemini.js';
    expect(readGeminiArgv(['node', script], cmds)).toEqual({ session: true, id: null });
    expect(readGeminiArgv(['/usr/bin/node', '--max-old-space-size=12052', script, '-i', 'hi'], cmds)).toEqual({ session: true, id: null });
    expect(readGeminiArgv(['node', '/usr/local/bin/gemini', '--resume', 'AD2A94D0-CD0C-40A9-AD30-8745398D5612'], cmds)).toEqual({
      session: true,
      id: 'ad2a94d0-cd0c-40a9-ad30-8745398d5612',
    });
    expect(readGeminiArgv(['node', script, '--session-id=ad2a94d0-cd0c-40a9-ad30-8745398d5612'], cmds)?.id).toBe(
      'ad2a94d0-cd0c-40a9-ad30-8745398d5612',
    );
    expect(readGeminiArgv(['node', script, '--resume', 'latest'], cmds)).toEqual({ session: true, id: null });
    expect(readGeminiArgv(['node', script, '-p', 'one turn'], cmds)).toEqual({ session: false, id: null });
    expect(readGeminiArgv(['node', script, 'mcp', 'list'], cmds)).toEqual({ session: false, id: null });
    expect(readGeminiArgv(['node', script, '-i', 'mcp'], cmds)).toEqual({ session: true, id: null });
    expect(readGeminiArgv(['node', '/x/codex.js'], cmds)).toBeNull();
    expect(readGeminiArgv(['bash', '-c', 'sleep 8'], cmds)).toBeNull();
  });

  it('ties a process only to the one transcript begun just after it, or the one its argv names', () => {
    const proc = (pid: number, startMs: number, id: string | null = null) => ({
      info: { pid, ppid: 1, state: 'S', startMs, argv: [] } as ProcInfo,
      cwd: '/w',
      id,
    });
    const file = (sessionId: string | null, startMs: number, mtimeMs = startMs): ChatFile => ({
      path: `/c/${sessionId}-${startMs}`,
      mtimeMs,
      head: sessionId ? { sessionId, startMs } : null,
    });
    const T = 1_000_000_000;
    const tie = (ps: ReturnType<typeof proc>[], fs: ChatFile[]) => {
      const r = tieFolder(ps, fs);
      return { ties: r.ties.map((t) => [t.proc.info.pid, t.session.id]), untied: r.untied.map((u) => u.proc.info.pid) };
    };
    expect(tie([proc(1, T)], [file('a', T + 8000), file('old', T - 3_600_000, T + 9000)])).toEqual({ ties: [[1, 'a']], untied: [] });
    expect(tie([proc(1, T)], [])).toEqual({ ties: [], untied: [1] }); // nothing written yet
    expect(tie([proc(1, T)], [file('a', T + TIE_WINDOW_MS + 1)])).toEqual({ ties: [], untied: [1] });
    // two started in one folder together: neither is known
    expect(tie([proc(1, T), proc(2, T + 500)], [file('a', T + 8000), file('b', T + 8200)])).toEqual({ ties: [], untied: [1, 2] });
    // started apart: each has its own
    expect(tie([proc(1, T), proc(2, T + 600_000)], [file('a', T + 8000), file('b', T + 608_000)]).ties).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    // a resume names its session; its later file (a new minute) is where it grows, and no other process takes it
    const resumed = tieFolder([proc(1, T, 'a'), proc(2, T - 1000)], [file('a', T - 86_400_000), file('a', T + 5000, T + 9000)]);
    expect(resumed.ties.map((t) => [t.proc.info.pid, t.session.id, t.session.files.at(-1)!.mtimeMs])).toEqual([[1, 'a', T + 9000]]);
    expect(resumed.untied.map((u) => u.proc.info.pid)).toEqual([2]);
    expect(tie([proc(1, T, 'zz')], [file('a', T + 8000)]).untied).toEqual([1]);
    // a transcript written since it started that does not read could be its own: unknown
    expect(tie([proc(1, T)], [file('a', T + 8000), file(null, 0, T + 9000)]).untied).toEqual([1]);
  });

  it('is in the tables: AGENT_CLIS, and EXIT_PATHS for an interactive gemini session', () => {
    expect(agentCliOf('gemini')).toBe(gemini);
    const p = EXIT_PATHS['gemini-interactive'];
    expect(exitPathOf({ kind: 'interactive', agent: 'gemini' })).toBe(p);
    expect(exitPathOf({ kind: 'background', agent: 'gemini' })).toBeNull();
    expect({ how: p.how, method: p.method, needsPane: p.needsPane, passesId: p.passesId }).toEqual({
      how: '/quit typed into its pane',
      method: 'typed-exit',
      needsPane: true,
      passesId: false,
    });
    const cfg = parseConfig({ fleet: { agents: { gemini: { command: '/opt/g/gemini' } } } }, { env: {} });
    expect(p.resumeCommand(cfg, 's1')).toEqual(['/opt/g/gemini', '--resume', 's1']);
    expect(gemini.resumeCommand(gemini.defaults, 's1')).toEqual(['gemini', '--resume', 's1']);
    // a home moved by the config (<dir>/.gemini) goes with it, as GEMINI_CLI_HOME
    expect(gemini.resumeCommand({ command: 'gemini', home: '/srv/g/.gemini' }, 's1')).toEqual([
      'env',
      'GEMINI_CLI_HOME=/srv/g',
      'gemini',
      '--resume',
      's1',
    ]);
    expect(gemini.quit).toBe('/quit');
  });
});

// ------------------------------------------------------------------------------------------- the real CLI

const fleets: AgentFleet[] = [];
afterAll(async () => {
  for (const f of fleets) await f.destroy();
}, 60_000);

async function newFleet() {
  const fleet = await AgentFleet.create('gemini');
  fleets.push(fleet);
  const cfg: AgentCliConfig = { command: fleet.binary, home: join(fleet.home, '.gemini') };
  const config = parseConfig(
    { fleet: { tmuxSocket: fleet.tmuxSocket, agents: { gemini: cfg } }, windows: { exitConfirm: '20s' }, probeTimeout: '10s' },
    { env: {} },
  );
  const discover = async (): Promise<Discovery> => gemini.discover(await readProcTable(), cfg, Date.now());
  return { fleet, cfg, config, discover };
}

/** Poll discover until the condition holds (returns the last discovery either way). */
async function discoverUntil(discover: () => Promise<Discovery>, cond: (d: Discovery) => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let d = await discover();
  while (!cond(d) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    d = await discover();
  }
  return d;
}

describe('gemini: discover on the real CLI', () => {
  it('finds two sessions in two folders with their ids, transcripts and pids; one not yet written, or two in one folder, are no session', async () => {
    const { fleet, discover } = await newFleet();
    const a = await fleet.start(undefined, { cwd: fleet.workdir('alpha') });
    const b = await fleet.start(undefined, { cwd: fleet.workdir('beta') });
    await fleet.send(a.paneId, 'first of alpha [[reply:Alpha here.]]');
    await fleet.send(b.paneId, 'first of beta [[reply:Beta here.]]');
    await fleet.waitIdle(a);
    await fleet.waitIdle(b);
    const d = await discoverUntil(discover, (x) => x.sessions.length === 2, 15_000);
    expect(d.problems).toEqual([]);
    const byPid = new Map(d.sessions.map((s) => [s.pid, s]));
    for (const [s, folder] of [
      [a, 'alpha'],
      [b, 'beta'],
    ] as const) {
      const found = byPid.get(s.pid)!;
      expect(found, folder).toBeDefined();
      const t = fleet.transcripts().find((x) => x.path === found.transcript.path);
      expect(t?.head?.sessionId).toBe(found.sessionId);
      expect(t?.path).toContain(`/tmp/${folder}/chats/session-`);
      expect(found).toMatchObject({ agent: 'gemini', cwd: s.cwd, turnInFlight: false, toolPids: [] });
    }
    expect(new Set(d.sessions.map((s) => s.sessionId)).size).toBe(2);

    // two started together in one folder: neither can be told from the other; a third, just started, has no
    // transcript yet (the CLI writes its first line a few seconds after its box is drawn)
    const twin = fleet.workdir('twins');
    const [c1, c2] = await Promise.all([fleet.start(undefined, { cwd: twin }), fleet.start(undefined, { cwd: twin })]);
    const fresh = await fleet.start(undefined, { cwd: fleet.workdir('fresh'), waitReady: false });
    // (on a loaded box its node may take a moment to be the pane's process: looked for until it is)
    const early = await discoverUntil(discover, (x) => x.problems.some((p) => p.includes(`pid ${fresh.pid} `)), 10_000);
    expect(early.sessions.map((s) => s.pid).sort()).toEqual([a.pid, b.pid].sort());
    expect(early.problems.some((p) => p.includes(`pid ${fresh.pid} `) && p.includes('not a session'))).toBe(true);
    // each twin is no session, for one of two words: both transcripts written (either could be its own), or only one
    // so far (it could be the other's too); which one a run sees is the CLI's timing
    const untied = (x: Discovery, pid: number) =>
      x.problems.some(
        (p) =>
          p.startsWith(`gemini pid ${pid} in ${twin}: `) &&
          (p.includes('2 transcripts could be its own') || /could be another process's too: not a session/.test(p)),
      );
    const later = await discoverUntil(discover, (x) => [c1, c2].every((c) => untied(x, c.pid)), 20_000);
    for (const c of [c1, c2]) expect(untied(later, c.pid), later.problems.join('\n')).toBe(true);
    expect(later.sessions.map((s) => s.pid)).not.toContain(c1.pid);
    expect(later.sessions.map((s) => s.pid)).not.toContain(c2.pid);
    // [run] Gemini CLI 0.61 writes a session's transcript before its first prompt: once it is there, the session is tied
    const tied = await discoverUntil(discover, (x) => x.sessions.some((s) => s.pid === fresh.pid), 20_000);
    expect(tied.sessions.find((s) => s.pid === fresh.pid)).toMatchObject({ cwd: fresh.cwd, turnInFlight: false });
  }, 180_000);

  it('a turn in flight: the transcript and the screen say so, then not; a tool call is a process of its own; a draft shows', async () => {
    const { fleet, discover } = await newFleet();
    const s = await fleet.start();
    await fleet.send(s.paneId, 'hello [[reply:Hi.]]');
    await fleet.waitIdle(s);
    const id = (await discoverUntil(discover, (x) => x.sessions.length === 1, 15_000)).sessions[0]?.sessionId;
    expect(id).toBeTruthy();
    const mine = async () => (await discover()).sessions.find((x) => x.pid === s.pid);
    const ansi = () => fleet.screen(s.paneId, { ansi: true });

    await fleet.send(s.paneId, 'take your time [[slow:8000]]');
    expect(await fleet.waitFor(async () => (await mine())?.turnInFlight === true && gemini.busyOnScreen(ansi()) === true, 8_000)).toBe(
      true,
    );
    expect((await mine())?.sessionId).toBe(id);
    await fleet.waitForScreen(s.paneId, fleet.spec.replyLine('Stand-in reply to: take your time'), 30_000);
    expect(await fleet.waitFor(async () => (await mine())?.turnInFlight === false && gemini.busyOnScreen(ansi()) === false, 10_000)).toBe(
      true,
    );

    // a shell tool call: its processes are the session's children, not the CLI's relaunch
    await fleet.waitIdle(s);
    await fleet.send(s.paneId, 'run it [[bash:sleep 6]]');
    let tools: number[] = [];
    expect(await fleet.waitFor(async () => (tools = (await mine())?.toolPids ?? []).length > 0, 15_000)).toBe(true);
    const argvs = tools.map(
      (p) =>
        fleet
          .processes()
          .find((x) => x.pid === p)
          ?.argv.join(' ') ?? '',
    );
    expect(argvs.some((a) => /sleep 6/.test(a))).toBe(true);
    expect(argvs.some((a) => a.includes('gemini.js'))).toBe(false);
    expect(await fleet.waitFor(async () => (await mine())?.toolPids.length === 0, 30_000)).toBe(true);

    await fleet.waitIdle(s);
    fleet.typeDraft(s.paneId, 'a person is typing');
    expect(await fleet.waitFor(() => gemini.draftOnScreen(ansi()) === true, 5_000)).toBe(true);
    expect(gemini.busyOnScreen(ansi())).toBe(false);
  }, 180_000);
});

describe('gemini-interactive: the exit path on the real CLI', () => {
  it('asks by typing into an empty box, not over a draft; /quit ends the process by itself; resume brings the conversation back', async () => {
    const { fleet, config, discover } = await newFleet();
    const path = EXIT_PATHS['gemini-interactive'];
    const ctx: ExitContext = { config, poll: 50 };
    const word = `okapi-${Math.random().toString(36).slice(2, 8)}`;
    const s: AgentSession = await fleet.start();
    await fleet.send(s.paneId, `Remember the word ${word}. [[reply:Noted.]]`);
    await fleet.waitIdle(s);
    const found = (await discoverUntil(discover, (x) => x.sessions.length === 1, 15_000)).sessions[0];
    expect(found?.pid).toBe(s.pid);
    const view = {
      sessionId: found.sessionId,
      kind: 'interactive',
      pid: s.pid,
      evidence: { pane: { paneId: s.paneId, dead: false, clients: 0, sessionName: s.tmuxSession } },
    } as unknown as SessionView;
    const target: ExitTarget = {
      id: null,
      sessionId: found.sessionId,
      kind: 'interactive',
      agent: 'gemini',
      pid: s.pid,
      startedAt: found.startedAt,
      paneId: s.paneId,
    };

    // the ask: one message, typed whole and sent: the stand-in gets it as a turn
    const asked = await path.ask(ctx, view, {
      id: 't1',
      text: 'Your task is finished: please wrap up. [[reply:Wrapping up.]]',
      at: Date.now(),
    });
    expect(asked).toEqual({ ok: true, via: 'pane' });
    expect(await fleet.api.waitForRequest((r) => r.kind === 'turn' && (r.prompt ?? '').includes('please wrap up'), 20_000)).not.toBeNull();
    await fleet.waitForScreen(s.paneId, fleet.spec.replyLine('Wrapping up.'), 20_000);
    await fleet.waitIdle(s);

    // a person's draft: nothing is typed, neither the ask nor /quit
    fleet.typeDraft(s.paneId, 'my own words');
    expect(await fleet.waitFor(async () => (await path.draft!(ctx, view)) === true, 5_000)).toBe(true);
    const refused = await path.ask(ctx, view, { id: 't1', text: 'wrap up again', at: Date.now() });
    expect(refused).toMatchObject({ ok: false, via: 'pane' });
    const held = await path.leave(ctx, target);
    expect(held).toMatchObject({ called: false, exited: false });
    expect(fleet.inputBox(s.paneId).draft).toBe('my own words');
    expect(pidAlive(s.pid)).toBe(true);
    expect(fleet.api.requestsFor('wrap up again')).toEqual([]);
    fleet.pressKeys(s.paneId, ...Array.from({ length: 'my own words'.length }, () => 'BSpace'));
    expect(await fleet.waitFor(async () => (await path.draft!(ctx, view)) === false, 5_000)).toBe(true);

    // /quit: the process ends by itself (only keys were sent: tmux send-keys), and its pane with it
    const left = await path.leave(ctx, target);
    expect(left).toMatchObject({ method: 'typed-exit', called: true, exited: true });
    expect(pidAlive(s.pid)).toBe(false);
    expect(await fleet.waitFor(() => !fleet.hasTmuxSession(s.tmuxSession), 5_000)).toBe(true);
    expect(await path.confirm(ctx, target, Date.now())).toBe(true);

    // resume: the path's own command in a new tmux session on the configured socket, in the session's folder
    const resume = path.resumeCommand(config, found.sessionId);
    expect(resume).toEqual(['env', `GEMINI_CLI_HOME=${fleet.home}`, fleet.binary, '--resume', found.sessionId]);
    const run = path.resumeArgv(config, { sessionId: found.sessionId, id: null, cwd: s.cwd, resume }, false);
    expect(run.attach).toContain(fleet.tmuxSocket);
    // the fleet's environment alone: when the resume starts the tmux server, the pane inherits it, and Gemini CLI
    // runs headless (and exits at once) under CI=true, which a CI runner sets
    await execa(run.argv[0], run.argv.slice(1), { env: fleet.env, extendEnv: false });
    const name = run.argv[run.argv.indexOf('-s') + 1];
    const [paneId, pid] = fleet.tmux(['list-panes', '-t', name, '-F', '#{pane_id} #{pane_pid}']).trim().split(' ');
    const again: AgentSession = { ...s, pid: Number(pid), paneId, tmuxSession: name };
    await fleet.waitReady(again);
    await fleet.waitIdle(again);
    const back = await discoverUntil(discover, (x) => x.sessions.some((y) => y.pid === again.pid), 15_000);
    expect(back.sessions.find((y) => y.pid === again.pid)?.sessionId).toBe(found.sessionId);
    const ask2 = await path.ask(
      ctx,
      { ...view, evidence: { pane: { paneId, dead: false, clients: 0, sessionName: name } } } as SessionView,
      {
        id: 't2',
        text: 'What was the word? [[reply:It was in the history.]]',
        at: Date.now(),
      },
    );
    expect(ask2.ok, JSON.stringify(ask2)).toBe(true);
    const req = await fleet.api.waitForRequest((r) => r.kind === 'turn' && (r.prompt ?? '').includes('What was the word?'), 20_000);
    expect(req?.said.some((x) => x.role === 'human' && x.text.includes(word))).toBe(true);
    await fleet.waitIdle(again);
    const out = await path.leave(ctx, { ...target, pid: again.pid, paneId, startedAt: null });
    expect(out).toMatchObject({ called: true, exited: true });
  }, 240_000);
});
