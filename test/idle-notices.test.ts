// Events instead of polls (issue 12 item 5): a chain job deferred while its session is busy asks the session to
// say when it next goes idle or exits (notify_when_idle over its messaging socket), and is judged again then —
// not at the next recheck, which these tests set to a minute so that only a notice can move the chain in time.
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { judge } from '../src/doctrine/judge.js';

const H = 3_600_000;
const ctx = useFleet();
const task = (id: string) => ctx.fleet.readTask(id);
const until = untilWithin(20_000);
const SLOW_RECHECK = { windows: { recheck: 60_000 } };

describe('idle notices', () => {
  it('a busy session is asked to say when it is idle; its notice wakes the deferred ask at once, and the chain runs to the end', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setStatus(a, 'busy');
    ctx.fleet.writeTask({ id: 'n1', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, SLOW_RECHECK));
    await until(
      'the ask deferred and an idle notice requested',
      () => ctx.sunset!.events.some((e) => e.event === 'ask:deferred') && ctx.fleet.idleRequests(a).length > 0,
    );
    const [req] = ctx.fleet.idleRequests(a);
    expect(req).toMatchObject({ accepted: true, from: expect.stringMatching(/^uds:.*\/sunset-\d+-[0-9a-f]{8}\.sock$/) });
    expect(ctx.fleet.idleNotices(a)).toEqual([]); // busy: nothing said yet
    expect(task('n1').exitAskedAt).toBeUndefined();
    ctx.fleet.setStatus(a, 'idle');
    await until('asked, requested and exited well inside the recheck', () => Boolean(task('n1').exitedAt));
    expect(ctx.fleet.idleNotices(a)).toMatchObject([{ state: 'idle', msgId: req!.msgId }]);
    expect(ctx.sunset.events.find((e) => e.event === 'idle:notice')).toMatchObject({
      sessionId: a.sessionId,
      state: 'idle',
      woke: [expect.stringMatching(/^ask\//)],
    });
    expect(ctx.fleet.messages(a)).toHaveLength(1); // still one message
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
    // the reply socket goes with sunset
    const socks = dirname(req!.from!.slice(4));
    await ctx.sunset.close();
    ctx.sunset = null;
    expect(readdirSync(socks).filter((n) => n.startsWith('sunset-'))).toEqual([]);
  });

  it('a busy session that leaves on its own says "exited": its chain ends at once with exitedAt, nothing asked', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setStatus(a, 'busy');
    ctx.fleet.writeTask({ id: 'n2', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, SLOW_RECHECK));
    await until('an idle notice requested', () => ctx.fleet.idleRequests(a).length > 0);
    await ctx.fleet.stop(a); // a person stops it
    await until('exitedAt latched', () => Boolean(task('n2').exitedAt));
    expect(ctx.fleet.idleNotices(a)).toMatchObject([{ state: 'exited' }]);
    expect(task('n2').exitAskedAt).toBeUndefined();
    expect(ctx.fleet.messages(a)).toEqual([]);
    expect(ctx.sunset.exitCalls).toEqual([]);
  });

  it('a busy session that offers no notices: its session file saying idle wakes the deferred ask at once; its file going ends a chain', async () => {
    ctx.fleet.withoutIdleNotices();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.withoutIdleNotices(false);
    for (const [id, s] of [
      ['f1', a],
      ['f2', b],
    ] as const) {
      ctx.fleet.setStatus(s, 'busy');
      ctx.fleet.writeTask({ id, state: 'done', sessionId: s.sessionId });
    }
    // no recheck and no reconcile pass in the test's time: only the session files' events can move these chains
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { recheck: 60_000, reconcileEvery: H } }));
    await until('both asks deferred', () =>
      ['f1', 'f2'].every((id) => ctx.sunset!.events.some((e) => e.event === 'ask:deferred' && e.taskId === id)),
    );
    expect(ctx.fleet.idleRequests(a)).toEqual([]); // no notices offered: none asked for
    ctx.fleet.setStatus(a, 'idle'); // its sessions/<pid>.json says so, as Claude Code rewrites it
    await until('f1 asked, requested and exited well inside the recheck', () => Boolean(task('f1').exitedAt));
    expect(ctx.sunset.events.find((e) => e.event === 'idle:file-moved' && e.sessionId === a.sessionId)).toMatchObject({
      state: 'idle',
      woke: [expect.stringMatching(/^ask\//)],
    });
    expect(ctx.fleet.messages(a)).toHaveLength(1);
    // b, still busy, is stopped by a person: its file goes, and its chain ends at once, nothing asked
    expect(task('f2').exitAskedAt).toBeUndefined();
    await ctx.fleet.stop(b);
    await until('f2 exitedAt latched', () => Boolean(task('f2').exitedAt));
    expect(ctx.sunset.events.find((e) => e.event === 'idle:file-moved' && e.sessionId === b.sessionId)).toMatchObject({ state: 'exited' });
    expect(task('f2').exitAskedAt).toBeUndefined();
    expect(ctx.fleet.messages(b)).toEqual([]);
  });

  it('one request per session however many jobs wait on it; none for a protection a turn does not end, none when turned off, none in a dry run', async () => {
    const busy = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setStatus(busy, 'busy');
    const att = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const client = await ctx.fleet.attach(att);
    for (const [id, s] of [
      ['b', busy],
      ['t', att],
    ] as const)
      ctx.fleet.writeTask({ id, state: 'done', sessionId: s.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { recheck: 100 } }));
    await until('both deferred a few times', () =>
      ['b', 't'].every((id) => ctx.sunset!.events.filter((e) => e.event === 'ask:deferred' && e.taskId === id).length >= 4),
    );
    expect(ctx.fleet.idleRequests(busy)).toHaveLength(1); // the pending request serves every later deferral
    expect(ctx.fleet.idleRequests(att)).toEqual([]); // attached: a turn's end would change nothing
    await client.close();
    await ctx.sunset.close();
    ctx.sunset = null;

    for (const o of [{ fleet: { idleNotices: false } }, { dryRun: true }]) {
      const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
      ctx.fleet.setStatus(b, 'busy');
      const id = `off-${Object.keys(o)[0]}`;
      ctx.fleet.writeTask({ id, state: 'done', sessionId: b.sessionId });
      const { dryRun, ...over } = o as { dryRun?: boolean; fleet?: object };
      const cfg = testConfig(ctx.fleet, { ...over, windows: { recheck: 100 } });
      ctx.sunset = await startTestSunset(cfg, { dryRun: Boolean(dryRun) });
      await until(
        `${id}: deferred a few times`,
        () => ctx.sunset!.events.filter((e) => e.event === 'ask:deferred' && e.taskId === id).length >= 3,
      );
      expect(ctx.fleet.idleRequests(b)).toEqual([]);
      await ctx.sunset.close();
      ctx.sunset = null;
    }
  });

  it('a session protected only by a recent transcript is looked at again when it has been quiet for the silence window, not at the next recheck', () => {
    const now = 1_000_000;
    const view = { verdict: 'protected', reasons: ['transcript-recent'], evidence: { silenceMs: 4_000 } } as any;
    const base = { act: 'ask' as const, view, rosterOk: true, now, recheck: 300_000 };
    expect(judge({ ...base, silence: 10_000 })).toMatchObject({ kind: 'defer', at: now + 6_000 });
    expect(
      judge({ ...base, silence: 10_000, graceEnd: now + 9_000, view: { ...view, reasons: ['grace-pending', 'transcript-recent'] } }),
    ).toMatchObject({ at: now + 9_000 });
    expect(judge({ ...base, silence: 10_000, view: { ...view, reasons: ['transcript-recent', 'status-busy'] } })).toMatchObject({
      at: now + 300_000,
    });
    expect(judge(base)).toMatchObject({ at: now + 300_000 }); // no silence given: the recheck
  });
});
