// Which Claude Code processes are people's clients, read from argv as the real CLI (2.1.328) reads it: attach
// clients and agent views however they were opened — `claude agents`, options before the verb (`claude --model opus
// agents`), and a plain `claude` where the person's ~/.claude.json says "defaultToAgentsView": true. What cannot be
// told protects.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readClientArgv, verbPlaces } from '../src/evidence/cli-argv.js';
import { claudeArgs, claudeNames, findClients, opensAgentView, saysDefaultView } from '../src/evidence/clients.js';
import { overheadKind } from '../src/evidence/claude-code.js';
import type { ProcTable } from '../src/evidence/proc.js';

/** The real CLI's argv as captured (sim/real/fixtures/argv), as claudeArgs gives it: the words after the binary. */
const fixture = (name: string): string[] =>
  claudeArgs(JSON.parse(readFileSync(new URL(`../sim/real/fixtures/argv/${name}.json`, import.meta.url), 'utf8')), NAMES)!;

const NAMES = claudeNames('claude', ['claude', 'attach']);
const read = (args: string[]) => readClientArgv(args, ['attach']);
const kind = (args: string[]) => {
  const c = read(args);
  return [c.attach ? `attach ${c.attach.join(' ')}` : null, c.agentView ? 'view' : null, c.agentViewIfDefault ? 'plain' : null]
    .filter(Boolean)
    .join(', ');
};

describe("a client's argv", () => {
  it.each([
    // the forms sunset always saw
    [['agents'], 'view'],
    [['agents', '--cwd', 'a'], 'view'],
    [['agents', '--cwd=a'], 'view'],
    [['--verbose', 'agents'], 'view'],
    [['attach', '39d62508'], 'attach 39d62508'],
    [['--verbose', 'attach', 'refactor-parser'], 'attach refactor-parser'],
    // options that take a value before the verb (found on the real CLI 2.1.328)
    [['--model', 'opus', 'agents'], 'view'],
    [['--model=opus', 'agents'], 'view'],
    [['--permission-mode', 'plan', '--effort', 'high', 'agents', '--cwd', 'a'], 'view'],
    [['--add-dir', '/x', 'agents'], 'view'], // the view's fast path takes one value, before the full parser takes several
    [['--settings', 's.json', 'agents'], 'view'],
    [['-d', 'agents'], 'view'],
    [['--debug-file', '/tmp/d', 'agents'], 'view'],
    [['--model', 'opus', 'attach', '39d62508'], 'attach 39d62508'],
    [['--name', 'n', '--session-id', 'u', 'attach', 'x'], 'attach x'],
    // an option the CLI's tables do not know may or may not take values: any later `agents` counts (unknown protects)
    [['--frobnicate', 'x', 'agents'], 'view'],
    [['--frobnicate', 'agents'], 'view'],
    [['--frobnicate', 'x', 'attach', 'y'], 'attach y'],
    // a plain `claude`: the agent view where ~/.claude.json says so (the CLI's rule: nothing but debug options)
    [[], 'plain'],
    [['--debug'], 'plain'],
    [['-d', '--debug-file', '/tmp/d'], 'plain'],
    [['--runner-declares=x', '--ignore-persisted-trust'], 'plain'], // the CLI drops these two before it reads argv
    // not clients
    [['agents', '--json', '--all'], ''],
    [['--model', 'opus', 'agents', '--json'], ''],
    [['--model', 'opus'], ''],
    [['--version'], ''],
    [['-p', 'hello'], ''],
    [['--resume', '1cea8e81-9353-4b49-8467-f0cdb77cbddf'], ''],
    [['stop', '39d62508'], ''],
    [['--bg', 'write the changelog'], ''],
  ])('%j → %s', (args, want) => {
    expect(kind(args)).toBe(want);
  });

  it("the real CLI's own processes are no clients (but a plain interactive `claude`, which may be one)", () => {
    for (const name of [
      'daemon',
      'pty-host-fresh',
      'pty-host-claimed-spare',
      'session-fresh',
      'session-claimed-spare',
      'spare',
      'spare-pty-host',
      'agent-view-session',
      'interactive-with-name-and-prompt',
    ])
      expect(kind(fixture(name)), name).toBe('');
    expect(kind(fixture('interactive'))).toBe('plain');
    expect(kind(fixture('agent-view'))).toBe('view');
    expect(kind(fixture('attach-name'))).toBe('attach refactor-parser');
  });

  it("where the verb may be: the CLI's own index, the first word not an option, and after an unknown option every word", () => {
    expect(verbPlaces(['--model', 'opus', 'agents'])).toEqual([1, 2]);
    expect(verbPlaces(['--add-dir', 'a', 'b', '-c', 'agents'])).toEqual([1, 4]);
    expect(verbPlaces(['--resume', 'x', 'agents'])).toEqual([1, 2]);
    expect(verbPlaces(['--resume', '--verbose', 'agents'])).toEqual([2]);
    expect(verbPlaces(['--frob', 'a', 'b'])).toEqual([1, 2]);
    expect(verbPlaces(['--', 'agents'])).toEqual([1]);
    expect(verbPlaces(['-d', '--verbose'])).toEqual([]);
  });

  it('a view opened with options before `agents` is counted with people’s clients in the overhead', () => {
    expect(overheadKind(['--model', 'opus', 'agents'])).toBe('clients');
    expect(overheadKind(['agents', '--json', '--all'])).toBeNull();
    expect(overheadKind([])).toBeNull(); // a plain `claude`: its kind is not told from argv
  });
});

describe('~/.claude.json', () => {
  it('says defaultToAgentsView only when it is true; a file that does not parse is unknown', () => {
    expect(saysDefaultView('{"defaultToAgentsView": true, "projects": {}}')).toBe(true);
    expect(saysDefaultView('{"defaultToAgentsView": false}')).toBe(false);
    expect(saysDefaultView('{"defaultToAgentsView": "true"}')).toBe(false);
    expect(saysDefaultView('{"projects": {"x": {"defaultToAgentsView": true}}}')).toBe(false);
    expect(saysDefaultView('{"defaultToAgentsView": tru')).toBeNull();
    expect(saysDefaultView('[]')).toBeNull();
  });

  const root = mkdtempSync(join(tmpdir(), 'sunset-client-argv-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  /** A process of a fake /proc whose environment is `env`; returns its pid. */
  let next = 100;
  const proc = (env: Record<string, string>) => {
    const pid = next++;
    mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
    writeFileSync(
      join(root, 'proc', String(pid), 'environ'),
      Object.entries(env)
        .map(([k, v]) => `${k}=${v}\0`)
        .join(''),
    );
    return pid;
  };
  const home = (name: string, files: Record<string, string>) => {
    const dir = join(root, name);
    mkdirSync(join(dir, '.claude'), { recursive: true });
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    return dir;
  };
  const opens = (pid: number) => opensAgentView(pid, undefined, join(root, 'proc'));

  it("is read from the process's own HOME (or CLAUDE_CONFIG_DIR); none is the CLI's default; unreadable is unknown", () => {
    expect(opens(proc({ HOME: home('on', { '.claude.json': '{"defaultToAgentsView":true}' }) }))).toBe(true);
    expect(opens(proc({ HOME: home('off', { '.claude.json': '{"theme":"dark"}' }) }))).toBe(false);
    expect(opens(proc({ HOME: home('none', {}) }))).toBe(false);
    expect(opens(proc({ HOME: home('torn', { '.claude.json': '{"defaultToAgents' }) }))).toBeNull();
    const dir = home('cfg', { '.claude/.claude.json': '{"defaultToAgentsView":true}', '.claude.json': '{}' });
    expect(opens(proc({ HOME: dir, CLAUDE_CONFIG_DIR: join(dir, '.claude') }))).toBe(true);
    // an older .config.json in the home the CLI may read instead: either saying so counts
    expect(opens(proc({ HOME: home('legacy', { '.claude.json': '{}', '.claude/.config.json': '{"defaultToAgentsView":true}' }) }))).toBe(
      true,
    );
    expect(opens(proc({ PATH: '/bin' }))).toBeNull(); // no HOME: no file to read
    const hidden = next++;
    mkdirSync(join(root, 'proc', String(hidden), 'environ'), { recursive: true });
    expect(opens(hidden)).toBeNull(); // an environment that cannot be read (another user's process)
    expect(opens(99_999)).toBe(false); // a process that has ended shows nothing
  });

  it('findClients: a plain `claude` is an agent view when its config says so or cannot tell, unless it is a session of the roster', () => {
    const table: ProcTable = { procs: new Map(), children: new Map() };
    for (const pid of [1, 2, 3, 4]) table.procs.set(pid, { pid, ppid: 0, state: 'S', startMs: 0, argv: ['/x/claude.exe'] });
    table.procs.set(5, { pid: 5, ppid: 0, state: 'S', startMs: 0, argv: ['/x/claude.exe', '--model', 'opus', 'agents'] });
    const says = new Map<number, boolean | null>([
      [1, true],
      [2, false],
      [3, null],
      [4, true],
    ]);
    const c = findClients(table, NAMES, ['claude', 'attach'], {
      isSession: (pid) => pid === 4,
      opensAgentView: (pid) => says.get(pid) ?? null,
    });
    expect(c.agentViews).toEqual([1, 3, 5]);
  });

  it('a client that has ended since /proc was listed is no one’s: it does not count for this home', () => {
    const gone = 4_194_304 + 4321; // above any pid_max: its /proc folder never exists
    const table: ProcTable = { procs: new Map(), children: new Map() };
    table.procs.set(gone, { pid: gone, ppid: 0, state: 'S', startMs: 0, argv: ['/x/claude.exe', 'agents'] });
    expect(findClients(table, NAMES, ['claude', 'attach'], { claudeDir: '/home/u/.claude' }).agentViews).toEqual([]);
    expect(findClients(table, NAMES, ['claude', 'attach']).agentViews).toEqual([gone]); // no home to tell: every one counts
  });
});
