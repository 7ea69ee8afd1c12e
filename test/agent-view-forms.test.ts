// Integration (the test fleet, real processes): an agent view opened another way than `claude agents` protects the
// background sessions it lists all the same — `claude --model opus agents`, and a plain `claude` where the person's
// ~/.claude.json says "defaultToAgentsView": true (read each sweep; a file that does not parse protects).
import { describe, expect, it } from 'vitest';
import { testConfig } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { gatherFleet } from '../src/evidence/fleet.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

const ctx = useFleet();

describe('an agent view however it was opened', () => {
  it('`claude --model opus agents` and a plain `claude` with defaultToAgentsView protect every background session', async () => {
    const free = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-free', state: 'done', sessionId: free.sessionId, releasedAt: ago(H) });
    const cfg = testConfig(ctx.fleet);
    const sweep = async () => {
      const snap = await gatherFleet(cfg);
      return { snap, free: snap.sessions.find((s) => s.sessionId === free.sessionId)! };
    };
    expect((await sweep()).free.verdict).toBe('eligible');

    // options of the CLI before the verb: the verb is `agents`, not `opus`
    const modelled = await ctx.fleet.agentView({ argv: ['--model', 'opus', 'agents'] });
    let s = await sweep();
    expect(s.snap.agentViewsOpen).toEqual([{ pid: modelled.pid, cwd: null }]);
    expect(s.free).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    await modelled.close();
    expect((await sweep()).free.verdict).toBe('eligible');

    // a plain `claude` opens the agent view when ~/.claude.json says so
    ctx.fleet.setClaudeJson('{"theme": "dark", "defaultToAgentsView": true}\n');
    const plain = await ctx.fleet.agentView({ argv: [] });
    s = await sweep();
    expect(s.snap.agentViewsOpen).toEqual([{ pid: plain.pid, cwd: null }]);
    expect(s.free).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    // the same process, read with the config saying otherwise: an interactive session, no view
    ctx.fleet.setClaudeJson('{"theme": "dark", "defaultToAgentsView": false}\n');
    s = await sweep();
    expect(s.snap.agentViews).toBe(0);
    expect(s.free.verdict).toBe('eligible');
    // a config that does not parse cannot say: it protects
    ctx.fleet.setClaudeJson('{"theme": "dark", "defaultToAgentsVi');
    s = await sweep();
    expect(s.snap.agentViewsOpen).toEqual([{ pid: plain.pid, cwd: null }]);
    expect(s.free).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    // no config at all is the CLI's default: no view
    ctx.fleet.setClaudeJson(null);
    expect((await sweep()).free.verdict).toBe('eligible');
    await plain.close();
  });
});
