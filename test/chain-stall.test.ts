// A chain whose step's job finished without the chain moving on (its worker ended it without a latch) must not
// stall: the step's job goes back to the queue when the chain still needs it, and a judgement never ends a chain
// on a sweep older than the chain's own read of its facts. Real Redis and BullMQ, real processes, the watcher on.
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { exitAskId } from '../queues/exit-ask.js';
import type { FleetSource } from '../src/evidence/fleet-cache.js';
import { CHAIN_KINDS } from '../src/pipeline/chain-kinds/index.js';

const H = 3_600_000;
const ctx = useFleet();
const task = (id: string) => ctx.fleet.readTask(id);
const until = untilWithin(20_000);

describe('a chain after a judgement that ended it without a latch', () => {
  it('a task re-opened before its ask and finished again is asked: the finished ask job goes back to the queue', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'again', state: 'done', sessionId: a.sessionId });
    // reconcile an hour away (one pass at start): only the watcher's schedule can move the chain on in time
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { grace: 3000, reconcileEvery: H } }));
    await until('released', () => Boolean(task('again').releasedAt));
    ctx.fleet.writeTask({ ...task('again'), id: 'again', state: 'active' }); // re-opened within the grace, its latches kept
    const askState = () => ctx.sunset!.deps.producers.ask.queue.getJobState(exitAskId('again'));
    // the ask job ran on the open task: nothing to do, and it finished (kept under its id for an hour)
    await until('its ask job finished on the open task', async () => (await askState()) === 'completed');
    expect(task('again').exitAskedAt).toBeUndefined();
    // finished again (not the very bytes sunset last wrote there: the watcher would take them for its own latch)
    ctx.fleet.writeTask({ ...task('again'), id: 'again', state: 'done', closedBy: 'driver' }); // the chain is at its ask, due now
    await until('asked, then exited', () => Boolean(task('again').exitedAt), 15_000);
    expect(ctx.fleet.messages(a)).toHaveLength(1); // one message, ever
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
  });

  it('an ask handed a sweep that read the task before it turned done does not end the chain on it', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    // a task re-opened after its release (an hour ago: the grace is long over), about to be finished again
    ctx.fleet.writeTask({ id: 'stale', state: 'active', sessionId: a.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { reconcileEvery: H } }));
    const s = ctx.sunset;
    await until('the pass at start done', () => s.events.some((e) => e.event === 'reconcile:done'));
    const before = await s.deps.fleet(0, { tmux: 'if-needed' }); // a real sweep: it reads the task `active`
    expect(before.tasks.find((t) => t.id === 'stale')?.terminal).toBe(false);
    // The run's fleet source shares one sweep among every job judged within a second of its start: a job judged
    // just after the task turned done may be handed one that read it a moment before. On a fast box that is a
    // matter of timing (a sweep here takes over a second); this source makes it certain: the first caller that
    // takes evidence up to a second old after the change is handed that sweep, every other gets the run's own.
    const real = s.deps.fleet;
    let handed = 0;
    s.deps.fleet = Object.assign(
      (maxAge: number, o?: Parameters<FleetSource>[1]) => (maxAge >= 1000 && handed++ === 0 ? Promise.resolve(before) : real(maxAge, o)),
      { onSweep: real.onSweep },
    );
    ctx.fleet.writeTask({ ...task('stale'), id: 'stale', state: 'done' }); // the watcher schedules the ask, due now
    await until('asked, then exited', () => Boolean(task('stale').exitedAt), 15_000);
    expect(handed).toBeGreaterThan(0); // the ask was judged on the earlier sweep first
    expect(s.events.filter((e) => e.event === 'chain:ended' && e.taskId === 'stale')).toEqual([]);
    expect(ctx.fleet.messages(a)).toHaveLength(1);
  });

  it('reconcile judges the chains it read from the folder on a sweep taken after that read', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setStatus(a, 'busy'); // its chain stays at its ask: the ask waits on a busy session
    ctx.fleet.writeTask({ id: 'rec', state: 'active', sessionId: a.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
    // no job chains, no pins: a pass with no open chain before it reads the folder first, and sweeps after
    const cfg = testConfig(ctx.fleet, { windows: { reconcileEvery: H }, fleet: { jobChain: false, pinProtected: false } });
    ctx.sunset = await startTestSunset(cfg);
    const s = ctx.sunset;
    await until('the pass at start done', async () => (await s.deps.producers.reconcile.queue.getCompletedCount()) > 0);
    const before = await s.deps.fleet(0, { roster: 'cli', tmux: 'if-needed' }); // reads the task `active`
    expect(before.tasks.find((t) => t.id === 'rec')?.terminal).toBe(false);
    // as above: the sweep from before the change, to the first pass that takes one up to a second old
    const real = s.deps.fleet;
    let handed = 0;
    s.deps.fleet = Object.assign(
      (maxAge: number, o?: Parameters<FleetSource>[1]) =>
        o?.roster === 'cli' && maxAge >= 1000 && handed++ === 0 ? Promise.resolve(before) : real(maxAge, o),
      { onSweep: real.onSweep },
    );
    ctx.fleet.writeTask({ ...task('rec'), id: 'rec', state: 'done' });
    // the pass reads the task `done`: its chain is judged (the ask waits on a busy session) and its step scheduled,
    // not skipped as protected by an open task
    expect(await s.reconcile()).toMatchObject({ advanced: 1, idle: 0 });
  });
});

describe("a kind's own reconcile pass (ChainKindAdapter.reconcile)", () => {
  it('each pass runs every kind whose pass this config wants, on its sweep, with no line of reconcile naming the kind', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    // the expire kind has no pass of its own: lent one here, as a new kind's file would bring it
    const seen: string[][] = [];
    const lent: NonNullable<(typeof CHAIN_KINDS.expire)['reconcile']> = {
      wanted: (config) => config.fleet.jobChain === false, // this config: yes
      pass: async (_deps, snap) => {
        seen.push(snap.sessions.map((s) => s.sessionId));
        return 1;
      },
    };
    CHAIN_KINDS.expire.reconcile = lent;
    try {
      // no task, no job chains, no pins: only the lent pass makes the pass sweep
      const cfg = testConfig(ctx.fleet, { windows: { reconcileEvery: H }, fleet: { jobChain: false, pinProtected: false } });
      ctx.sunset = await startTestSunset(cfg);
      const s = ctx.sunset;
      await until('the pass at start done', async () => (await s.deps.producers.reconcile.queue.getCompletedCount()) > 0);
      const n = seen.length;
      expect(await s.reconcile()).toMatchObject({ begun: 1 });
      expect(seen.length).toBe(n + 1);
      expect(seen.at(-1)).toContain(a.sessionId);
      lent.wanted = () => false; // not wanted by this config: not run, and the pass sweeps nothing for it
      expect(await s.reconcile()).toMatchObject({ advanced: 0 });
      expect(seen.length).toBe(n + 1);
    } finally {
      delete CHAIN_KINDS.expire.reconcile;
    }
  });
});
