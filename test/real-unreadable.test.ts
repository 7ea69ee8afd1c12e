// claude-code-unreadable on the REAL Claude Code CLI (2.1.328, sim/real): two background sessions run, their job
// files are moved aside (the jobs folder renamed, as a CLI that keeps them elsewhere would leave it). The real CLI
// then lists no background session at all (`claude agents --json --all` builds its rows from those files), while
// their session files still show them live: sunset raises ONE alarm naming the version, what is missing and what it
// does meanwhile; `sunset verdict` and /metrics show it; the sessions are protected (job-unknown on the files'
// roster; off the CLI's roster nothing acts on them, and a released task naming one is not marked ended). Moved
// back, the alarm closes by itself. This test owns its HOME, daemon, tmux socket and Redis, and ends every process
// it started (RealFleet.destroy).
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTask, realConfig, useRealFleet, writeTask } from './support/real.js';
import { startTestSunset } from './support/sunset.js';
import { runCli } from './support/cli.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { createMetrics } from '../src/web/metrics.js';
import { metric } from './support/metrics.js';

const H = 3_600_000;
const KIND = 'claude-code-unreadable';
const ctx = useRealFleet();

describe('claude-code-unreadable on the real Claude Code CLI', () => {
  it('job files moved aside: one alarm with the version, shown by verdict and /metrics, the sessions protected; moved back: closed', async () => {
    const fleet = ctx.fleet;
    const a = await fleet.startBackground('[[state:done]] write the changelog');
    const b = await fleet.startBackground('[[state:done]] tidy the tests');
    for (const s of [a, b]) await fleet.waitForRow(s.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    // a released task on one of them, its grace far off: nothing is asked, but a reconcile would end a chain whose session has left the roster
    writeTask(fleet, { id: 't-a', state: 'done', sessionId: a.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
    const cfg = realConfig(fleet, ctx.redis.url, { windows: { grace: 10 * H, unreadableFor: 1000, reconcileEvery: 2000 } });
    const configFile = join(fleet.root, 'sunset-unreadable.json');
    writeFileSync(configFile, JSON.stringify(cfg));

    const jobs = join(fleet.claudeDir, 'jobs');
    renameSync(jobs, `${jobs}.aside`);
    expect(await fleet.roster()).toEqual([]); // the real CLI lists none of them now

    const sunset = await startTestSunset(cfg);
    ctx.sunset = sunset;
    const mine = () => sunset.deps.alarms.listed().filter((x) => x.kind === KIND);
    await fleet.waitFor(() => mine().length === 1, 60_000, 200);
    for (let i = 0; i < 3; i++) await sunset.reconcile(); // found again on every sweep: still one alarm
    expect(mine()).toHaveLength(1);
    const alarm = mine()[0];
    expect(alarm.version).toBe('2.1.328');
    expect(alarm.message).toMatch(/^Claude Code 2\.1\.328: its files do not read as sunset knows them for 2 of 2 live background sessions/);
    expect(alarm.message).toContain(`the job state file (${fleet.claudeDir}/jobs/<id>/state.json) is missing for 2 sessions`);
    expect(alarm.message).toMatch(/protected \(job-unknown\)/);
    expect(alarm.message).toMatch(/2 of them the CLI's roster does not list/);
    expect(alarm.ack).toBeNull();

    // sunset verdict: the fleet-level field (the CLI's roster is empty; the files show both sessions live)
    const v = await runCli(['verdict', '--json', '--config', configFile], { timeoutMs: 60_000 });
    expect(v.code, v.stderr).toBe(0);
    const j = JSON.parse(v.stdout);
    expect(j.sessions).toEqual([]);
    expect(j.claudeCodeUnreadable).toMatchObject({
      version: '2.1.328',
      sessions: 2,
      checked: 2,
      unlisted: expect.arrayContaining([a.sessionId, b.sessionId]),
      files: [{ file: 'job-state', problem: 'missing', sessions: expect.arrayContaining([a.shortId, b.shortId]) }],
      alarm: { id: alarm.id },
    });
    const text = await runCli(['verdict', '--config', configFile], { timeoutMs: 60_000 });
    expect(text.stdout).toMatch(/^claude-code-unreadable: Claude Code 2\.1\.328: /m);
    expect(text.stdout).toContain(`alarm ${alarm.id} (claude-code-unreadable) raised`);

    // on Claude Code's files (the schedule's sweeps) both are listed, and protected: their job cannot be read
    const files = await gatherFleet(cfg);
    expect(files.rosterFrom).toBe('files');
    for (const s of [a, b]) {
      const row = files.sessions.find((x) => x.sessionId === s.sessionId && x.pid !== null)!;
      expect(row.verdict).toBe('protected');
      expect(row.reasons).toContain('job-unknown');
    }

    // /metrics
    const metrics = createMetrics(sunset.deps, async () => []);
    let m = await metrics.collect();
    expect(metric(m, 'sunset_claude_code_unreadable')).toBe(1);
    expect(metric(m, 'sunset_claude_code_unreadable_sessions{file="job-state"}')).toBe(2);
    expect(metric(m, `sunset_alarms_open{kind="${KIND}"}`)).toBe(1);

    // the released task's session left the CLI's roster but runs: not marked ended
    expect(readTask(fleet, 't-a').exitedAt).toBeUndefined();

    // the files back: the alarm closes by itself; nothing was stopped meanwhile
    renameSync(`${jobs}.aside`, jobs);
    await fleet.waitFor(() => mine()[0]?.ack !== null, 60_000, 200);
    expect(mine()).toHaveLength(1);
    expect(mine()[0].ack).toMatchObject({ by: 'sunset', why: expect.stringMatching(/read again/) });
    m = await metrics.collect();
    expect(metric(m, 'sunset_claude_code_unreadable')).toBe(0);
    expect(metric(m, 'sunset_claude_code_unreadable_sessions{file="job-state"}')).toBe(0);
    const after = JSON.parse((await runCli(['verdict', '--json', '--config', configFile], { timeoutMs: 60_000 })).stdout);
    expect(after.claudeCodeUnreadable).toBeNull();
    expect(sunset.exitCalls).toEqual([]);
    for (const s of [a, b]) expect((await fleet.rosterRow(s.shortId))?.pid).toBe(s.pid);
    expect(readTask(fleet, 't-a').exitedAt).toBeUndefined();
    await sunset.close();
    ctx.sunset = null;
  }, 600_000);
});
