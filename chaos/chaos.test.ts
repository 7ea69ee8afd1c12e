// The chaos suite's short form (`npm run chaos -- --short`): each fault once, on redis-servers, tmux servers
// and test fleets it starts itself, against a real `sunset up` (dist/: `npm run chaos:short` builds first), two at a time.
// Every column that must be 0 is 0, and every session a fault put at risk was simply spared. The full suite —
// kill -9 at 20 random points, Redis absent and restarted, the roster hanging and printing garbage — is
// `npm run chaos`. A failure names its seed: CHAOS_SEED=<seed> replays its random points.
import { describe, expect, it } from 'vitest';
import { failing, formatTable, runChaos } from './run.js';

const seed = Number(process.env.CHAOS_SEED) || Math.floor(Math.random() * 2 ** 31);

describe('chaos, short form', () => {
  it('every fault once: nothing asked twice, never over 3 requests, alarms once, no field lost, no signal; at-risk sessions spared', async () => {
    const rows = await runChaos({ short: true, seed, jobs: 2, log: (line) => process.env.CHAOS_VERBOSE && console.log(line) });
    console.log(`chaos (short form, seed ${seed}):\n${formatTable(rows)}`);
    expect(rows.length).toBeGreaterThan(5);
    for (const row of rows) {
      expect.soft(failing(row.m), `${row.fault} (seed ${row.seeds.join(', ')}):\n  ${row.m.notes.join('\n  ')}`).toEqual([]);
      expect.soft(row.runs, row.fault).toBeGreaterThan(0);
    }
  }, 30 * 60_000);
});
