// Hooks end to end, as a person and as Claude Code use them: `sunset hooks install` on a temp settings
// file, the installed command run the way Claude Code runs it (a shell, the hook's JSON on stdin), then
// `sunset verdict --json` on a test fleet shows the hook reasons. Nothing is mocked.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../sim/fleet/fleet.js';
import { run, runCli } from './support/cli.js';
import { useFleet } from './support/use-fleet.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

const sunset = (args: string[], stdin = '') => runCli(args, { stdin });
const ctx = useFleet();

const USER_HOOKS = {
  Stop: [{ matcher: '', hooks: [{ type: 'command', command: 'echo my-own-stop-hook' }] }],
  PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo my-bash-audit' }] }],
};

function writeSettings(): string {
  const file = join(ctx.fleet.root, 'claude', 'settings.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ model: 'opus', hooks: USER_HOOKS }, null, 2)}\n`);
  return file;
}

/** The command sunset installed for an event (and Notification matcher), from the settings file. */
function commandFor(file: string, event: string, matcher = ''): string {
  const s = JSON.parse(readFileSync(file, 'utf8'));
  const group = s.hooks[event].find((g: any) => g.matcher === matcher && g.hooks.some((h: any) => h.command.includes('sunset hook-event')));
  return group.hooks[0].command;
}

/** Fire a hook the way Claude Code does: the command through a shell, the input as JSON on stdin. */
async function fire(file: string, a: Agent, event: string, extra: Record<string, unknown> = {}, matcher = '') {
  const input = { session_id: a.sessionId, transcript_path: a.transcriptPath, cwd: a.cwd, hook_event_name: event, ...extra };
  const r = await run('/bin/sh', ['-c', commandFor(file, event, matcher)], { stdin: JSON.stringify(input) });
  expect(r).toEqual({ code: 0, stdout: '', stderr: '' }); // never fails, never speaks (stdout would join the prompt)
}

async function verdictOf(cfg: string, a: Agent) {
  const r = await sunset(['verdict', '--json', '--config', cfg]);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout).sessions.find((s: any) => s.id === a.id);
}

describe('sunset hooks + hook-event + verdict', () => {
  it('install merges, the hooks report, the verdict joins them, remove restores the person’s hooks', async () => {
    const settings = writeSettings();
    const cfg = ctx.fleet.writeConfig();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-a', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });

    const inst = await sunset(['hooks', 'install', '--settings', settings, '--config', cfg]);
    expect(inst.code).toBe(0);
    expect(inst.stdout).toMatch(/installed 6 hooks in .*settings\.json/);
    expect(inst.stdout).toMatch(/backup: .*settings\.json\.sunset-backup-\d{8}T\d{9}Z/);
    expect(readdirSync(dirname(settings)).filter((n) => n.includes('sunset-backup-'))).toHaveLength(1);
    const installed = JSON.parse(readFileSync(settings, 'utf8'));
    expect(installed.model).toBe('opus');
    expect(installed.hooks.Stop[0]).toEqual(USER_HOOKS.Stop[0]);
    expect(installed.hooks.PreToolUse[0]).toEqual(USER_HOOKS.PreToolUse[0]);
    expect(commandFor(settings, 'Stop')).toContain(join(ctx.fleet.stateDir, 'hooks'));

    // baseline: with no hook evidence the session is eligible
    expect(await verdictOf(cfg, a)).toMatchObject({ verdict: 'eligible', reasons: [] });

    await fire(settings, a, 'UserPromptSubmit', { prompt: 'go on' });
    const v = await verdictOf(cfg, a);
    expect(v.verdict).toBe('protected');
    expect(v.reasons.sort()).toEqual(['hook-busy', 'hook-disagrees']); // the roster says idle
    expect(v.evidence.hooks).toMatchObject({ state: 'busy', event: 'UserPromptSubmit', fresh: true });

    await fire(settings, a, 'Stop', { stop_hook_active: false, background_tasks: [{ id: 'bg-1', command: 'npm test' }] });
    expect((await verdictOf(cfg, a)).reasons).toEqual(['hook-background-tasks']);

    await fire(
      settings,
      a,
      'Notification',
      { message: 'Claude needs your permission to use Bash', notification_type: 'permission_prompt' },
      'permission_prompt',
    );
    expect((await verdictOf(cfg, a)).reasons.sort()).toEqual(['hook-background-tasks', 'hook-disagrees', 'hook-waiting']);

    await fire(settings, a, 'Stop', { stop_hook_active: false });
    expect(await verdictOf(cfg, a)).toMatchObject({ verdict: 'eligible', next: { step: 'ask' } });

    ctx.fleet.setStatus(a, 'busy'); // the roster says busy, the hooks say the turn is over
    expect((await verdictOf(cfg, a)).reasons.sort()).toEqual(['hook-disagrees', 'status-busy']);
    ctx.fleet.setStatus(a, 'idle');

    const st = await sunset(['hooks', 'status', '--settings', settings, '--config', cfg, '--json']);
    expect(st.code).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ sessions: 1, fresh: 1, freshStates: { idle: 1 } });
    expect(JSON.parse(st.stdout).installed).toHaveLength(6);

    const rm = await sunset(['hooks', 'remove', '--settings', settings, '--config', cfg]);
    expect(rm.code).toBe(0);
    expect(rm.stdout).toMatch(/removed 6 sunset hooks/);
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual({ model: 'opus', hooks: USER_HOOKS });
    expect(readdirSync(dirname(settings)).filter((n) => n.includes('sunset-backup-'))).toHaveLength(2);
    expect((await sunset(['hooks', 'remove', '--settings', settings, '--config', cfg])).stdout).toMatch(/nothing to do/);
  });

  it("without --settings, the settings file is the one of the config's fleet.claudeDir (not the home folder's)", async () => {
    const cfg = ctx.fleet.writeConfig();
    const dry = await sunset(['hooks', 'install', '--dry-run', '--config', cfg]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(join(ctx.fleet.claudeDir, 'settings.json'));
    const st = await sunset(['hooks', 'status', '--json', '--config', cfg]);
    expect(st.stdout).toContain(join(ctx.fleet.claudeDir, 'settings.json'));
  });

  it('stale hook evidence changes nothing', async () => {
    const settings = writeSettings();
    const cfg = ctx.fleet.writeConfig({ hooks: { freshFor: '1ms' } });
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-a', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    expect((await sunset(['hooks', 'install', '--settings', settings, '--config', cfg])).code).toBe(0);
    await fire(settings, a, 'PreToolUse', { tool_name: 'Bash', tool_input: { command: 'make' } });
    const v = await verdictOf(cfg, a);
    expect(v).toMatchObject({ verdict: 'eligible', reasons: [] });
    expect(v.evidence.hooks).toMatchObject({ state: 'busy', fresh: false });
  });

  it('usage and bad input: dry run writes nothing, a settings file that is not JSON is left alone, hook-event never fails', async () => {
    const cfg = ctx.fleet.writeConfig();
    const settings = writeSettings();
    const before = readFileSync(settings, 'utf8');
    const dry = await sunset(['hooks', 'install', '--dry-run', '--settings', settings, '--config', cfg]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/dry run: would install 6 hooks/);
    expect(readFileSync(settings, 'utf8')).toBe(before);
    expect((await sunset(['hooks', '--config', cfg])).code).toBe(2);
    expect((await sunset(['hooks', 'frobnicate', '--config', cfg])).code).toBe(2);
    writeFileSync(settings, '{ not json');
    const bad = await sunset(['hooks', 'install', '--settings', settings, '--config', cfg]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/not valid JSON.*left untouched/);
    expect(readFileSync(settings, 'utf8')).toBe('{ not json');
    const ev = await sunset(['hook-event', '--dir', join(ctx.fleet.root, 'h')], 'garbage');
    expect(ev).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});
