// Claude Code hooks as evidence, without processes: the verdict's hook reasons as a table, the hook
// state machine, the settings merge (a person's hooks are never dropped) and hook-event's promise
// never to fail a hook.
import { chmodSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decide,
  hookDisagrees,
  REASONS,
  type Evidence,
  type HookFacts,
  type Policy,
  type SessionFacts,
  type TaskFacts,
} from '../src/doctrine/verdict.js';
import {
  applyHookEvent,
  hookFileName,
  parseHookInput,
  pruneHookStates,
  readHookState,
  recordHookEvent,
  type HookState,
} from '../src/evidence/hook-events.js';
import {
  addSunsetHooks,
  hookCommand,
  hookFacts,
  installHooks,
  installedSunsetHooks,
  isSunsetHook,
  removeHooks,
  removeSunsetHooks,
  SettingsError,
  HOOK_MARKER,
  type Settings,
} from '../src/evidence/hooks.js';
import { dirFromArgv, hookEventMain } from '../src/cli/hook-event.js';
import { parseConfig } from '../src/config.js';
import { tempDir } from './support/temp-dir.js';

const MIN = 60_000;
const now = Date.parse('2026-11-30T12:00:00Z');
const ago = (ms: number) => new Date(now - ms).toISOString();
const policy: Policy = {
  grace: 15 * MIN,
  silence: 15 * MIN,
  askWait: 10 * MIN,
  retryWait: 10 * MIN,
  expireIdle: 48 * 60 * MIN,
  exitConfirm: MIN,
  maxExitRequests: 3,
};
const doneTask = (): TaskFacts => ({ id: 't1', state: 'done', terminal: true, exitRequests: 0, releasedAt: ago(60 * MIN) });
const hook = (h: Partial<HookFacts> = {}): HookFacts => ({
  state: 'idle',
  event: 'Stop',
  at: ago(MIN),
  ageMs: MIN,
  fresh: true,
  backgroundTasks: 0,
  ...h,
});
const session = (e: Partial<Evidence> = {}): SessionFacts => ({
  id: 'abc12345',
  sessionId: 'uuid-1',
  kind: 'background',
  pid: 4242,
  evidence: {
    live: true,
    status: 'idle',
    silenceMs: 30 * MIN,
    attached: false,
    inboxPending: 0,
    probeFailures: [],
    task: doneTask(),
    openTasks: [],
    invalidTasks: [],
    ...e,
  },
});

describe('decide: hook evidence', () => {
  const cases: Array<[string, Partial<Evidence>, string[]]> = [
    ['roster idle, hooks idle (Stop): they agree, nothing added', { hooks: hook() }, []],
    [
      'roster idle, hooks busy: busy, and the two disagree',
      { hooks: hook({ state: 'busy', event: 'PreToolUse' }) },
      ['hook-busy', 'hook-disagrees'],
    ],
    [
      'roster idle, a permission prompt open',
      { hooks: hook({ state: 'waiting', event: 'Notification', notificationType: 'permission_prompt' }) },
      ['hook-waiting', 'hook-disagrees'],
    ],
    ['roster busy, hooks say the turn ended', { status: 'busy', hooks: hook() }, ['status-busy', 'hook-disagrees']],
    ['roster busy, hooks busy: agreement', { status: 'busy', hooks: hook({ state: 'busy' }) }, ['status-busy', 'hook-busy']],
    [
      'roster busy, session ended by its hooks',
      { status: 'busy', hooks: hook({ state: 'ended', event: 'SessionEnd' }) },
      ['status-busy', 'hook-disagrees'],
    ],
    [
      'roster waiting, hooks idle (idle_prompt): not a disagreement',
      { status: 'waiting', hooks: hook({ notificationType: 'idle_prompt' }) },
      ['status-waiting'],
    ],
    ['Stop with background tasks still running', { hooks: hook({ backgroundTasks: 2 }) }, ['hook-background-tasks']],
    ['roster idle, hooks ended (SessionEnd): agreement', { hooks: hook({ state: 'ended', event: 'SessionEnd' }) }, []],
    ['stale busy hooks change nothing', { hooks: hook({ state: 'busy', fresh: false, ageMs: 20 * MIN }) }, []],
    ['stale background tasks change nothing', { hooks: hook({ backgroundTasks: 3, fresh: false }) }, []],
    ['absent hooks change nothing', { hooks: null }, []],
    ['hooks never clear a protection: roster unknown stays unknown', { status: 'unknown', hooks: hook() }, ['status-unknown']],
  ];
  for (const [name, e, reasons] of cases) {
    it(name, () => {
      const d = decide(session(e), policy, now);
      expect(d.reasons.sort()).toEqual([...reasons].sort());
      expect(d.verdict).toBe(reasons.length ? 'protected' : 'eligible');
    });
  }
  it('every hook reason has plain words', () => {
    for (const r of ['hook-busy', 'hook-waiting', 'hook-disagrees', 'hook-background-tasks'] as const)
      expect(REASONS[r]).toMatch(/\w+ \w+/);
  });
  it('hookDisagrees is symmetric in spirit: idle vs working, either way round', () => {
    expect(hookDisagrees('idle', 'busy')).toBe(true);
    expect(hookDisagrees('busy', 'idle')).toBe(true);
    expect(hookDisagrees('idle', 'idle')).toBe(false);
    expect(hookDisagrees('unknown', 'busy')).toBe(false);
  });
});

describe('hookFacts: freshness', () => {
  const st = (at: string, extra: Partial<HookState> = {}): HookState => ({
    v: 1,
    sessionId: 's',
    state: 'busy',
    event: 'PreToolUse',
    at,
    backgroundTasks: 0,
    ...extra,
  });
  it('fresh within freshFor, stale after; a future time (clock skew) is fresh', () => {
    expect(hookFacts(st(ago(15 * MIN)), now, 15 * MIN)).toMatchObject({ fresh: true, ageMs: 15 * MIN, state: 'busy' });
    expect(hookFacts(st(ago(15 * MIN + 1)), now, 15 * MIN)?.fresh).toBe(false);
    expect(hookFacts(st(new Date(now + MIN).toISOString()), now, 15 * MIN)).toMatchObject({ fresh: true, ageMs: 0 });
  });
  it('no state, or a time that does not parse: no evidence', () => {
    expect(hookFacts(null, now, MIN)).toBeNull();
    expect(hookFacts(st('yesterday'), now, MIN)).toBeNull();
  });
});

describe('applyHookEvent: the state machine', () => {
  const at = '2026-11-30T12:00:00.000Z';
  const ev = (hook_event_name: string, extra: Record<string, unknown> = {}) => ({ session_id: 's1', hook_event_name, ...extra });
  it('prompt and tool calls are busy; Stop is idle; permission prompts wait; idle prompts are idle; SessionEnd ends', () => {
    expect(applyHookEvent(null, ev('UserPromptSubmit'), at)?.state).toBe('busy');
    expect(applyHookEvent(null, ev('PreToolUse', { tool_name: 'Bash' }), at)?.state).toBe('busy');
    expect(applyHookEvent(null, ev('Stop'), at)).toMatchObject({ state: 'idle', lastStopAt: at, backgroundTasks: 0 });
    expect(applyHookEvent(null, ev('Notification', { notification_type: 'permission_prompt' }), at)).toMatchObject({
      state: 'waiting',
      notificationType: 'permission_prompt',
    });
    expect(applyHookEvent(null, ev('Notification', { notification_type: 'idle_prompt' }), at)?.state).toBe('idle');
    expect(applyHookEvent(null, ev('SessionEnd', { reason: 'logout' }), at)).toMatchObject({ state: 'ended', reason: 'logout' });
  });
  it('events and notification types sunset does not listen for change nothing', () => {
    expect(applyHookEvent(null, ev('PostToolUse'), at)).toBeNull();
    expect(applyHookEvent(null, ev('Notification', { notification_type: 'auth_success' }), at)).toBeNull();
    expect(applyHookEvent(null, ev('Notification'), at)).toBeNull();
  });
  it("a Stop's background tasks are kept until the next Stop; later idle prompts keep them", () => {
    const s1 = applyHookEvent(null, ev('Stop', { background_tasks: [{ id: 'a' }, { id: 'b' }] }), at)!;
    expect(s1.backgroundTasks).toBe(2);
    const s2 = applyHookEvent(s1, ev('Notification', { notification_type: 'idle_prompt' }), at)!;
    expect(s2).toMatchObject({ state: 'idle', backgroundTasks: 2, lastStopAt: at });
    expect(applyHookEvent(s2, ev('Stop', { background_tasks: [] }), at)!.backgroundTasks).toBe(0);
    expect(applyHookEvent(null, ev('Stop', { background_tasks: 3 }), at)!.backgroundTasks).toBe(3);
    expect(applyHookEvent(null, ev('Stop', { background_tasks: { x: {} } }), at)!.backgroundTasks).toBe(1);
  });
});

describe('parseHookInput', () => {
  it('needs a session and an event', () => {
    expect(parseHookInput('{"session_id":"s","hook_event_name":"Stop"}')).toMatchObject({ session_id: 's' });
    expect(parseHookInput('{"hook_event_name":"Stop"}')).toBeNull();
    expect(parseHookInput('[1,2]')).toBeNull();
    expect(parseHookInput('')).toBeNull();
  });
  it('a huge PreToolUse (a large Write) is read from its head, not parsed whole', () => {
    const big = `{"session_id":"s-big","transcript_path":"/t","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"${'x'.repeat(3 * 1024 * 1024)}"}}`;
    expect(parseHookInput(big)).toMatchObject({ session_id: 's-big', hook_event_name: 'PreToolUse', cwd: '/w' });
    // torn JSON still yields the fields at its head
    expect(parseHookInput('{"session_id":"s2","hook_event_name":"Stop", "oops')).toMatchObject({
      session_id: 's2',
      hook_event_name: 'Stop',
    });
  });
  it('file names are safe whatever the session id says', () => {
    for (const id of ['../../etc/passwd', '.hidden', 'a/b', 'x*y']) {
      const n = hookFileName(id);
      expect(n).not.toMatch(/[/\\]/);
      expect(n.startsWith('.')).toBe(false);
    }
    expect(hookFileName('3f1c0d7e-1b2a-4c5d-8e9f-0a1b2c3d4e5f')).toBe('3f1c0d7e-1b2a-4c5d-8e9f-0a1b2c3d4e5f.json');
  });
});

describe('recordHookEvent and hook-event: fast, and never failing the hook', () => {
  const tmp = () => tempDir('sunset-hooks-');
  it('keeps one small file per session, the latest state, written atomically', () => {
    const dir = join(tmp(), 'hooks');
    recordHookEvent(dir, JSON.stringify({ session_id: 'a', hook_event_name: 'UserPromptSubmit', transcript_path: '/t/a.jsonl' }), now);
    recordHookEvent(dir, JSON.stringify({ session_id: 'a', hook_event_name: 'Stop' }), now + 1000);
    recordHookEvent(dir, JSON.stringify({ session_id: 'b', hook_event_name: 'PreToolUse' }), now);
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'b.json']);
    expect(readHookState(dir, 'a')).toMatchObject({
      state: 'idle',
      event: 'Stop',
      transcriptPath: '/t/a.jsonl',
      at: new Date(now + 1000).toISOString(),
    });
  });
  it('exits 0 on garbage, on no --dir, on a folder it cannot write; the last error is kept for a person', () => {
    const root = tmp();
    expect(hookEventMain(['--dir', join(root, 'h')], () => 'not json')).toBe(0);
    expect(hookEventMain([], () => '{"session_id":"a","hook_event_name":"Stop"}')).toBe(0);
    const blocked = join(root, 'file');
    writeFileSync(blocked, 'x');
    expect(hookEventMain(['--dir', join(blocked, 'h')], () => '{"session_id":"a","hook_event_name":"Stop"}')).toBe(0);
    const ro = join(root, 'ro');
    mkdirSync(ro);
    chmodSync(ro, 0o500);
    try {
      expect(hookEventMain([`--dir=${ro}`], () => '{"session_id":"a","hook_event_name":"Stop"}')).toBe(0);
    } finally {
      chmodSync(ro, 0o700);
    }
    expect(
      hookEventMain(['--dir', join(root, 'h')], () => {
        throw new Error('stdin gone');
      }),
    ).toBe(0);
    expect(readFileSync(join(root, 'h', '.last-error'), 'utf8')).toMatch(/stdin gone/);
    expect(dirFromArgv(['--dir', '/x'])).toBe('/x');
    expect(dirFromArgv(['--dir=/y', 'extra'])).toBe('/y');
  });
  it('loads node:fs and node:path only (every hook call pays for what it imports)', () => {
    for (const f of ['src/evidence/hook-events.ts', 'src/cli/hook-event.ts', 'src/store/atomic-file.ts']) {
      const text = readFileSync(join(__dirname, '..', f), 'utf8');
      const imports = [...text.matchAll(/^import\s+(type\s+)?[^'"]*from\s+['"]([^'"]+)['"]/gm)].filter((m) => !m[1]).map((m) => m[2]);
      expect(
        imports.every((m) => ['node:fs', 'node:path', '../evidence/hook-events.js', '../store/atomic-file.js'].includes(m)),
        `${f} imports ${imports.join(', ')}`,
      ).toBe(true);
      expect(/import\s*\(/.test(text), `${f} has a dynamic import`).toBe(false);
    }
  });
  it('prunes files of sessions long gone', () => {
    const dir = join(tmp(), 'hooks');
    recordHookEvent(dir, '{"session_id":"old","hook_event_name":"Stop"}');
    recordHookEvent(dir, '{"session_id":"new","hook_event_name":"Stop"}');
    expect(pruneHookStates(dir, 60_000, Date.now() + 120_000)).toBe(2);
    expect(pruneHookStates(join(dir, 'missing'), 1)).toBe(0);
  });
});

describe('settings: merge, never drop a person’s hooks', () => {
  const CMD = hookCommand('/state/hooks', { node: '/usr/bin/node', script: '/opt/sunset/dist/src/cli/hook-event.js' });
  const user: Settings = {
    model: 'opus',
    hooks: {
      Stop: [{ matcher: '', hooks: [{ type: 'command', command: 'notify-send done' }] }],
      PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'audit-bash' }] }],
      PostToolUse: [{ matcher: '', hooks: [{ type: 'command', command: 'fmt' }] }],
    },
  };
  it('the command runs hook-event directly, carries the marker, quotes its words', () => {
    expect(CMD).toBe(`'/usr/bin/node' '/opt/sunset/dist/src/cli/hook-event.js' --dir '/state/hooks' # ${HOOK_MARKER}`);
    expect(hookCommand("/it's/here", { node: 'n', script: 's' })).toContain(`'/it'\\''s/here'`);
    expect(isSunsetHook({ type: 'command', command: CMD })).toBe(true);
    expect(isSunsetHook({ type: 'command', command: 'notify-send done' })).toBe(false);
  });
  it('install adds the six hooks in the real format and keeps everything else', () => {
    const s = addSunsetHooks(user, CMD);
    expect(s.model).toBe('opus');
    expect(s.hooks!.PostToolUse).toEqual(user.hooks!.PostToolUse);
    expect(s.hooks!.Stop[0]).toEqual(user.hooks!.Stop[0]);
    expect(s.hooks!.Stop[1]).toEqual({ matcher: '', hooks: [{ type: 'command', command: CMD, timeout: 10 }] });
    expect(s.hooks!.PreToolUse.map((g) => g.matcher)).toEqual(['Bash', '']);
    expect(s.hooks!.Notification.map((g) => g.matcher)).toEqual(['permission_prompt', 'idle_prompt']);
    expect(installedSunsetHooks(s)).toEqual([
      'Stop',
      'PreToolUse',
      'UserPromptSubmit',
      'Notification[permission_prompt]',
      'Notification[idle_prompt]',
      'SessionEnd',
    ]);
  });
  it('install twice is install once; a new command replaces the old one', () => {
    const once = addSunsetHooks(user, CMD);
    expect(addSunsetHooks(once, CMD)).toEqual(once);
    const moved = addSunsetHooks(once, hookCommand('/elsewhere', { node: 'n', script: 's' }));
    expect(JSON.stringify(moved)).not.toContain('/state/hooks');
    expect(installedSunsetHooks(moved)).toHaveLength(6);
  });
  it('remove takes out only ours: back to exactly what the person had', () => {
    expect(removeSunsetHooks(addSunsetHooks(user, CMD))).toEqual({ settings: user, removed: 6 });
    expect(removeSunsetHooks(addSunsetHooks({}, CMD))).toEqual({ settings: {}, removed: 6 });
    expect(removeSunsetHooks(user)).toEqual({ settings: user, removed: 0 });
  });
  it('a group a person shares with ours keeps the person’s hook; an empty event the person had stays', () => {
    const shared: Settings = {
      hooks: {
        Stop: [
          {
            matcher: '',
            hooks: [
              { type: 'command', command: 'mine' },
              { type: 'command', command: CMD },
            ],
          },
        ],
        SubagentStop: [],
      },
    };
    expect(removeSunsetHooks(shared).settings).toEqual({
      hooks: { Stop: [{ matcher: '', hooks: [{ type: 'command', command: 'mine' }] }], SubagentStop: [] },
    });
  });
  it('a settings shape it does not understand is refused, not rewritten', () => {
    expect(() => addSunsetHooks({ hooks: [] as any }, CMD)).toThrow(SettingsError);
    expect(() => addSunsetHooks({ hooks: { Stop: {} as any } }, CMD)).toThrow(/hooks\.Stop/);
    expect(() => addSunsetHooks({ hooks: { Stop: [{ matcher: '' } as any] } }, CMD)).toThrow(/no "hooks" array/);
  });
});

describe('the settings file: backup, atomic write, dry run', () => {
  const CMD = hookCommand('/state/hooks', { node: '/usr/bin/node', script: '/s.js' });
  const clock = () => Date.parse('2026-11-30T12:00:00.123Z');
  it('install backs up first, keeps the mode, and remove restores the same settings', () => {
    const dir = tempDir('sunset-settings-');
    const file = join(dir, 'settings.json');
    const original = `${JSON.stringify({ env: { A: '1' }, hooks: { Stop: [{ hooks: [{ type: 'command', command: 'mine' }] }] } }, null, 2)}\n`;
    writeFileSync(file, original, { mode: 0o600 });
    const r = installHooks(file, CMD, { now: clock });
    expect(r).toMatchObject({ changed: true, backup: `${file}.sunset-backup-20261130T120000123Z` });
    expect(readFileSync(r.backup!, 'utf8')).toBe(original);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.env).toEqual({ A: '1' });
    expect(after.hooks.Stop[0]).toEqual({ hooks: [{ type: 'command', command: 'mine' }] });
    expect(installHooks(file, CMD, { now: clock })).toMatchObject({ changed: false, backup: null });
    const rm = removeHooks(file, { now: () => clock() + 1 });
    expect(rm).toMatchObject({ changed: true, removed: 6 });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(JSON.parse(original));
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]); // no temp files left
  });
  it('a dry run writes nothing; a missing file is created (nothing to back up); remove on it is a no-op', () => {
    const dir = tempDir('sunset-settings-');
    const file = join(dir, 'sub', 'settings.json');
    const dry = installHooks(file, CMD, { dryRun: true });
    expect(dry.changed).toBe(true);
    expect(JSON.parse(dry.text).hooks.Stop).toHaveLength(1);
    expect(() => statSync(file)).toThrow();
    expect(removeHooks(file)).toMatchObject({ changed: false });
    expect(() => statSync(file)).toThrow();
    expect(installHooks(file, CMD)).toMatchObject({ changed: true, backup: null });
    expect(installedSunsetHooks(JSON.parse(readFileSync(file, 'utf8')))).toHaveLength(6);
  });
  it('a file that is not JSON is left exactly as it is', () => {
    const dir = tempDir('sunset-settings-');
    const file = join(dir, 'settings.json');
    writeFileSync(file, '{ "hooks": { // a comment\n } }');
    expect(() => installHooks(file, CMD)).toThrow(/not valid JSON.*left untouched/);
    expect(readFileSync(file, 'utf8')).toBe('{ "hooks": { // a comment\n } }');
    expect(readdirSync(dir)).toEqual(['settings.json']);
  });
});

describe('config', () => {
  it('hooks.dir defaults to <stateDir>/hooks, hooks.freshFor to 15m, windows.sampleEvery to 5m', () => {
    const c = parseConfig({ stateDir: '/srv/state' }, { env: {} });
    expect(c.hooks).toEqual({ dir: '/srv/state/hooks', freshFor: 15 * MIN });
    expect(c.windows.sampleEvery).toBe(5 * MIN);
    expect(parseConfig({ hooks: { dir: 'h', freshFor: '2m' } }, { env: {}, cwd: '/w' }).hooks).toEqual({ dir: '/w/h', freshFor: 2 * MIN });
    expect(() => parseConfig({ hooks: { freshFor: 'soon' } })).toThrow(/"hooks.freshFor".*duration/);
    expect(() => parseConfig({ hooks: { fresh: '1m' } })).toThrow(/unknown key "hooks.fresh".*freshFor/);
  });
});
