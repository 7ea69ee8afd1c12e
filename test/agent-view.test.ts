// Which background sessions an open agent view lists (src/evidence/agent-view.ts): its --cwd read from argv,
// resolved as the real CLI 2.1.328 resolves it, and matched against a session's folder by whole components.
// Tables over plain data; one test on a real folder tree for the symlink and missing-path cases.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  agentViewLines,
  agentViewsOf,
  cwdArg,
  listedFolder,
  liveViewFs,
  lists,
  narrowing,
  type ViewFs,
} from '../src/evidence/agent-view.js';
import type { ProcTable } from '../src/evidence/proc.js';
import { claudeNames } from '../src/evidence/clients.js';
import type { JobFacts } from '../src/doctrine/verdict.js';
import { agentViewBanner } from '../src/web/fleet-page.js';

describe("an agent view's --cwd, from its argv", () => {
  const cases: Array<[string[], string | null]> = [
    [[], null],
    [['--cwd', 'a/b'], 'a/b'],
    [['--cwd=/a/b'], '/a/b'],
    [['--cwd', '/x', '--cwd=/y'], '/y'], // the last one wins, as in the CLI
    [['--cwd='], null], // an empty one is none: the CLI lists everything
    [['--cwd', ''], null],
    [['--model', 'opus', '--cwd', '/a'], '/a'],
    [['--model', '--cwd', '/a'], null], // the CLI's two parsers read this two ways: unknown, so it lists all
    [['--settings', '--cwd=/a'], null],
    [['--cwd'], null], // no value: the CLI refuses to start
    [['--add-dir', '--cwd'], null],
    [['--json'], null],
    [['--restricted', '--cwd', 'sub dir'], 'sub dir'],
    [['--', '--cwd', '/a'], null], // words after -- are not options
    [['--cwdx', '/a'], null],
    [['--cwd', '-odd'], null],
  ];
  it.each(cases)('%j → %j', (args, want) => {
    expect(cwdArg(args)).toBe(want);
  });
});

describe("an agent view's narrowing, resolved as the CLI resolves it", () => {
  const fs = (cwd: string | null, real: Record<string, string | 'missing' | null> = {}): ViewFs => ({
    cwdOf: () => cwd,
    realpath: (p) => (p in real ? real[p] : p),
  });
  it('none: it lists every background session', () => {
    expect(narrowing(7, null, fs('/home/p'))).toEqual({ pid: 7, cwd: null });
  });
  it("a relative path is resolved against the view's own folder, then through symlinks", () => {
    expect(narrowing(7, 'proj/../proj2/', fs('/home/p'))).toEqual({ pid: 7, cwd: '/home/p/proj2' });
    expect(narrowing(7, 'link', fs('/home/p', { '/home/p/link': '/srv/real' }))).toEqual({ pid: 7, cwd: '/srv/real' });
  });
  it("an absolute path does not need the view's folder", () => {
    expect(narrowing(7, '/srv//x/', fs(null))).toEqual({ pid: 7, cwd: '/srv/x' });
  });
  it('a path that does not exist stays as resolved (the CLI lists nothing there)', () => {
    expect(narrowing(7, 'gone', fs('/home/p', { '/home/p/gone': 'missing' }))).toEqual({ pid: 7, cwd: '/home/p/gone' });
  });
  it('unknown protects: a view whose folder cannot be read, or a path sunset cannot resolve, lists all', () => {
    expect(narrowing(7, 'sub', fs(null))).toEqual({ pid: 7, cwd: null, cwdUnresolved: 'sub' });
    expect(narrowing(7, '/locked/x', fs('/', { '/locked/x': null }))).toEqual({ pid: 7, cwd: null, cwdUnresolved: '/locked/x' });
  });
});

describe("a session's folder, as the agent view files it", () => {
  const job = (j: Partial<JobFacts>): JobFacts => ({ state: 'done', tempo: 'idle', needs: null, inFlight: 0, updatedAt: null, ...j });
  const cases: Array<[string, JobFacts | null | undefined, string | null, string | null]> = [
    ['the roster cwd when no job was read', undefined, '/w/a', '/w/a'],
    ["the job's cwd over the roster's", job({ cwd: '/w/b' }), '/w/a', '/w/b'],
    ["the job's originCwd over its cwd", job({ cwd: '/w/b/x', originCwd: '/w/b' }), '/w/b/x', '/w/b'],
    ["a worktree counts as its repository's", job({ cwd: '/w/repo/.claude/worktrees/fix-1/src' }), null, '/w/repo'],
    ['the first .claude/worktrees/ in the path', undefined, '/w/r/.claude/worktrees/a/.claude/worktrees/b', '/w/r'],
    ['a job state that cannot be read: unknown', null, '/w/a', null],
    ['no cwd anywhere: unknown', job({}), null, null],
  ];
  it.each(cases)('%s', (_, j, rowCwd, want) => {
    expect(listedFolder(j, rowCwd)).toBe(want);
  });
});

describe('which sessions a view lists: the path or below it, by whole components', () => {
  const view = (cwd: string | null) => ({ pid: 1, cwd });
  const cases: Array<[string | null, string | null, boolean]> = [
    ['/a/b', '/a/b', true],
    ['/a/b', '/a/b/c', true],
    ['/a/b', '/a/b/c/d', true],
    ['/a/b', '/a/bc', false],
    ['/a/b', '/a', false],
    ['/a/b', '/x/y', false],
    ['/a/b', '/a/b/', true],
    ['/a/b', '/a/b/../c', false],
    ['/', '/anything', true],
    ['/a/b', '/a/b/..c', true], // a component named "..c" is below, as the CLI reads it
    [null, '/x', true], // unnarrowed
    ['/a/b', null, true], // a folder that cannot be told
    ['/a/b', 'relative/path', true], // nor can a relative one
  ];
  it.each(cases)('view %j, session in %j → %j', (cwd, folder, want) => {
    expect(lists(view(cwd), folder)).toBe(want);
  });
});

describe('the views of a process table', () => {
  const NAMES = claudeNames('claude', ['claude', 'attach']);
  const table = (rows: Array<[number, string[]]>): ProcTable => ({
    procs: new Map(rows.map(([pid, argv]) => [pid, { pid, ppid: 1, state: 'S', startMs: 0, argv }])),
    children: new Map(),
  });
  it("reads each one's argv (the CLI native binary, options before the verb) and its folder", () => {
    const t = table([
      [10, ['/opt/claude.exe', 'agents']],
      [11, ['/opt/claude.exe', 'agents', '--cwd', 'proj']],
      [12, ['node', '/usr/bin/claude', '--verbose', 'agents', '--cwd=/srv/x']],
    ]);
    const fs: ViewFs = { cwdOf: (pid) => (pid === 11 ? '/home/p' : null), realpath: (p) => p };
    expect(agentViewsOf(t, [10, 11, 12], NAMES, fs)).toEqual([
      { pid: 10, cwd: null },
      { pid: 11, cwd: '/home/p/proj' },
      { pid: 12, cwd: '/srv/x' },
    ]);
  });
  it('says in plain words what each view lists', () => {
    const lines = agentViewLines([
      { pid: 10, cwd: null },
      { pid: 11, cwd: '/home/p/proj' },
      { pid: 12, cwd: null, cwdUnresolved: 'sub' },
    ]);
    expect(lines[0]).toMatch(
      /^a person has the agent view open \(claude agents, pid 10\): every background session may be on their screen/,
    );
    expect(lines[1]).toMatch(
      /^a person has the agent view open on \/home\/p\/proj \(claude agents --cwd, pid 11\): the background sessions under it/,
    );
    expect(lines[2]).toMatch(/its --cwd sub could not be resolved\): every background session/);
  });
});

describe("the fleet page's banner", () => {
  it('none when no view is open; every background session when one lists all; only the folders when each is narrowed', () => {
    expect(String(agentViewBanner({ agentViews: 0, agentViewsOpen: [] }))).toBe('');
    const all = String(
      agentViewBanner({
        agentViews: 2,
        agentViewsOpen: [
          { pid: 1, cwd: null },
          { pid: 2, cwd: '/w/a' },
        ],
      }),
    );
    expect(all).toMatch(
      /<b>A person has the agent view open<\/b> \(<code>claude agents<\/code>, 2 of them\): from it any background session can be opened/,
    );
    const narrowed = String(
      agentViewBanner({
        agentViews: 2,
        agentViewsOpen: [
          { pid: 1, cwd: '/w/a' },
          { pid: 2, cwd: '/w/<b>' },
        ],
      }),
    );
    expect(narrowed).toContain(
      'open</b> on <code>/w/a</code>, <code>/w/&lt;b&gt;</code> (<code>claude agents --cwd</code>): it lists only the background sessions under those folders',
    );
    expect(narrowed).toContain('the others are judged as usual');
  });
});

describe('the real file system and /proc', () => {
  const root = mkdtempSync(join(tmpdir(), 'sunset-agent-view-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  it("resolves through symlinks, keeps a missing path as it is, and reads a process's folder", () => {
    mkdirSync(join(root, 'real', 'sub'), { recursive: true });
    symlinkSync(join(root, 'real'), join(root, 'link'));
    const fs = liveViewFs();
    const real = fs.realpath(root) as string; // tmpdir may itself sit behind a symlink
    expect(fs.realpath(join(root, 'link', 'sub'))).toBe(join(real, 'real', 'sub'));
    expect(fs.realpath(join(root, 'nope'))).toBe('missing');
    expect(fs.realpath(join(root, 'real', 'sub', 'x', 'y'))).toBe('missing');
    expect(fs.cwdOf(process.pid)).toBe(process.cwd());
    expect(fs.cwdOf(2 ** 30)).toBeNull();
    expect(narrowing(process.pid, join(root, 'link'), fs)).toEqual({ pid: process.pid, cwd: join(real, 'real') });
  });
});
