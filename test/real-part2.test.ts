// sunset on the REAL Claude Code CLI, part 2: the ask reaches the model (its messaging socket) exactly once,
// before any exit request, also across a kill -9 of sunset between the ask and its latch; /exit never eats a
// person's draft; a background job Claude Code marks done leaves with no task file and comes back with
// --resume; a blocked and a working one stay; a lane awaiting a human is pinned against Claude Code's own
// reaper while open, and only sunset's pin is taken back after. This test owns its HOME, daemon, tmux socket
// and Redis, and ends every process it started (RealFleet.destroy).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RealFleet } from '../sim/real/real-fleet.js';
import type { OwnRedis } from './support/redis.js';
import { realConfig, readTask, useRealFleet, writeTask } from './support/real.js';
import { startTestSunset, type TestSunset } from './support/sunset.js';
import { CLI } from './support/cli.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { readAudit } from '../src/store/audit.js';
import type { Config } from '../src/config.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const ctx = useRealFleet();
let fleet: RealFleet;
let redis: OwnRedis;
let sunset: TestSunset | null = null;
beforeAll(() => {
  fleet = ctx.fleet;
  redis = ctx.redis;
});
afterAll(async () => {
  await sunset?.close();
});

/** How many times the model of `sessionId` was sent sunset's ask (a new prompt, counted once however often the conversation is re-sent). */
const asksSent = (sessionId: string) => fleet.api.userTextsSeen(sessionId).filter((t) => t.includes('sunset: your')).length;
const configFile = (cfg: Config) => {
  const f = join(fleet.root, `sunset-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(f, JSON.stringify(cfg));
  return f;
};

describe('sunset on the real Claude Code CLI, part 2', () => {
  it('asks over the messaging socket (each model sent the text once, before any request); a draft is never typed over; a done job leaves with no task file and resumes; blocked and working ones stay', async () => {
    const tasked = await fleet.startBackground('[[state:done]] write the changelog');
    const inter = await fleet.startInteractive('[[reply:Done.]] rename the module');
    const drafted = await fleet.startInteractive('[[reply:Done.]] tidy the tests');
    const native = await fleet.startBackground('[[state:done]] bump the version'); // no task file anywhere
    const blocked = await fleet.startBackground('[[state:blocked needs=Which branch?]] prepare the release');
    const working = await fleet.startBackground('[[state:working]] refactor the parser');
    writeTask(fleet, { id: 't-bg', state: 'done', sessionId: tasked.sessionId, releasedAt: ago(H) });
    writeTask(fleet, { id: 't-i', state: 'done', sessionId: inter.sessionId, releasedAt: ago(H) });
    writeTask(fleet, { id: 't-draft', state: 'done', sessionId: drafted.sessionId, releasedAt: ago(H) });
    for (const s of [tasked, native]) await fleet.waitForRow(s.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    await fleet.waitForRow(blocked.shortId, (r) => r?.state === 'blocked', 60_000);
    await fleet.waitForRow(working.shortId, (r) => r?.state === 'working' && r.status === 'idle', 60_000);
    await fleet.waitReady(drafted.paneId);
    await fleet.waitFor(() => /Done\./.test(fleet.capturePane(drafted.paneId)), 30_000);
    fleet.typeDraft(drafted.paneId, 'one more thing about the fixtures');
    await fleet.waitFor(() => fleet.capturePane(drafted.paneId).includes('one more thing about the fixtures'), 10_000);
    const draftScreen = fleet.capturePane(drafted.paneId);

    const cfg = realConfig(fleet, redis.url, { windows: { askWait: 1500, retryWait: 1500, silence: 1000 } });
    const snap = await gatherFleet(cfg);
    const by = (sid: string) => snap.sessions.find((s) => s.sessionId === sid && s.pid !== null)!;
    expect(by(drafted.sessionId).reasons).toContain('draft-pending');
    expect(by(native.sessionId).evidence.native).toBeTruthy();
    expect(by(blocked.sessionId).reasons).toContain('job-blocked');
    expect(by(working.sessionId).reasons).toContain('idle-short'); // untasked and working: the 48 h expire only

    sunset = await startTestSunset(cfg);
    await fleet.waitFor(() => ['t-bg', 't-i'].every((t) => Boolean(readTask(fleet, t).exitedAt)), 120_000, 300);
    await fleet.waitFor(
      async () => !(await fleet.roster()).find((r) => r.id === native.shortId && typeof r.pid === 'number'),
      120_000,
      500,
    );
    // every asked session's model was sent the ask exactly once, before any exit request
    for (const s of [tasked, inter, native]) expect(asksSent(s.sessionId), s.sessionId).toBe(1);
    const audit = readAudit(cfg.stateDir);
    for (const s of [tasked, inter, native]) {
      const asked = audit.findIndex((e) => e.event === 'exit:asked' && e.sessionId === s.sessionId);
      const requested = audit.findIndex((e) => e.event === 'exit:requested' && e.sessionId === s.sessionId);
      expect(asked, s.sessionId).toBeGreaterThanOrEqual(0);
      expect(audit[asked]!.via).toBe('socket');
      expect(requested).toBeGreaterThan(asked);
    }
    // the draft: never typed over, byte for byte the person's
    expect(readTask(fleet, 't-draft').exitAskedAt).toBeUndefined();
    expect(fleet.capturePane(drafted.paneId)).toContain('one more thing about the fixtures');
    expect(
      fleet
        .capturePane(drafted.paneId)
        .split('\n')
        .filter((l) => l.includes('one more thing')),
    ).toEqual(draftScreen.split('\n').filter((l) => l.includes('one more thing')));
    expect(asksSent(drafted.sessionId)).toBe(0);
    // blocked and working: never asked, still running
    for (const s of [blocked, working]) {
      expect(asksSent(s.sessionId)).toBe(0);
      expect((await fleet.rosterRow(s.shortId))?.pid).toBe(s.pid);
    }
    await sunset.close();
    sunset = null;
    // the done job, stopped by its own path, comes back with its conversation
    const r = await fleet.claude(['--resume', native.sessionId, '-p', 'and now?'], { cwd: native.cwd, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
  }, 600_000);

  it("pins a lane awaiting a human against Claude Code's reaper while it is open, and takes back only its own pin; a kill -9 between ask and latch still yields one message", async () => {
    const lane = await fleet.startBackground('[[state:done]] answer the reviewer');
    const mine = await fleet.startBackground('[[state:done]] keep this one');
    await fleet.waitForRow(lane.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    fleet.pin(mine.shortId); // a person's pin
    writeTask(fleet, { id: 't-lane', state: 'awaiting-human', sessionId: lane.sessionId });
    const cfg = realConfig(fleet, redis.url, { windows: { askWait: H, silence: 1000 } });
    sunset = await startTestSunset(cfg);
    await sunset.reconcile();
    await fleet.waitFor(() => fleet.pins().includes(lane.shortId), 20_000);
    expect(fleet.pins()).toEqual([mine.shortId, lane.shortId]);
    await sunset.close();
    sunset = null;

    // the task turns done; `sunset up` (a process) is killed -9 right after the ask is sent, before its latch
    writeTask(fleet, { id: 't-lane', state: 'done', sessionId: lane.sessionId, releasedAt: ago(H) });
    const file = configFile(cfg);
    const up = (env: Record<string, string> = {}) =>
      spawn(process.execPath, [CLI, 'up', '--role', 'producers', '--role', 'workers', '--config', file], {
        stdio: 'ignore',
        env: { ...process.env, ...env },
      });
    const first = up({ SUNSET_CRASH_AT: 'ask:delivered' });
    const code = await new Promise<number | null>((res) => first.on('exit', (c) => res(c)));
    expect(code).toBe(137);
    expect(readTask(fleet, 't-lane').exitAskedAt).toBeUndefined(); // the crash came before the latch
    await fleet.waitFor(() => asksSent(lane.sessionId) === 1, 30_000);
    const second = up();
    try {
      await fleet.waitFor(() => Boolean(readTask(fleet, 't-lane').exitAskedAt), 60_000, 300);
      await fleet.waitFor(() => !fleet.pins().includes(lane.shortId), 60_000, 300);
    } finally {
      second.kill('SIGTERM'); // a sunset this test started
      await new Promise((res) => second.on('exit', res));
    }
    expect(asksSent(lane.sessionId)).toBe(1); // one message, across the crash
    expect(fleet.pins()).toEqual([mine.shortId]); // only sunset's pin taken back
  }, 600_000);

  it('a busy session is looked at again the moment its turn ends (notify_when_idle over its socket), not at the next recheck', async () => {
    const s = await fleet.startBackground('[[slow:12000]] [[state:done]] write a long essay');
    await fleet.waitForRow(s.shortId, (r) => r?.status === 'busy', 60_000);
    writeTask(fleet, { id: 't-busy', state: 'done', sessionId: s.sessionId, releasedAt: ago(H) });
    // a recheck of ten minutes: only the session's own notice can bring the ask within this test's deadline
    const cfg = realConfig(fleet, redis.url, { windows: { askWait: H, silence: 1000, recheck: 600_000 } });
    sunset = await startTestSunset(cfg);
    await fleet.waitFor(() => sunset!.events.some((e) => e.event === 'idle:asked' && e.sessionId === s.sessionId), 30_000);
    expect(readTask(fleet, 't-busy').exitAskedAt).toBeUndefined();
    await fleet.waitFor(() => Boolean(readTask(fleet, 't-busy').exitAskedAt), 120_000, 300);
    // the session said it went idle over its socket; the ask was woken by that notice, or a moment before it by the
    // session's file saying the same (session-watch.ts: whichever comes first promotes it, the other finds it gone)
    const notice = () => sunset!.events.find((e) => e.event === 'idle:notice' && e.sessionId === s.sessionId);
    await fleet.waitFor(() => notice() !== undefined, 30_000);
    expect(notice()).toMatchObject({ state: 'idle' });
    const wokeBy = sunset.events.filter(
      (e) =>
        (e.event === 'idle:notice' || e.event === 'idle:file-moved') &&
        e.sessionId === s.sessionId &&
        e.woke?.some((id: string) => /^ask\//.test(id)),
    );
    expect(wokeBy.length).toBeGreaterThan(0);
    expect(wokeBy[0].state).toBe('idle');
    // the ask reaches the model on the session's next turn, a moment after sunset latches exitAskedAt
    await fleet.waitFor(() => asksSent(s.sessionId) >= 1, 30_000);
    expect(asksSent(s.sessionId)).toBe(1);
    // the request for a notice is the session's business, not its model's
    expect(fleet.api.userTextsSeen(s.sessionId).some((t) => t.includes('asked to be told'))).toBe(false);
    await sunset.close();
    sunset = null;
  }, 300_000);
});
