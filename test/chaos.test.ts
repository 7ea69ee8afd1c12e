// The chaos suite's short form, part of `npm test` (alone: `npm run chaos:short`): each fault of
// chaos/scenarios.ts once, on redis-servers, tmux servers and test fleets it starts itself (never the
// shared Redis of the other tests), against a real `sunset up` from dist/ (`npm test` builds first).
// Every column that must be 0 is 0, and every session a fault put at risk was simply spared. The full
// suite — kill -9 at 20 random points, every fault several times — is `npm run chaos`.
//
// A failure names its seed: CHAOS_SEED=<seed> replays its random points. CHAOS_JOBS sets the runs at once
// (default 2), CHAOS_VERBOSE=1 prints every run's timeline. The whole form gives up after CHAOS_DEADLINE
// seconds (default 600), tearing down what it started, so a wedged run fails the suite instead of holding it.
// `npm run chaos` reads the same variables the same way (chaosEnv); `npm run chaos -- --help` says what
// each fault and column is.
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS, chaosEnv, failing, formatTable, runChaos } from '../chaos/run.js';
import { SCENARIOS, cleanupAll } from '../chaos/scenarios.js';

const env = chaosEnv(process.env); // a bad CHAOS_* value fails the file, naming it
const seed = env.seed ?? Math.floor(Math.random() * 2 ** 31);
const jobs = env.jobs ?? DEFAULTS.jobs;
const deadlineMs = (env.deadlineS ?? DEFAULTS.deadlineS.short) * 1000;

// whatever a failed or timed-out run left (its sunset, redis-server, fleet): the harness's own processes
afterAll(() => cleanupAll(), 120_000);

describe('chaos, short form', () => {
  it(
    'every fault once: nothing asked twice, never over 3 requests, alarms once, no field lost, no signal; at-risk sessions spared',
    async () => {
      const started = Date.now();
      const lines: string[] = [];
      const rows = await runChaos({
        short: true,
        seed,
        jobs,
        deadlineMs,
        log: (line) => {
          lines.push(line);
          if (process.env.CHAOS_VERBOSE) console.log(line);
        },
      });
      const runs = rows.reduce((n, r) => n + r.runs, 0);
      const wall = Math.round((Date.now() - started) / 1000);
      console.log(
        `chaos (short form, seed ${seed}, ${jobs} at a time): ${runs} runs in ${wall} s\n${formatTable(rows)}${process.env.CHAOS_VERBOSE ? '' : `\n${lines.join('\n')}`}`,
      );
      expect(rows.map((r) => r.key)).toEqual(SCENARIOS.map((s) => s.key)); // every fault of the suite
      for (const row of rows) {
        expect.soft(failing(row.m), `${row.fault} (seed ${row.seeds.join(', ')}):\n  ${row.m.notes.join('\n  ')}`).toEqual([]);
        expect.soft(row.runs, row.fault).toBeGreaterThan(0);
      }
    },
    // bounded twice: runChaos's own deadline, then vitest's
    deadlineMs + 120_000,
  );
});
