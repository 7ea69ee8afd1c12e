// `sunset reap`: the plan as a table over plain data; then real tmux (a private server) with real
// remain-on-exit leftovers, the CLI, the one-command re-check, and reap riding the expire scan.
import { describe, expect, it } from 'vitest';
import { allDeadFormat, deadBefore, parseReapPanes, planReap, reapArgv, runReap, type ReapPane } from '../src/cap/reap.js';
import { run as runChild } from '../src/run.js';
import { waitFor, type Agent } from '../sim/fleet/fleet.js';
import { runCli, type Ran } from './support/cli.js';
import { startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';

const S = 1000;
const now = Date.parse('2026-11-30T12:00:00Z');
const pane = (sessionId: string, dead: boolean, deadAgoMs: number | null = null, name = 'n'): ReapPane => ({
  sessionId,
  sessionName: name,
  paneId: `%${Math.floor(Math.random() * 1e6)}`,
  dead,
  deadTime: dead && deadAgoMs !== null ? Math.floor((now - deadAgoMs) / 1000) * 1000 : null,
});

describe('planReap: which tmux sessions go', () => {
  const reapAfter = 10 * 60 * S;
  const cases: Array<[string, ReapPane[], string[]]> = [
    ['one pane, dead for an hour', [pane('$1', true, 3600 * S)], ['$1']],
    ['one pane, dead for 5 minutes (a person may still read it)', [pane('$1', true, 300 * S)], []],
    ['any live pane keeps the session', [pane('$1', true, 3600 * S), pane('$1', false)], []],
    ['every pane dead long enough', [pane('$1', true, 3600 * S), pane('$1', true, 1200 * S)], ['$1']],
    ['the latest death decides', [pane('$1', true, 3600 * S), pane('$1', true, 60 * S)], []],
    ['a dead pane with no death time is not known to be old', [pane('$1', true, null)], []],
    ['exactly reapAfter + the 1 s tmux rounding: goes', [pane('$1', true, reapAfter + 1000)], ['$1']],
    ['just under (death 599.5 s ago, tmux says 600 s): stays', [pane('$1', true, reapAfter - 500)], []],
    ['sessions judged apart', [pane('$1', true, 3600 * S), pane('$2', false), pane('$3', true, 7200 * S)], ['$3', '$1']],
  ];
  for (const [name, panes, want] of cases) it(name, () => expect(planReap(panes, now, reapAfter).map((c) => c.sessionId)).toEqual(want));

  it('parses the listing; names with tabs survive; junk lines are skipped', () => {
    const out = ['$3\t%7\t1\t1796000000\tagent\tx', '$4\t%8\t0\t\tlive', 'garbage', '3\t%9\t1\t1\tno-dollar'].join('\n');
    expect(parseReapPanes(out)).toEqual([
      { sessionId: '$3', paneId: '%7', dead: true, deadTime: 1796000000 * 1000, sessionName: 'agent\tx' },
      { sessionId: '$4', paneId: '%8', dead: false, deadTime: null, sessionName: 'live' },
    ]);
  });

  it('the removal is one tmux command of argv words, on a session id, never a name', () => {
    const argv = reapArgv('sock', '$12', 1796000000);
    expect(argv.slice(0, 8)).toEqual(['tmux', '-u', '-L', 'sock', 'if-shell', '-F', '-t', '$12']);
    expect(argv[8]).toBe(allDeadFormat(1796000000));
    expect(argv[9]).toBe("kill-session -t '$12'");
    expect(argv).toHaveLength(11);
    for (const bad of ['agent-1', '$1; kill-server', "$1'", '=$1', '']) expect(() => reapArgv(null, bad, 0)).toThrow(/not a session id/);
    expect(deadBefore(now, 10 * 60 * S)).toBe(Math.floor((now - 601 * S) / 1000));
  });
});

// ---------------------------------------------------------------- real tmux

describe('reap on a real tmux server', () => {
  const ctx = useFleet();

  const sessions = () => {
    try {
      return ctx.fleet.tmux(['list-sessions', '-F', '#{session_name}']).trim().split('\n').filter(Boolean).sort();
    } catch {
      return []; // the server went with its last session
    }
  };
  /** An interactive agent that has left by /exit, its pane kept dead by remain-on-exit. */
  async function leftover(): Promise<Agent> {
    const a = await ctx.fleet.spawnInteractive({ remainOnExit: true });
    ctx.fleet.typeInto(a, '/exit');
    if (!(await waitFor(() => ctx.fleet.tmux(['display-message', '-p', '-t', a.paneId!, '#{pane_dead}']).trim() === '1', 15_000)))
      throw new Error('pane did not die');
    return a;
  }
  const reapCli = (args: string[], windows: Record<string, unknown>) =>
    runCli(['reap', '--config', ctx.fleet.writeConfig({ host: uniqueHost(), windows }), ...args]);

  it('removes only sessions whose every pane has been dead for reapAfter; live and mixed ones are never touched', async () => {
    const dead = await leftover();
    const live = await ctx.fleet.spawnInteractive();
    // mixed: a live agent, plus a pane beside it that has exited (kept dead by remain-on-exit)
    const mixed = await ctx.fleet.spawnInteractive({ remainOnExit: true });
    ctx.fleet.tmux(['split-window', '-d', '-t', mixed.paneId!, '--', 'sh', '-c', 'exit 0']);
    await waitFor(() => ctx.fleet.tmux(['list-panes', '-t', mixed.tmuxSession!, '-F', '#{pane_dead}']).includes('1'), 10_000);
    const all = [dead.tmuxSession!, live.tmuxSession!, mixed.tmuxSession!].sort();

    // not dead long enough
    const young = await reapCli([], { reapAfter: '1h' });
    expect(young).toMatchObject({ code: 0, stdout: '' });
    expect(young.stderr).toMatch(/nothing to remove/);
    expect(sessions()).toEqual(all);

    // dead long enough (reapAfter 0 still waits out tmux's whole-second rounding)
    let dry: Ran = { code: -1, stdout: '', stderr: '' };
    await waitFor(async () => /would-remove/.test((dry = await reapCli(['--dry-run'], { reapAfter: 0 })).stdout), 15_000, 200);
    expect(dry.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^would-remove\\s+\\$\\d+\\s+"${dead.tmuxSession}" \\(1 pane, all dead for \\S+\\)$`)),
    ]);
    expect(sessions()).toEqual(all); // a dry run removes nothing

    const r = await reapCli([], { reapAfter: 0 });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^removed\\s+\\$\\d+\\s+"${dead.tmuxSession}"`))]);
    expect(sessions()).toEqual([live.tmuxSession!, mixed.tmuxSession!].sort());
    expect(ctx.fleet.isAlive(live) && ctx.fleet.isAlive(mixed)).toBe(true);
    expect((await reapCli([], { reapAfter: 0 })).stdout).toBe('');
  });

  it('the re-check is in the removing command: a session that has a live pane again is kept', async () => {
    const a = await leftover();
    const id = ctx.fleet.tmux(['display-message', '-p', '-t', a.tmuxSession!, '#{session_id}']).trim();
    await waitFor(
      () => Number(ctx.fleet.tmux(['display-message', '-p', '-t', a.paneId!, '#{pane_dead_time}']).trim()) * 1000 + 1000 <= Date.now(),
      10_000,
    );
    // a person respawns the pane after reap listed it as all-dead: the one command re-checks and keeps it
    ctx.fleet.tmux(['respawn-pane', '-t', a.paneId!, 'sleep 600']);
    const keep = await runChild(reapArgv(ctx.fleet.tmuxSocket, id, deadBefore(Date.now(), 0)), { timeoutMs: 5000 });
    expect(keep).toMatchObject({ ok: true });
    expect(keep.stdout.trim()).toBe('kept');
    expect(sessions()).toEqual([a.tmuxSession]);
    // the listing-based pass agrees
    const cfg = testConfig(ctx.fleet, { windows: { reapAfter: 0 } });
    expect((await runReap(cfg)).lines).toEqual([]);
  });

  it('runs with each expire scan', async () => {
    const a = await leftover();
    const live = await ctx.fleet.spawnInteractive();
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { expireEvery: 300, reapAfter: 100 } }));
    const reaped = () => ctx.sunset!.events.some((e) => e.event === 'reap:removed' && e.sessionName === a.tmuxSession);
    if (!(await waitFor(reaped, 20_000))) throw new Error('not reaped by the expire scan');
    expect(sessions()).toEqual([live.tmuxSession]);
    expect(ctx.fleet.isAlive(live)).toBe(true);
  });
});
