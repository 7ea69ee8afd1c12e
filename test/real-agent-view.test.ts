// sunset on the REAL Claude Code CLI (2.1.328, sim/real): the agent view opened the two other ways a person opens it —
// `claude --model opus agents`, and a plain `claude` when ~/.claude.json says "defaultToAgentsView": true — is the
// agent view on screen, and sunset counts it as one: the background sessions it lists are not asked or stopped.
// This test owns its HOME, daemon, tmux socket and Redis, and ends every process it started (RealFleet.destroy).
import { describe, expect, it } from 'vitest';
import { realConfig, useRealFleet } from './support/real.js';
import { gatherFleet } from '../src/evidence/fleet.js';

const ctx = useRealFleet();

describe('the agent view on the real Claude Code CLI, opened another way than `claude agents`', () => {
  it('`claude --model opus agents` and a plain `claude` with defaultToAgentsView protect the background sessions', async () => {
    const fleet = ctx.fleet;
    // before any session runs (sessions write this file too)
    fleet.setGlobalConfig({ defaultToAgentsView: true });
    const bg = await fleet.startBackground('[[state:done]] write the changelog');
    await fleet.waitForRow(bg.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    const cfg = realConfig(fleet, ctx.redis.url);
    const sweep = async () => {
      const snap = await gatherFleet(cfg);
      expect(snap.roster.ok, JSON.stringify(snap.roster)).toBe(true);
      return { snap, bg: snap.sessions.find((s) => s.sessionId === bg.sessionId && s.pid !== null)! };
    };
    expect((await sweep()).bg.reasons).not.toContain('attach-unknown');

    for (const argv of [['--model', 'opus', 'agents'], []]) {
      const view = await fleet.agentView({ argv });
      // the agent view itself (its list of background sessions), not an interactive session
      await fleet.waitForScreen(view.paneId, /1 completed/, 30_000);
      const { snap, bg: seen } = await sweep();
      expect(snap.agentViewsOpen, JSON.stringify(argv)).toEqual([{ pid: view.pid, cwd: null }]);
      expect(seen.verdict).toBe('protected');
      expect(seen.reasons).toContain('attach-unknown');
      await view.close();
      expect((await sweep()).snap.agentViews).toBe(0);
    }
  }, 300_000);
});
