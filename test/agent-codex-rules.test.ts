// The Codex adapter's pure rules (src/agents/codex*.ts): its screens (the real CLI's, captured in
// sim/agents/fixtures/codex/screens/), its argv, how a process is tied to a transcript, and a turn in flight by a
// transcript's tail. No CLI runs here; test/agent-codex.test.ts runs the real one.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_CLIS, agentCliOf } from '../src/agents/clis.js';
import { codexRecogniser, codexSessions, parseCodexArgs } from '../src/agents/codex-procs.js';
import { dayOf, parseHead, Rollouts, turnInFlightOf, type RolloutHead } from '../src/agents/codex-rollouts.js';
import { CREATE_WINDOW_MS, tieCodex, type CodexCandidate } from '../src/agents/codex-tie.js';
import { busyOnScreen, codex, draftOnScreen } from '../src/agents/codex.js';
import { EXIT_PATHS, exitPathOf } from '../src/agents/index.js';
import { parseConfig } from '../src/config.js';
import type { ProcInfo, ProcTable } from '../src/evidence/proc.js';

const screen = (name: string): string =>
  readFileSync(join(import.meta.dirname, '..', 'sim', 'agents', 'fixtures', 'codex', 'screens', name), 'utf8');

describe('Codex screens (the real 0.171.0 TUI, captured)', () => {
  for (const ext of ['ansi', 'txt']) {
    it(`reads a draft, an empty box, and the busy marker (${ext})`, () => {
      expect(draftOnScreen(screen(`idle-empty.${ext}`))).toBe(false);
      expect(draftOnScreen(screen(`after-turn.${ext}`))).toBe(false);
      expect(draftOnScreen(screen(`draft-one-line.${ext}`))).toBe(true);
      expect(draftOnScreen(screen(`draft-two-lines.${ext}`))).toBe(true);
      expect(draftOnScreen(screen(`busy.${ext}`))).toBe(false);
      expect(busyOnScreen(screen(`busy.${ext}`))).toBe(true);
      expect(busyOnScreen(screen(`idle-empty.${ext}`))).toBe(false);
      expect(busyOnScreen(screen(`after-turn.${ext}`))).toBe(false);
      expect(busyOnScreen(screen(`draft-one-line.${ext}`))).toBe(false);
    });
  }
  it('sees nothing where no input box is drawn: unknown', () => {
    expect(draftOnScreen('$ some shell\n')).toBeNull();
    expect(busyOnScreen('• Working (3s • esc to interrupt)\n')).toBeNull();
  });
});

describe('the table lines', () => {
  it('codex is read, and its sessions leave by /quit typed into their pane', () => {
    expect(agentCliOf('codex')).toBe(codex);
    expect(AGENT_CLIS.codex.defaults).toEqual({ command: 'codex', home: '~/.codex' });
    const p = exitPathOf({ agent: 'codex', kind: 'interactive' });
    expect(p).toBe(EXIT_PATHS['codex-interactive']);
    expect({ how: p!.how, method: p!.method, needsPane: p!.needsPane, passesId: p!.passesId }).toEqual({
      how: '/quit typed into its pane',
      method: 'typed-exit',
      needsPane: true,
      passesId: false,
    });
    expect(exitPathOf({ agent: 'codex', kind: 'background' })).toBeNull();
  });
  it('resumes with codex resume <id>, by the configured command', () => {
    const id = '01a23c75-b10b-77a2-8a88-6fa5eca9b97a';
    const set = parseConfig({ fleet: { agents: { codex: { command: '/opt/codex/bin/codex' } } } }, { env: {} });
    expect(EXIT_PATHS['codex-interactive'].resumeCommand(set, id)).toEqual(['/opt/codex/bin/codex', 'resume', id]);
    // a home moved by the config goes with it, as CODEX_HOME
    const moved = parseConfig({ fleet: { agents: { codex: { command: 'codex', home: '/srv/codex' } } } }, { env: {} });
    expect(EXIT_PATHS['codex-interactive'].resumeCommand(moved, id)).toEqual(['env', 'CODEX_HOME=/srv/codex', 'codex', 'resume', id]);
    const off = parseConfig({ fleet: { agents: { codex: false } } }, { env: {} });
    expect(EXIT_PATHS['codex-interactive'].resumeCommand(off, id)).toEqual(['codex', 'resume', id]);
    const e = { sessionId: id, id: null, cwd: '/w', resume: ['codex', 'resume', id] };
    expect(EXIT_PATHS['codex-interactive'].resumeArgv(off, e, true).argv).toEqual([
      'tmux',
      'new-window',
      '-c',
      '/w',
      '--',
      'codex',
      'resume',
      id,
    ]);
  });
});

describe('codex argv', () => {
  const id = '01A23C75-B10B-77A2-8A88-6FA5ECA9B97A';
  it.each([
    [[], { session: true, resume: null, cd: null }],
    [['fix the bug'], { session: true, resume: null, cd: null }],
    [['-m', 'o3', '-C', '/w', 'resume', id], { session: true, resume: id.toLowerCase(), cd: '/w' }],
    [['resume', '--last'], { session: true, resume: 'unknown', cd: null }],
    [['resume', 'my-name'], { session: true, resume: 'unknown', cd: null }],
    [['resume'], { session: true, resume: 'unknown', cd: null }],
    [['--cd=sub', 'fork', id], { session: true, resume: null, cd: 'sub' }],
    [['-c', 'model="x"', 'exec', 'hi'], { session: false, resume: null, cd: null }],
    [['app-server', '--listen', 'unix://'], { session: false, resume: null, cd: null }],
    [['--version'], { session: false, resume: null, cd: null }],
  ])('%j', (args, want) => {
    expect(parseCodexArgs(args)).toEqual(want);
  });
});

describe('which processes are Codex sessions', () => {
  const P = (pid: number, ppid: number, argv: string[]): ProcInfo => ({ pid, ppid, state: 'S', startMs: 1_000 * pid, argv });
  const table = (ps: ProcInfo[]): ProcTable => ({ procs: new Map(ps.map((p) => [p.pid, p])), children: new Map() });
  const pkg = '/c/node_modules/@openai/codex';
  const links: Record<string, string> = { '/usr/local/bin/codex': `${pkg}/bin/codex.js` };
  const recognise = codexRecogniser(new Set(), 'codex', (p) => links[p] ?? p);

  it('takes the top of each codex tree, not the native TUI, the daemon or a tool call', () => {
    const t = table([
      P(10, 1, ['tmux', 'new-session', '--', `${pkg}/bin/codex.js`]),
      P(11, 10, ['node', `${pkg}/bin/codex.js`]),
      P(12, 11, [`${pkg}-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`]),
      P(13, 12, ['/h/.codex/packages/app-server-daemon/releases/0.171.0/bin/codex', 'app-server', '--listen', 'unix://']),
      P(14, 13, ['sleep', '8']),
      P(20, 10, ['/usr/bin/node', '/usr/local/bin/codex', 'resume', '01a23c75-b10b-77a2-8a88-6fa5eca9b97a']),
      P(30, 1, ['/h/.codex/packages/app-server-daemon/releases/0.171.0/bin/codex', 'app-server', 'daemon', 'pid-update-loop']),
      P(40, 10, ['node', '/usr/local/bin/codex', 'exec', 'hi']),
      P(50, 10, ['/opt/native/codex', '-C', '/w']),
      P(60, 10, ['node', '/somewhere/else/tool.js']),
      { ...P(70, 10, ['node', `${pkg}/bin/codex.js`]), state: 'Z' },
    ]);
    const s = codexSessions(t, recognise);
    expect(s.map((x) => x.pid)).toEqual([11, 20, 50]);
    expect(s[1].args.resume).toBe('01a23c75-b10b-77a2-8a88-6fa5eca9b97a');
    expect(s[2].args.cd).toBe('/w');
  });
});

describe('tying a process to its transcript', () => {
  const T0 = Date.parse('2026-12-03T15:00:00Z');
  let n = 0;
  const head = (cwd: string, createdMs: number, o: Partial<RolloutHead> = {}): RolloutHead => ({
    path: `/h/sessions/r${++n}.jsonl`,
    sessionId: `id-${n}`,
    cwd,
    createdMs,
    originator: 'codex-tui',
    ...o,
  });
  const proc = (pid: number, cwd: string, startMs: number, o: Partial<CodexCandidate> = {}): CodexCandidate => ({
    pid,
    cwd,
    startMs,
    resume: null,
    ...o,
  });

  it('ties each process to the one transcript of its folder created just after it started', () => {
    const a = head('/a', T0 + 5_000);
    const b = head('/b', T0 + 9_000);
    const old = head('/a', T0 - 3_600_000); // an earlier session in the same folder
    const r = tieCodex([proc(1, '/a', T0), proc(2, '/b', T0 + 1_000)], [a, b, old]);
    expect(r.ties).toEqual([
      { pid: 1, head: a },
      { pid: 2, head: b },
    ]);
    expect(r.problems).toEqual([]);
  });

  it('leaves out a process never prompted (no transcript), and says so', () => {
    const r = tieCodex([proc(1, '/a', T0)], [head('/a', T0 + CREATE_WINDOW_MS + 1)]);
    expect(r.ties).toEqual([]);
    expect(r.problems.join('\n')).toMatch(/codex pid 1 in \/a: no transcript yet \(never prompted\)/);
  });

  it('leaves out two processes of one folder that could both own a transcript', () => {
    const h = head('/a', T0 + 5_000);
    const r = tieCodex([proc(1, '/a', T0), proc(2, '/a', T0 + 3_000)], [h]);
    expect(r.ties).toEqual([]);
    expect(r.problems).toHaveLength(2);
  });

  it('leaves out a process with two candidate transcripts (/new soon after the start)', () => {
    const r = tieCodex([proc(1, '/a', T0)], [head('/a', T0 + 5_000), head('/a', T0 + 8_000)]);
    expect(r.ties).toEqual([]);
    expect(r.problems[0]).toMatch(/2 transcripts could be its/);
  });

  it('gives up a tie when a later transcript of its folder is no one’s (it may have moved there with /new)', () => {
    const r = tieCodex([proc(1, '/a', T0)], [head('/a', T0 + 5_000), head('/a', T0 + 600_000)]);
    expect(r.ties).toEqual([]);
    expect(r.problems[0]).toMatch(/later transcript of its folder is no one's/);
  });

  it('a later transcript that is another live process’s does not unsettle the first', () => {
    const a = head('/a', T0 + 5_000);
    const b = head('/a', T0 + 600_000);
    const r = tieCodex([proc(1, '/a', T0), proc(2, '/a', T0 + 598_000)], [a, b]);
    expect(r.ties.map((t) => [t.pid, t.head.sessionId])).toEqual([
      [1, a.sessionId],
      [2, b.sessionId],
    ]);
  });

  it('passes over `codex exec` transcripts of the same folder', () => {
    const a = head('/a', T0 + 5_000);
    const r = tieCodex([proc(1, '/a', T0)], [a, head('/a', T0 + 6_000, { originator: 'codex_exec' })]);
    expect(r.ties).toEqual([{ pid: 1, head: a }]);
  });

  it('ties a resume by id to that transcript, and no second process to it', () => {
    const h = head('/a', T0 - 86_400_000);
    const one = tieCodex([proc(1, '/a', T0, { resume: h.sessionId, resumed: h })], [h]);
    expect(one.ties).toEqual([{ pid: 1, head: h }]);
    const two = tieCodex(
      [proc(1, '/a', T0, { resume: h.sessionId, resumed: h }), proc(2, '/b', T0, { resume: h.sessionId, resumed: h })],
      [h],
    );
    expect(two.ties).toEqual([]);
    const none = tieCodex([proc(1, '/a', T0, { resume: 'x', resumed: null }), proc(2, '/a', T0, { resume: 'unknown' })], []);
    expect(none.ties).toEqual([]);
    expect(none.problems).toHaveLength(2);
  });
});

describe('rollouts on disk', () => {
  const home = mkdtempSync(join(tmpdir(), 'sunset-codex-rollouts-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const meta = (id: string, cwd: string, at: string) =>
    JSON.stringify({
      type: 'session_meta',
      payload: { id, cwd, timestamp: at, originator: 'codex-tui', base_instructions: { text: 'x'.repeat(100_000) } },
    });
  const ev = (type: string) => JSON.stringify({ type: 'event_msg', payload: { type } });

  it('reads a head, the turn in flight, and finds an id by its file name', () => {
    const id = '01a23c75-b10b-77a2-8a88-6fa5eca9b97a';
    const at = Date.parse('2026-12-03T15:11:15.729Z');
    const day = join(home, 'sessions', ...dayOf(at).split('/'));
    mkdirSync(day, { recursive: true });
    const path = join(day, `rollout-2026-12-03T15-11-15-${id}.jsonl`);
    writeFileSync(path, `${[meta(id, '/w', '2026-12-03T15:11:15.729Z'), ev('task_started'), ev('token_count')].join('\n')}\n`);
    const r = new Rollouts(home);
    expect(r.head(path)).toEqual({ path, sessionId: id, cwd: '/w', createdMs: at, originator: 'codex-tui' });
    expect(r.findById(id)?.path).toBe(path);
    expect(r.headsSince(dayOf(at)).heads.map((h) => h.sessionId)).toEqual([id]);
    expect(r.headsSince('2999/01/01').heads).toEqual([]);
    expect(r.look(path)?.turnInFlight).toBe(true);
    writeFileSync(path, `${ev('task_complete')}\n`, { flag: 'a' });
    expect(r.look(path)?.turnInFlight).toBe(false);
    expect(r.look(join(day, 'gone.jsonl'))).toBeNull();
  });

  it('turn in flight: the last of started / complete / aborted; none is unknown', () => {
    expect(turnInFlightOf([ev('task_started'), ev('task_complete')])).toBe(false);
    expect(turnInFlightOf([ev('task_started'), ev('turn_aborted')])).toBe(false);
    expect(turnInFlightOf([ev('task_complete'), ev('task_started'), '{"type":"event_msg","pay'])).toBe(true);
    expect(turnInFlightOf([ev('token_count'), 'not json'])).toBeNull();
  });

  it('a first line that is not a session_meta is no head', () => {
    expect(parseHead('/p', '{"type":"event_msg"}')).toBeNull();
    expect(parseHead('/p', JSON.stringify({ type: 'session_meta', payload: { id: 'x', cwd: '/w', timestamp: 'never' } }))).toBeNull();
    expect(parseHead('/p', 'garbage')).toBeNull();
  });
});
