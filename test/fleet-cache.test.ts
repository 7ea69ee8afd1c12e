// The fleet cache: one sweep shared by the callers of a moment, and let go of soon after — a snapshot of a big
// fleet held at rest was ~4 MB of a resting sunset (docs/benchmarks.md, idle RSS).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { testConfig } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { fleetCache, KEEP_MS } from '../src/evidence/fleet-cache.js';
import { waitFor } from '../sim/fleet/fleet.js';
import type { FleetSnapshot } from '../src/evidence/fleet.js';

const ctx = useFleet();

// a full GC on demand, so that "nothing holds it" can be seen (a WeakRef empties only when it is collected)
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('fleetCache', () => {
  it('shares a recent snapshot, and holds none once KEEP_MS has passed', async () => {
    const s = await ctx.fleet.spawnBackground({ transcriptAgeMs: 3_600_000 });
    ctx.fleet.writeTask({ id: 't-cache', state: 'done', sessionId: s.sessionId });
    const source = fleetCache(testConfig(ctx.fleet));
    const ref = await (async () => {
      const first = await source(1000);
      expect(first.sessions.some((v) => v.sessionId === s.sessionId)).toBe(true);
      expect(await source(1000)).toBe(first); // the second caller of the moment shares it
      return new WeakRef<FleetSnapshot>(first);
    })();
    const since = Date.now();
    const gone = await waitFor(
      () => {
        gc();
        return ref.deref() === undefined;
      },
      KEEP_MS + 10_000,
      100,
    );
    expect(gone).toBe(true);
    expect(Date.now() - since).toBeGreaterThanOrEqual(KEEP_MS - 200); // kept while a caller may still want it
    // and a caller after that sweeps anew
    const later = await source(1000);
    expect(later.sessions.some((v) => v.sessionId === s.sessionId)).toBe(true);
  });

  it('a sweep on the files never waits behind a slow one on the CLI; CLI callers share the next CLI sweep', async () => {
    const s = await ctx.fleet.spawnBackground({ transcriptAgeMs: 3_600_000 });
    const base = testConfig(ctx.fleet);
    // the CLI's roster, 1.5 s late (a loaded box): the schedule's sweeps read Claude Code's files meanwhile
    const slow = ['sh', '-c', 'sleep 1.5; exec "$0" "$@"', ...base.fleet.rosterCommand];
    const source = fleetCache({ ...base, fleet: { ...base.fleet, rosterCommand: slow, rosterFrom: 'files' } });
    const t0 = Date.now();
    const cli = source(0, { roster: 'cli' });
    await new Promise((r) => setTimeout(r, 50));
    const files = await source(0, { tmux: 'if-needed' });
    const filesMs = Date.now() - t0;
    expect(files.rosterFrom).toBe('files');
    expect(files.sessions.some((v) => v.sessionId === s.sessionId)).toBe(true);
    expect(filesMs).toBeLessThan(1400); // it did not wait for the CLI's 1.5 s
    // a second caller on the CLI's word, after the first began: the next CLI sweep, shared by every such caller
    const [a, b] = [source(0, { roster: 'cli' }), source(0, { roster: 'cli' })];
    const first = await cli;
    expect(first.rosterFrom).toBe('cli');
    const [sa, sb] = await Promise.all([a, b]);
    expect(sa).toBe(sb);
    expect(sa).not.toBe(first);
    expect(sa.rosterFrom).toBe('cli');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3000); // two CLI sweeps, one after the other, never at once
  });
});
