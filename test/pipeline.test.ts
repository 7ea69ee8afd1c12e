// The exit pipeline end to end on a real Redis, real processes, a private tmux server, windows in ms.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { Alarms } from '../src/store/alarms.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { startSunset } from '../src/pipeline/up.js';
import { silentLogger } from '../src/log.js';
import { dryRunAuditFile, readAudit, readAuditFrom } from '../src/store/audit.js';

const H = 3_600_000;
const ctx = useFleet();
const task = (id: string) => ctx.fleet.readTask(id);
const until = untilWithin(20_000);

describe('the exit pipeline', () => {
  it('a task turning terminal: released, asked once, requested, exited by its own path; other fields survive', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({
      id: 'job-1',
      state: 'active',
      sessionId: a.sessionId,
      title: 'keep me',
      big: 12345678901234567890n.toString(),
      nested: { x: [1, 2] },
    });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    // the Driver finishes the task: rewrites the file by rename, as tools do
    ctx.fleet.writeTask({ ...task('job-1'), id: 'job-1', state: 'done', closedBy: 'driver' });
    await until('exitedAt latched', () => Boolean(task('job-1').exitedAt));
    const t = task('job-1');
    expect(t).toMatchObject({ state: 'done', title: 'keep me', closedBy: 'driver', nested: { x: [1, 2] }, exitRequests: 1 });
    for (const k of ['releasedAt', 'exitAskedAt', 'exitRequestedAt', 'exitedAt']) expect(Date.parse(t[k])).toBeGreaterThan(0);
    expect(Date.parse(t.exitAskedAt)).toBeGreaterThanOrEqual(Date.parse(t.releasedAt) + 150); // grace
    expect(Date.parse(t.exitRequestedAt)).toBeGreaterThanOrEqual(Date.parse(t.exitAskedAt) + 250); // askWait
    // the one message went over the session's messaging socket (askVia auto): its model was sent the text, once
    expect(ctx.fleet.messages(a).map((m) => m.text)).toEqual([expect.stringMatching(/^sunset: your task job-1 is done\. Please wrap up/)]);
    expect(existsSync(join(ctx.fleet.inboxDir, a.sessionId))).toBe(false);
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
    expect(ctx.sunset.exitCalls).toEqual([a.id]);
    const audit = () => readFileSync(join(ctx.sunset!.config.stateDir, 'audit.jsonl'), 'utf8');
    await until('the exit audited', () => audit().includes('"exit:exited"')); // written just after the latch
    for (const e of ['"task:released"', '"exit:asked"', '"exit:requested"', '"exit:calling"', '"exit:exited"'])
      expect(audit()).toContain(e);
  });

  it('awaiting-human and active lanes are never touched, however idle (D4)', async () => {
    const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: waiting.sessionId });
    const active = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 'busy-lane', state: 'active', sessionId: active.sessionId });
    const done = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'fin', state: 'done', sessionId: done.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    await until('the finished one exited', () => Boolean(task('fin').exitedAt));
    await ctx.sunset.reconcile();
    expect(task('lane')).toEqual({ id: 'lane', state: 'awaiting-human', sessionId: waiting.sessionId });
    expect(task('busy-lane')).toEqual({ id: 'busy-lane', state: 'active', sessionId: active.sessionId });
    expect(ctx.fleet.isAlive(waiting) && ctx.fleet.isAlive(active)).toBe(true);
    expect([...ctx.fleet.requests(waiting), ...ctx.fleet.requests(active)]).toEqual([]);
    expect(existsSync(join(ctx.fleet.inboxDir, waiting.sessionId))).toBe(false);
  });

  it('busy, attached and inbox-pending sessions are exited only after the evidence clears', async () => {
    const busy = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.setStatus(busy, 'busy');
    const att = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const client = await ctx.fleet.attach(att);
    const inbox = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const msg = ctx.fleet.addInboxMessage(inbox);
    for (const [id, a] of [
      ['b', busy],
      ['a', att],
      ['i', inbox],
    ] as const)
      ctx.fleet.writeTask({ id, state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    await until(
      'all three released and re-checked a few times',
      () => ['b', 'a', 'i'].every((id) => task(id).releasedAt) && ctx.sunset!.events.filter((e) => e.event === 'ask:deferred').length >= 6,
    );
    expect(['b', 'a', 'i'].map((id) => task(id).exitAskedAt)).toEqual([undefined, undefined, undefined]);
    ctx.fleet.setStatus(busy, 'idle');
    await client.close();
    (await import('node:fs')).rmSync(msg);
    await until('all three exited', () => ['b', 'a', 'i'].every((id) => task(id).exitedAt));
    for (const a of [busy, att, inbox]) expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
  });

  it('a stubborn session: one ask, exactly 3 requests, one alarm, still alive', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'stub', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { exitConfirm: 300 } }));
    await until('gave up', () => Boolean(task('stub').exitGaveUpAt), 30_000);
    await ctx.sunset.reconcile(); // a further pass changes nothing
    expect(task('stub')).toMatchObject({ exitRequests: 3 });
    expect(task('stub').exitedAt).toBeUndefined();
    expect(ctx.fleet.requests(a).map((r) => r.how)).toEqual(['stop', 'stop', 'stop']);
    expect(ctx.sunset.exitCalls).toEqual([a.id, a.id, a.id]);
    const alarms = new Alarms(ctx.sunset.config).list();
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({ kind: 'session-will-not-exit', taskId: 'stub', sessionId: a.sessionId });
    expect(ctx.fleet.isAlive(a)).toBe(true);
  });

  it('next.at in the verdict is when the step really fires (±1 s): request 1 after the ask, request 2 after exit 1 finished', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'timed', state: 'done', sessionId: a.sessionId });
    const cfg = testConfig(ctx.fleet, { windows: { askWait: 2500, retryWait: 2500, exitConfirm: 600 } });
    ctx.sunset = await startTestSunset(cfg);
    const next = async () => (await gatherFleet(cfg)).sessions.find((s) => s.sessionId === a.sessionId)!.next;
    await until('asked', () => Boolean(task('timed').exitAskedAt));
    // the ask starts a turn (its transcript is written): the verdict reads eligible again once silence passes
    let n1 = await next();
    await until('eligible after the ask', async () => Boolean((n1 = await next())));
    expect(n1).toMatchObject({ step: 'wait', n: 1 });
    await until('request 1', () => task('timed').exitRequests === 1, 10_000);
    expect(Math.abs(Date.parse(task('timed').exitRequestedAt) - Date.parse(n1!.at!))).toBeLessThanOrEqual(1000);
    // exit job 1 runs its exitConfirm, then finishes: from then on next.at is retryWait after that finish
    const finished = () => ctx.sunset!.events.find((e) => e.event === 'exit:still-running' && e.jobId?.endsWith('/1'));
    await until('exit 1 finished', () => Boolean(finished()), 10_000);
    const n2 = await next();
    expect(n2).toMatchObject({ step: 'wait', n: 2 });
    await until('request 2', () => task('timed').exitRequests === 2, 10_000);
    expect(Math.abs(Date.parse(task('timed').exitRequestedAt) - Date.parse(n2!.at!))).toBeLessThanOrEqual(1000);
  });

  it('the ask: over the messaging socket where the session has one, else the inbox file; a refusing socket is tried again, never counted', async () => {
    const withSocket = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.withoutSockets();
    const withoutSocket = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.withoutSockets(false);
    const refusing = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    // its socket file is replaced by a plain file: connect fails (ECONNREFUSED / ENOTSOCK)
    const sockFile = join(ctx.fleet.root, 'socks', `${refusing.pid}.sock`);
    await until('its socket is up', () => existsSync(sockFile));
    (await import('node:fs')).rmSync(sockFile);
    (await import('node:fs')).writeFileSync(sockFile, 'not a socket');
    for (const [id, a] of [
      ['s', withSocket],
      ['n', withoutSocket],
      ['r', refusing],
    ] as const)
      ctx.fleet.writeTask({ id, state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { windows: { askWait: 60_000 } }));
    await until('the two asked', () => Boolean(task('s').exitAskedAt) && Boolean(task('n').exitAskedAt));
    await until('the message read by its session', () => ctx.fleet.messages(withSocket).length > 0); // its reader logs it a moment after the send
    expect(ctx.fleet.messages(withSocket)).toHaveLength(1);
    expect(ctx.fleet.inboxFiles(withoutSocket)).toEqual(['sunset-exit-ask-n.json']);
    await until('the refusal said', () => ctx.sunset!.events.some((e) => e.event === 'ask:not-delivered' && e.taskId === 'r'));
    expect(task('r').exitAskedAt).toBeUndefined(); // never counted as made
    expect(ctx.fleet.inboxFiles(refusing)).toEqual([]); // and not sent another way behind its back
    // said just after the latch the task files show
    const asked = () => ctx.sunset!.events.filter((e) => e.event === 'exit:asked');
    await until('both asks said', () => asked().length >= 2);
    expect(
      asked()
        .map((e) => [e.taskId, e.via])
        .sort(),
    ).toEqual([
      ['n', 'inbox'],
      ['s', 'socket'],
    ]);
  });

  it('an interactive session leaves by /exit typed into its pane; one sent to the background is finished by claude stop', async () => {
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    const j = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H, bgOnExit: true });
    ctx.fleet.writeTask({ id: 'i', state: 'done', sessionId: i.sessionId });
    ctx.fleet.writeTask({ id: 'j', state: 'parked', sessionId: j.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    // (a reconcile pass may latch j's exitedAt in the gap before its successor's row shows; the exit job goes on to stop it)
    await until(
      'both exited, and the one sent to the background stopped',
      () => Boolean(task('i').exitedAt && task('j').exitedAt) && ctx.fleet.ended(j).length >= 2,
    );
    expect(ctx.fleet.ended(i)).toMatchObject([{ how: 'exit-typed' }]);
    expect(
      ctx.fleet
        .ended(j)
        .map((e) => e.how)
        .sort(),
    ).toEqual(['stop', 'to-background']);
    expect(ctx.fleet.currentPid(j)).toBeNull();
  });

  it('every start runs one reconcile pass at once, whatever the schedulers in Redis hold (a restart within reconcileEvery)', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const cfg = testConfig(ctx.fleet, { windows: { reconcileEvery: 60 * 60_000, grace: 60 * 60_000 } });
    // a first run that leaves its schedulers in Redis (as a crash or a systemctl restart does)
    const first = await startSunset(cfg, { roles: ['producers', 'workers'], log: silentLogger });
    await until(
      'its reconcile scheduler is in Redis',
      async () => (await first.deps.producers.reconcile.queue.getJobSchedulers()).length > 0,
      10_000,
    );
    await first.close();
    // the task turns terminal while sunset is down (the watcher would have seen it; nobody is watching)
    ctx.fleet.writeTask({ id: 'while-down', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(cfg); // the host's reconcile scheduler is still in Redis, its next run an hour away
    await until('released at start', () => Boolean(task('while-down').releasedAt), 10_000);
  });

  it('records, gone sessions and invalid task files are never acted on', async () => {
    const rec = ctx.fleet.addRecord();
    ctx.fleet.writeTask({ id: 'r', state: 'done', sessionId: rec.sessionId });
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTaskRaw('bad.json', `{"id":"bad","state":"done","sessionId":"${a.sessionId}","exitRequests":"three"}`);
    const before = readFileSync(join(ctx.fleet.tasksDir, 'bad.json'));
    const ok = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'ok', state: 'done', sessionId: ok.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    await until('ok exited', () => Boolean(task('ok').exitedAt));
    await ctx.sunset.reconcile();
    expect(task('r').exitAskedAt).toBeUndefined();
    expect(readFileSync(join(ctx.fleet.tasksDir, 'bad.json'))).toEqual(before);
    expect(ctx.fleet.isAlive(a)).toBe(true);
    expect(ctx.sunset.exitCalls).toEqual([ok.id]);
  });

  it('a person can exit a protected session only with override; it is audited', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.writeTask({ id: 'p', state: 'active', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    const { requestPersonExit } = await import('../src/pipeline/person-exit.js');
    const refused = await requestPersonExit(ctx.sunset.deps, a.id, { why: 'testing', by: 'tester', override: false });
    expect(refused).toMatchObject({ status: 'refused', overridable: true });
    const ok = await requestPersonExit(ctx.sunset.deps, a.id, { why: 'box is out of memory', by: 'tester', override: true });
    expect(ok.status).toBe('accepted');
    await until('exited', () => !ctx.fleet.isAlive(a));
    const audit = readFileSync(join(ctx.sunset.config.stateDir, 'audit.jsonl'), 'utf8');
    expect(audit).toMatch(/"event":"exit:person-request".*"by":"tester".*"why":"box is out of memory".*"override":true/);
  });

  it('a dry run takes every step on a schedule of its own, writes nothing the real run reads, and leaves nothing behind: the real run after it behaves as if it had never run', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'fresh', state: 'done', sessionId: a.sessionId });
    const released = { id: 'rel', state: 'done', sessionId: b.sessionId, releasedAt: new Date(Date.now() - H).toISOString() };
    ctx.fleet.writeTask(released);
    const cfg = testConfig(ctx.fleet);
    const stateFiles = () =>
      existsSync(cfg.stateDir)
        ? readdirSync(cfg.stateDir)
            .filter((n) => n !== 'dry-run.audit.jsonl')
            .sort()
        : [];
    const before = stateFiles();
    ctx.sunset = await startTestSunset(cfg, { dryRun: true });
    // the whole chain, previewed, for both: release (for the one not yet released), the ask, the request, the exit
    const steps = (t: string) => ctx.sunset!.events.filter((e) => e.taskId === t && /^would-/.test(e.event)).map((e) => e.event);
    await until('both walked to the exit', () => steps('fresh').includes('would-exit') && steps('rel').includes('would-exit'));
    expect(steps('fresh')).toEqual(['would-release', 'would-ask', 'would-request', 'would-exit']);
    expect(steps('rel')).toEqual(['would-ask', 'would-request', 'would-exit']);
    // audited beside the real audit, never in it (the decisions page and /metrics read that one)
    await until(
      'the dry run audited its steps',
      () => (readAuditFrom(dryRunAuditFile(cfg.stateDir))?.entries ?? []).filter((e) => e.taskId === 'fresh').length >= 4,
    );
    expect(
      readAuditFrom(dryRunAuditFile(cfg.stateDir))!
        .entries.filter((e) => e.taskId === 'fresh')
        .map((e) => e.event),
    ).toEqual(['would-release', 'would-ask', 'would-request', 'would-exit']);
    expect(readAudit(cfg.stateDir)).toEqual([]);
    // nothing the real run reads was written: task files, inboxes, sockets, ledger, claims, samples, token
    expect(task('fresh')).toEqual({ id: 'fresh', state: 'done', sessionId: a.sessionId });
    expect(task('rel')).toEqual(released);
    expect(ctx.fleet.inboxFiles(a)).toEqual([]);
    expect(ctx.fleet.messages()).toEqual([]);
    expect(ctx.fleet.isAlive(a) && ctx.fleet.isAlive(b)).toBe(true);
    expect(ctx.sunset.exitCalls).toEqual([]);
    expect(stateFiles()).toEqual(before);
    // its queues carry a host of their own, and go with it
    const dryQueue = ctx.sunset.deps.producers.ask.name;
    expect(dryQueue).toBe(`exit-ask@${cfg.host}.dry-run`);
    await ctx.sunset.close();
    ctx.sunset = null;
    const { Redis } = await import('ioredis');
    const r = new Redis(cfg.redisUrl);
    try {
      expect(await r.keys(`{sunset}:*@${cfg.host}.dry-run:*`)).toEqual([]);
    } finally {
      r.disconnect();
    }
    // the real run started after it: released, asked, requested, exited at once, as if no dry run had been
    ctx.sunset = await startTestSunset(cfg);
    await until('both exited for real', () => Boolean(task('fresh').exitedAt) && Boolean(task('rel').exitedAt));
    expect(ctx.fleet.messages(a)).toHaveLength(1);
  });
});
