// The exit wave bench's own rules (bench/realfleet-wave.ts): who finishes, what counts as gone (a zombie does), and
// the log lines each exit is split by.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { finishingOf, finishingSet, logTimes, processGone } from '../bench/realfleet-wave.js';
import { waitFor } from '../sim/fleet/fleet.js';

describe('the exit wave', () => {
  it('finishes 22 of 30 and 44 of 60, spread so both kinds finish about equally', () => {
    expect(finishingOf(30)).toBe(22);
    expect(finishingOf(60)).toBe(44);
    expect(finishingOf(30, 40)).toBe(30);
    for (const [n, f] of [
      [30, 22],
      [60, 44],
    ]) {
      const set = finishingSet(n, f);
      expect(set.filter(Boolean).length).toBe(f);
      const even = set.filter((x, i) => x && i % 2 === 0).length; // background: the even indices
      expect(Math.abs(even - (f - even))).toBeLessThanOrEqual(1);
    }
  });

  it('counts a zombie as gone, a running process as not, and a missing pid as gone', async () => {
    // sh execs into sleep, whose child (sh's `true &`) ends and is never reaped: a zombie for as long as sleep runs
    const p = spawn('sh', ['-c', 'true & exec sleep 5'], { stdio: 'ignore' });
    const parent = p.pid!;
    const start = readFileSync(`/proc/${parent}/stat`, 'utf8').split(') ')[1].split(' ')[19];
    let zombie: number | null = null;
    const found = await waitFor(
      () => {
        const kids = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
        zombie = kids.find((k) => readFileSync(`/proc/${k}/stat`, 'utf8').split(') ')[1].startsWith('Z')) ?? null;
        return zombie !== null;
      },
      5_000,
      20,
    );
    try {
      expect(found).toBe(true);
      expect(processGone(zombie!, null)).toBe(true);
      expect(processGone(parent, start)).toBe(false);
      expect(processGone(parent, String(Number(start) + 1))).toBe(true); // another process under a reused pid
    } finally {
      p.kill(); // our own child, by its pid
    }
    await new Promise((r) => p.once('exit', r));
    expect(await waitFor(() => processGone(parent, start), 5_000, 20)).toBe(true);
  });

  it("reads each decision's first time by event and task from sunset's log", () => {
    const log = [
      '{"level":30,"time":"2026-12-03T19:00:00.000Z","event":"exit:asked","taskId":"t-1"}',
      'not json',
      '{"level":30,"time":"2026-12-03T19:00:01.500Z","event":"exit:asked","taskId":"t-1"}',
      '{"level":30,"time":"2026-12-03T19:00:02.000Z","event":"exit:calling","taskId":"t-1"}',
      '{"level":30,"time":"2026-12-03T19:00:03.000Z","event":"exit:calling"}',
    ].join('\n');
    const t = logTimes(log);
    expect(t.get('exit:asked t-1')).toBe(Date.parse('2026-12-03T19:00:00.000Z'));
    expect(t.get('exit:calling t-1')).toBe(Date.parse('2026-12-03T19:00:02.000Z'));
    expect(t.size).toBe(2);
  });
});
