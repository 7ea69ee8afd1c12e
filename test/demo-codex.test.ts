// The stand-in Codex TUI (sim/fleet/codex.mjs) and the demo's Codex session: sunset's REAL Codex adapter finds the
// stand-in under its session id and rollout, reads its box and its turn, and `/quit` typed into its pane ends it;
// `sunset demo` run to its end narrates the Codex session asked once and leaving by `/quit`, and leaves nothing.
import { describe, expect, it } from 'vitest';
import { codex, draftOnScreen, busyOnScreen } from '../src/agents/codex.js';
import { readProcTable } from '../src/evidence/proc.js';
import { runDemo } from '../src/demo.js';
import { codexScript, pidAlive, waitFor } from '../sim/fleet/fleet.js';
import { useFleet } from './support/use-fleet.js';

const REDIS = () => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('the stand-in Codex TUI', () => {
  const t = useFleet();

  it('is found by the real Codex adapter under its session id, shows its box and turn, and leaves on /quit', async () => {
    const fleet = t.fleet;
    const a = await fleet.spawnCodex({ prompt: 'Write the changelog' });
    const cfg = { command: codexScript(), home: fleet.codexHome };
    const d = await codex.discover(await readProcTable(), cfg, Date.now());
    expect(d.problems).toEqual([]);
    expect(d.sessions.map((s) => [s.pid, s.sessionId, s.cwd, s.transcript?.path, s.turnInFlight])).toEqual([
      [a.pid, a.sessionId, a.cwd, a.rolloutPath, false],
    ]);
    const screen = () => fleet.tmux(['capture-pane', '-p', '-e', '-t', a.paneId]);
    expect(draftOnScreen(screen())).toBe(false);
    expect(busyOnScreen(screen())).toBe(false);

    // a typed line is a draft; Enter makes it a turn: busy on screen and in the rollout, then done
    fleet.tmux(['send-keys', '-t', a.paneId, '-l', 'and the notes']);
    expect(await waitFor(() => draftOnScreen(screen()) === true, 5000, 20)).toBe(true);
    fleet.tmux(['send-keys', '-t', a.paneId, 'Enter']);
    expect(await waitFor(() => busyOnScreen(screen()) === true, 5000, 20)).toBe(true);
    const busy = await codex.discover(await readProcTable(), cfg, Date.now());
    expect(busy.sessions[0]?.turnInFlight).toBe(true);
    expect(await waitFor(() => busyOnScreen(screen()) === false, 5000, 20)).toBe(true);

    // Backspace takes back what was typed; /quit + Enter ends the process (exit 0, no signal)
    fleet.tmux(['send-keys', '-t', a.paneId, '-l', 'xy']);
    fleet.tmux(['send-keys', '-t', a.paneId, 'BSpace', 'BSpace']);
    expect(await waitFor(() => draftOnScreen(screen()) === false, 5000, 20)).toBe(true);
    fleet.tmux(['send-keys', '-t', a.paneId, '-l', '/quit']);
    fleet.tmux(['send-keys', '-t', a.paneId, 'Enter']);
    expect(await waitFor(() => !pidAlive(a.pid), 5000, 20)).toBe(true);
    expect((await codex.discover(await readProcTable(), cfg, Date.now())).sessions).toEqual([]);
  }, 60_000);
});

describe('sunset demo', () => {
  it('runs to its end with the Codex session asked once and leaving by /quit', async () => {
    const lines: string[] = [];
    expect(await runDemo({ env: { REDIS_URL: REDIS() }, out: (s) => lines.push(s), keep: false })).toBe(0);
    const text = lines.join('\n');
    expect(text).not.toMatch(/stopped at the time limit/);
    expect(text.match(/ codex: asked once to wrap up \(a message typed into its pane\)/g)).toHaveLength(1);
    expect(text).toMatch(/ codex: left by its own exit path \(`\/quit` typed into its pane\); conversation resumable/);
    expect(text).toMatch(/exited by their own path: 7 \(.*\bcodex\b/);
    expect(text).toContain('signals received by any agent: 0');
    // nothing of it is left running: no stand-in Codex of any demo fleet
    const root = /a simulated fleet in (\S+)/.exec(text)![1];
    const left = [...(await readProcTable()).procs.values()].filter((p) => p.argv.some((w) => w.startsWith(`${root}/`)));
    expect(left.map((p) => p.argv.join(' '))).toEqual([]);
  }, 150_000);
});
