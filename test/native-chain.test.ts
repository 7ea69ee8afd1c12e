// Finished Claude Code jobs leave with no Driver task (the native chain), and a person's draft is never typed
// over. On the stand-in fleet (real processes, a private tmux server); test/real-part2.test.ts runs the real CLI.
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { Alarms } from '../src/store/alarms.js';
import { writeMade } from '../src/store/pins-made.js';

const H = 3_600_000;
const ctx = useFleet();
const until = untilWithin(20_000);
const settled = (ago = H) => ({
  state: 'done',
  tempo: 'idle',
  inFlight: { tasks: 0, queued: 0 },
  lastTerminalAt: new Date(Date.now() - ago).toISOString(),
});

describe('the native chain: a background job Claude Code marks done leaves, with no task file', () => {
  it('grace after it settled, the one ask, claude stop; working, blocked, failed and stopped jobs are left alone', async () => {
    const done = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(done, settled());
    const working = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const blocked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(blocked, { state: 'blocked', needs: 'which branch?' });
    const failed = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(failed, { state: 'failed' });
    const busy = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(busy, { ...settled(), inFlight: { tasks: 1, queued: 0 } });
    const interactive = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H }); // untasked interactive: the 48 h expire
    const cfg = testConfig(ctx.fleet, { windows: { expireIdle: 48 * H } });
    const snap = await gatherFleet(cfg);
    const by = (a: { sessionId: string }) => snap.sessions.find((s) => s.sessionId === a.sessionId)!;
    expect(by(done)).toMatchObject({ verdict: 'eligible', next: { step: 'ask' } });
    expect(by(done).evidence.native).toBeTruthy();
    expect(by(working).reasons).toEqual(['idle-short']);
    expect(by(blocked).reasons).toContain('job-blocked');
    expect(by(failed).reasons).toEqual(['idle-short']); // a failed job ends no chain by itself: a person may want to look
    expect(by(busy).reasons).toContain('job-in-flight');
    expect(by(interactive).reasons).toEqual(['idle-short']);

    ctx.sunset = await startTestSunset(cfg);
    await until('the done job left', () => ctx.fleet.ended(done).length > 0);
    expect(ctx.fleet.ended(done)).toMatchObject([{ how: 'stop' }]);
    expect(ctx.fleet.messages(done).map((m) => m.text)).toEqual([expect.stringMatching(/your job \([0-9a-f]{8}\) is done/)]);
    await ctx.sunset.reconcile();
    for (const a of [working, blocked, failed, busy, interactive]) {
      expect(ctx.fleet.isAlive(a)).toBe(true);
      expect(ctx.fleet.messages(a)).toEqual([]);
    }
    expect(ctx.sunset.exitCalls).toEqual([done.id]);
    // a task naming a session takes its chain over: no native chain for it
    const tasked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(tasked, settled());
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: tasked.sessionId });
    await ctx.sunset.reconcile();
    expect((await gatherFleet(cfg)).sessions.find((s) => s.sessionId === tasked.sessionId)!.reasons).toEqual(['task-not-terminal']);
  });

  it('a job that settles while sunset runs starts its chain from the job file event, not the next reconcile (an hour away)', async () => {
    const later = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setJob(later, { state: 'working', tempo: 'active', inFlight: { tasks: 1, queued: 0 } });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { reconcileEvery: H, expireEvery: H, expireIdle: 48 * H } }));
    const running = ctx.sunset;
    // the start's reconcile pass and the scheduler's first run have looked (and found nothing to do), and set the watches
    await until('the start reconciles', () => running.events.filter((e) => e.event === 'reconcile:done').length === 2);
    expect(ctx.fleet.messages(later)).toEqual([]);
    const passes = running.events.filter((e) => e.event === 'reconcile:done').length;
    ctx.fleet.setJob(later, settled(0));
    await until('the settled job left', () => ctx.fleet.ended(later).length > 0);
    expect(ctx.fleet.messages(later)).toHaveLength(1);
    expect(running.events.some((e) => e.event === 'jobs-watch:looked' && e.jobs.includes(later.id))).toBe(true);
    expect(running.events.filter((e) => e.event === 'reconcile:done')).toHaveLength(passes);
  });

  it('a job that ignores claude stop: one ask, three requests, one alarm; fleet.jobChain false turns it off', async () => {
    const stubborn = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    ctx.fleet.setJob(stubborn, settled());
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { exitConfirm: 300, expireIdle: 48 * H } }));
    await until('gave up', () => new Alarms(ctx.sunset!.config).list().some((a) => a.kind === 'session-will-not-exit'), 30_000);
    expect(ctx.fleet.messages(stubborn)).toHaveLength(1);
    expect(ctx.fleet.requests(stubborn).map((r) => r.how)).toEqual(['stop', 'stop', 'stop']);
    await ctx.sunset.reconcile();
    expect(ctx.fleet.requests(stubborn)).toHaveLength(3);
    const off = await gatherFleet(testConfig(ctx.fleet, { fleet: { jobChain: false }, windows: { expireIdle: 48 * H } }));
    expect(off.sessions.find((s) => s.sessionId === stubborn.sessionId)!.reasons).toEqual(['idle-short']);
  });
});

describe("a person's draft", () => {
  it('is never typed over: draft-pending until it is sent or cleared, then /exit', async () => {
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't', state: 'done', sessionId: i.sessionId });
    await until('its prompt is drawn', () => ctx.fleet.tmux(['capture-pane', '-p', '-t', i.paneId!]).includes('Type /exit to leave.'));
    ctx.fleet.tmux(['send-keys', '-t', i.paneId!, '-l', 'half a thought']); // typed, no Enter
    const cfg = testConfig(ctx.fleet);
    await until('the draft is on screen', () =>
      ctx.fleet.tmux(['capture-pane', '-p', '-t', i.paneId!]).includes('\u276f\u00a0half a thought'),
    );
    const v = (await gatherFleet(cfg)).sessions.find((s) => s.sessionId === i.sessionId)!;
    expect(v.reasons).toContain('draft-pending');
    ctx.sunset = await startTestSunset(cfg);
    await until(
      'deferred on the draft',
      () => ctx.sunset!.events.filter((e) => /deferred$/.test(e.event) && /draft-pending/.test(e.why ?? '')).length >= 2,
    );
    expect(ctx.fleet.typed(i)).toEqual([]); // nothing typed: the draft is still the person's
    expect(ctx.fleet.tmux(['capture-pane', '-p', '-t', i.paneId!])).toContain('\u276f\u00a0half a thought');
    ctx.fleet.tmux(['send-keys', '-t', i.paneId!, 'Enter']); // the person sends it
    await until('it left by /exit', () => ctx.fleet.ended(i).length > 0);
    expect(ctx.fleet.typed(i).map((t) => t.line)).toEqual(['half a thought', '/exit']);
  });
});

describe("one doctrine for both reapers: sunset pins what Claude Code's own reaper must not retire", () => {
  it("pins a lane awaiting a human, takes back only its own pin when the task turns done; a person's pin and every other byte survive", async () => {
    const lane = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const person = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setPins([person.id, 'deadbeef']); // a person's pins (one for a session long gone)
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { expireIdle: 48 * H } }));
    await ctx.sunset.reconcile();
    await until('pinned', () => (ctx.fleet.pinsText() ?? '').includes(lane.id));
    expect(ctx.fleet.pinsText()).toBe(JSON.stringify([person.id, 'deadbeef', lane.id], null, 2)); // the CLI's own format, order kept
    // sunset's own pin is not a person's: the lane is protected by its task, not by "pinned"
    const v = (await gatherFleet(ctx.sunset.config)).sessions.find((s) => s.sessionId === lane.sessionId)!;
    expect(v.reasons).toEqual(['task-not-terminal']);
    expect((await gatherFleet(ctx.sunset.config)).sessions.find((s) => s.sessionId === person.sessionId)!.reasons).toContain('pinned');

    ctx.fleet.writeTask({ id: 'lane', state: 'done', sessionId: lane.sessionId });
    await until('its chain ran to the exit', () => Boolean(ctx.fleet.readTask('lane').exitedAt));
    await ctx.sunset.reconcile();
    expect(ctx.fleet.pinsText()).toBe(JSON.stringify([person.id, 'deadbeef'], null, 2));
    expect(ctx.fleet.isAlive(person)).toBe(true);
  });

  it("a pin sunset is taking back is not read as a person's by a sweep that reads between the two writes", async () => {
    const lane = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'lane', state: 'done', sessionId: lane.sessionId });
    const cfg = testConfig(ctx.fleet, { windows: { expireIdle: 48 * H } });
    ctx.fleet.setPins([lane.id]);
    writeMade(cfg.stateDir, [lane.id]);
    // the sweep reads its sources as it starts; the take-back's two writes (the file, then sunset's list) land
    // before it reads on: it must see either the pin and the list holding it, or neither
    const sweep = gatherFleet(cfg);
    ctx.fleet.setPins([]);
    writeMade(cfg.stateDir, []);
    const v = (await sweep).sessions.find((s) => s.sessionId === lane.sessionId)!;
    expect(v.evidence.pinned).toBe(false);
    expect(v.reasons).not.toContain('pinned');
  });

  it('a pins file that does not parse is left exactly as it is, and protects every background session', async () => {
    const lane = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
    ctx.fleet.setPinsRaw('[ "torn');
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    await ctx.sunset.reconcile();
    expect(ctx.fleet.pinsText()).toBe('[ "torn');
    expect(ctx.sunset.events.some((e) => e.event === 'pins:failed')).toBe(true);
  });
});
