// expire: the backstop for sessions no task reaches (ADR-0010 decision 3), on a real test fleet and
// the shared Redis, windows in milliseconds. Untasked sessions idle past expireIdle leave by their own
// exit path; everything else — attached, busy, waiting, tasked (awaiting-human included), recently
// active, unknown — is spared.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Attachment } from '../sim/fleet/fleet.js';
import { runCli } from './support/cli.js';
import { startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { until, useFleet } from './support/use-fleet.js';
import { runExpireScan } from '../src/pipeline/expire.js';
import { Alarms } from '../src/store/alarms.js';
import { EXPIRE_SCHEDULER_ID } from '../queues/expire-scan.js';

const H = 3_600_000;

describe('expire on a test fleet', () => {
  const clients: Attachment[] = [];
  const stops: Array<() => void> = [];
  const ctx = useFleet({
    after: async () => {
      for (const stop of stops.splice(0)) stop();
      for (const c of clients.splice(0)) await c.close();
    },
  });

  it('exits untasked sessions idle past the window by their own exit path; spares every other kind', async () => {
    const idleBg = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const idleIt = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    const attached = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    clients.push(await ctx.fleet.attach(attached));
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    const waiting = await ctx.fleet.spawnBackground({ mode: 'waiting', transcriptAgeMs: H });
    const awaiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: awaiting.sessionId });
    const active = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 'work', state: 'active', sessionId: active.sessionId });
    // recently active: the roster says idle, but its transcript keeps being written (every 200 ms, < expireIdle)
    const recent = await ctx.fleet.spawnBackground();
    const writing = setInterval(() => ctx.fleet.ageTranscript(recent, 0), 200);
    stops.push(() => clearInterval(writing));
    const inbox = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.addInboxMessage(inbox);
    const noTranscript = await ctx.fleet.spawnBackground({ noTranscript: true });
    const record = ctx.fleet.addRecord();

    // expireIdle is small, yet far above the 200 ms between the recent session's writes: a sweep measures
    // silence against the time it ENDS (src/fleet.ts), so on a loaded box a slow roster call inflates it
    // (by at most probeTimeout, 5 s here)
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { expireIdle: 10_000, expireEvery: 300 } }));
    const names = new Map(
      Object.entries({ idleBg, idleIt, attached, busy, waiting, awaiting, active, recent, inbox, noTranscript }).map(([k, a]) => [
        a.kind === 'interactive' ? a.sessionId : a.id,
        k,
      ]),
    );
    await until('both idle untasked sessions left', () => ctx.fleet.ended(idleBg).length > 0 && ctx.fleet.ended(idleIt).length > 0);
    expect(ctx.fleet.ended(idleBg)).toMatchObject([{ how: 'stop' }]); // claude stop: a background session
    expect(ctx.fleet.ended(idleIt)).toMatchObject([{ how: 'exit-typed' }]); // /exit typed into its pane
    expect(ctx.fleet.ended(idleBg)[0].transcriptBytesAfter).toBeGreaterThan(ctx.fleet.ended(idleBg)[0].transcriptBytesBefore); // flushed
    expect(ctx.sunset.exitCalls.map((id) => names.get(id)).sort()).toEqual(['idleBg', 'idleIt']);

    // what a scan now says of the rest (a dry run: it enqueues nothing)
    const scan = await runExpireScan(ctx.sunset.deps, { dryRun: true });
    expect(scan.ok).toBe(true);
    const by = (id: string) => scan.lines.find((l) => l.id === id);
    expect(by(attached.id)).toMatchObject({ action: 'spared', reasons: ['client-attached'] });
    expect(by(busy.id)).toMatchObject({ action: 'spared', reasons: expect.arrayContaining(['status-busy', 'idle-short']) });
    expect(by(waiting.id)).toMatchObject({ action: 'spared', reasons: ['status-waiting'] });
    expect(by(recent.id)).toMatchObject({ action: 'spared', reasons: ['idle-short'] });
    expect(by(inbox.id)).toMatchObject({ action: 'spared', reasons: ['inbox-pending'] });
    expect(by(noTranscript.id)).toMatchObject({ action: 'spared', reasons: ['transcript-unknown'] }); // D5
    for (const tasked of [awaiting, active]) expect(by(tasked.id)).toBeUndefined(); // tasked: not expire's to judge (D4)
    expect(by(record.id)).toBeUndefined(); // D9
    for (const a of [idleBg, idleIt]) expect(by(a.id)).toBeUndefined(); // gone

    const spared = [attached, busy, waiting, awaiting, active, recent, inbox, noTranscript];
    for (const a of spared) expect(ctx.fleet.isAlive(a), a.id).toBe(true);
    expect(spared.flatMap((a) => ctx.fleet.requests(a))).toEqual([]);
    expect(ctx.sunset.exitCalls.map((id) => names.get(id)).sort()).toEqual(['idleBg', 'idleIt']);
  });

  it('a session that will not leave: at most maxExitRequests requests, each after the last one finished, then one alarm', async () => {
    const stubborn = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    const windows = { expireIdle: 500, expireEvery: 200, retryWait: 250, exitConfirm: 4000 };
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows }));
    const alarms = () => new Alarms(ctx.sunset!.config).list();
    await until('gave up', () => alarms().length > 0, 90_000);
    await runExpireScan(ctx.sunset.deps); // a further scan changes nothing
    const reqs = ctx.fleet.requests(stubborn);
    expect(reqs.map((r) => r.how)).toEqual(['stop', 'stop', 'stop']);
    // never while the previous request is still confirming: exitConfirm + retryWait between calls
    for (let i = 1; i < reqs.length; i++)
      expect(Date.parse(reqs[i].at) - Date.parse(reqs[i - 1].at)).toBeGreaterThanOrEqual(windows.exitConfirm + windows.retryWait - 100);
    expect(alarms()).toHaveLength(1);
    expect(alarms()[0]).toMatchObject({ kind: 'session-will-not-exit', taskId: null, sessionId: stubborn.sessionId, id: stubborn.id });
    expect(ctx.sunset.exitCalls).toEqual([stubborn.id, stubborn.id, stubborn.id]);
    expect(ctx.fleet.isAlive(stubborn)).toBe(true); // nothing stronger: a person decides now
    const scan = await runExpireScan(ctx.sunset.deps, { dryRun: true });
    expect(scan.lines.find((l) => l.id === stubborn.id)).toMatchObject({ action: 'spared', reasons: ['gave-up'] });
  });

  it('the expire scan is one job scheduler per host: a second process and a restart add nothing', async () => {
    const cfg = testConfig(ctx.fleet, { windows: { expireEvery: 60_000 } });
    ctx.sunset = await startTestSunset(cfg);
    const second = await startTestSunset(cfg);
    const q = ctx.sunset.deps.producers.expire.queue;
    try {
      await until('the first scan ran (its first run fires at once)', async () => (await q.getJobCounts('completed')).completed >= 1);
      await second.close();
      await (await startTestSunset(cfg)).close(); // a restart
      const schedulers = await q.getJobSchedulers();
      expect(schedulers.map((x) => [x.key, x.every])).toEqual([[EXPIRE_SCHEDULER_ID, 60_000]]);
      expect(q.name).toBe(`expire-scan@${cfg.host}`); // per host: another host's scheduler is its own
    } finally {
      await second.close();
    }
  });
});

describe('sunset expire (the CLI)', () => {
  const ctx = useFleet();
  const expire = (args: string[], host: string) =>
    runCli(['expire', '--config', ctx.fleet.writeConfig({ host, windows: { expireIdle: '30m' } }), ...args]);

  it('prints one line per session it would exit (or did enqueue); the spared only with --verbose', async () => {
    const host = uniqueHost();
    const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const young = await ctx.fleet.spawnBackground({ transcriptAgeMs: 60_000 });
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.addRecord();

    const dry = await expire(['--dry-run'], host);
    expect(dry.code).toBe(0);
    expect(dry.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^would-enqueue\\s+${idle.id}\\s+silent 1h\\S*\\s+request 1/3$`)),
    ]);

    const verbose = await expire(['--dry-run', '--verbose'], host);
    expect(verbose.stdout).toMatch(new RegExp(`^spared\\s+${young.id}\\s+silent 1m\\S*\\s+\\(idle-short\\)$`, 'm'));
    expect(verbose.stdout).toMatch(new RegExp(`^spared\\s+${busy.id}\\s.*\\(status-busy`, 'm'));
    expect(existsSync(join(ctx.fleet.stateDir, 'expire'))).toBe(false); // a dry run latches nothing

    const real = await expire([], host);
    expect(real.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^enqueued\\s+${idle.id}\\s+silent 1h\\S*\\s+request 1/3$`)),
    ]);
    expect(readdirSync(join(ctx.fleet.stateDir, 'expire')).filter((n) => !n.startsWith('.'))).toHaveLength(1);
    // no `sunset up` runs here: the request waits in the queue; a second scan does not request again
    const again = await expire([], host);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout.trim()).toBe('nothing to expire: 3 untasked sessions looked at (--verbose: each, and why it waits or is spared)');
    expect((await expire(['--verbose'], host)).stdout).toMatch(new RegExp(`^waiting\\s+${idle.id}\\b`, 'm'));
    for (const a of [idle, young, busy]) expect(ctx.fleet.isAlive(a)).toBe(true);
    expect(ctx.fleet.requests()).toEqual([]);
  });

  it('a failed roster: nothing expires, exit 1', async () => {
    await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setRosterFault('fail');
    const r = await expire([], uniqueHost());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/roster failed, nothing expires/);
    expect(r.stdout).toBe('');
  });
});
