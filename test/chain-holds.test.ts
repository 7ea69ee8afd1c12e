// A chain kind that holds untasked sessions of its own (ChainKindAdapter.holds): the sweep asks it of every row,
// and the verdict judges such a session on that chain, as it does a finished Claude Code job's — on the stand-in
// fleet (real processes, a private tmux server).
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { runExpireScan } from '../src/pipeline/expire.js';
import { useFleet } from './support/use-fleet.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { CHAIN_KINDS, chainReaders } from '../src/pipeline/chain-kinds/index.js';
import { DryRunLatches } from '../src/pipeline/dry-run.js';

const H = 3_600_000;
const ctx = useFleet();

describe("a kind's own hold on an untasked session (evidence.held)", () => {
  it('without it the session waits on the expire window; held, it is judged on the held chain; a dry run sees its latches', async () => {
    const a = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    const cfg = testConfig(ctx.fleet, { windows: { expireIdle: 48 * H } });
    const view = async (o = {}) =>
      (await gatherFleet(cfg, { ...chainReaders(cfg), ...o })).sessions.find((s) => s.sessionId === a.sessionId)!;
    expect((await view()).reasons).toEqual(['idle-short']); // untasked: 48 h of silence first

    // lent a hold, as a new kind's file would bring one (the expire kind has none of its own)
    const startedAt = new Date(Date.now() - H).toISOString();
    CHAIN_KINDS.expire.holds = (_config, row) =>
      row.sessionId === a.sessionId ? { key: 'held/x', facts: { requests: 0, startedAt } } : null;
    try {
      const v = await view();
      expect(v.evidence.held).toEqual({ kind: 'expire', shape: 'expire', key: 'held/x', facts: { requests: 0, startedAt } });
      expect(v).toMatchObject({ verdict: 'eligible', reasons: [], next: { step: 'expire', n: 1 } });
      // and the expire scan leaves it to that chain (it would otherwise expire it: the window is 48 h, but it is held)
      ctx.sunset = await startTestSunset(cfg);
      expect((await runExpireScan(ctx.sunset.deps, { dryRun: true })).lines.map((l) => l.sessionId)).not.toContain(a.sessionId);
      // a chain that gave up protects, as any chain's does
      CHAIN_KINDS.expire.holds = () => ({ key: 'held/x', facts: { requests: 3, startedAt, gaveUpAt: startedAt } });
      expect((await view()).reasons).toContain('gave-up');
      // a dry run's latches over the kind's facts, under the key it gave
      const dry = new DryRunLatches();
      dry.latch('held/x', { exitedAt: new Date().toISOString() });
      CHAIN_KINDS.expire.holds = () => ({ key: 'held/x', facts: { requests: 0, startedAt } });
      expect((await view({ dry })).reasons).toContain('resumed');
    } finally {
      delete CHAIN_KINDS.expire.holds;
    }
    expect((await view()).reasons).toEqual(['idle-short']);
  });
});
