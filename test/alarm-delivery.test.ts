// Alarm delivery on real parts (issue 30, items 1 and 2): a real Redis (the run's own), BullMQ's queue and worker
// as `sunset up` runs them, a local HTTP receiver that answers 500 and then recovers, a real command, a real fleet
// for the digest. Every alarm reaches every channel, and exactly once after deduplication by its idempotency key.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alarmId } from '../src/store/alarms.js';
import { readMarker } from '../src/alarms/outbox.js';
import { probeChannels } from '../src/alarms/channels/index.js';
import { createAlarmDeliveryProcessor } from '../workers/alarm-delivery.js';
import { startTestSunset, testConfig } from './support/sunset.js';
import { runCli } from './support/cli.js';
import { until, useFleet } from './support/use-fleet.js';
import { freePort } from './support/redis.js';
import { Worker, UnrecoverableError } from 'bullmq/dist/cjs/classes/index.js';
import { parseConfig } from '../src/config.js';
import { Producer, PREFIX } from '../queues/common.js';
import { alarmDeliveryQueue, backoffMs, deliveryId } from '../queues/alarm-delivery.js';
import { enqueuePending } from '../src/alarms/enqueue.js';
import { Alarms } from '../src/store/alarms.js';
import { redisOptions } from '../src/redis.js';
import { dropHost, uniqueHost } from './support/sunset.js';
import { tempDir } from './support/temp-dir.js';

interface Got {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver of every channel's requests: it answers 500 (and counts) until it recovers, then 200 (and keeps them). */
async function receiver() {
  const got: Got[] = [];
  const refused: string[] = [];
  let failing = true;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      if (failing || req.url?.includes('/always-down')) {
        refused.push(req.url ?? '');
        res.statusCode = 500;
        return res.end('receiver down');
      }
      got.push({ path: req.url ?? '', headers: req.headers, body });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    got,
    refused,
    recover: () => (failing = false),
    fail: () => (failing = true),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

let rx: Receiver | null = null;
const ctx = useFleet({ first: () => rx?.close() });

/** What each request carries as its dedupe id: the header (every channel), and the JSON field where the body is JSON. */
const keyOf = (g: Got) => String(g.headers['idempotency-key']);
/** A command channel that appends its stdin (one JSON line) to a file. */
const appender = (file: string) => [
  process.execPath,
  '-e',
  `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>require('fs').appendFileSync(${JSON.stringify(file)}, s.trim() + '\\n'))`,
];
const TOKEN = 'tk_test_7eevizlsiwf9yi4uxsrs83r4352o0';

function channelsFor(url: string, out: string, o: { retryDelay: number }) {
  return {
    webhook: `${url}/hook`,
    channels: [
      { type: 'chat', name: 'team-chat', url: `${url}/chat/T000/B000/XXXX` },
      {
        type: 'ntfy',
        url: `${url}/ntfy/sunset-alerts`,
        tokenEnv: 'SUNSET_TEST_NTFY_TOKEN',
        priority: 'urgent',
        tags: ['warning', 'robot'],
      },
      { type: 'command', name: 'log-file', argv: appender(out) },
    ],
    retryDelay: o.retryDelay,
    webUrl: 'https://sunset.example:8443/',
  };
}

describe('alarm delivery', () => {
  it('a receiver that fails then recovers gets every alarm on every channel, exactly once after dedup by the id; a failing channel holds none back', async () => {
    rx = await receiver();
    const out = join(ctx.fleet.root, 'command-out.jsonl');
    process.env.SUNSET_TEST_NTFY_TOKEN = TOKEN;
    try {
      const config = testConfig(ctx.fleet, { alarms: channelsFor(rx.url, out, { retryDelay: 100 }) });
      const s = (ctx.sunset = await startTestSunset(config));
      const a1 = await s.deps.alarms.raise('session-will-not-exit', 'task/t1', {
        taskId: 't1',
        sessionId: 's1',
        message: 'session s1 will not exit',
      });
      const a2 = await s.deps.alarms.raise('cap-reached', 'hour/2026-12-03T17', { message: 'cap reached: 36/35' });
      expect(a1 && a2).toBeTruthy();
      expect(await s.deps.alarms.raise('cap-reached', 'hour/2026-12-03T17', { message: 'again' })).toBeNull();

      // the command channel is not held back by the three HTTP channels failing: both alarms reach it
      await until(
        'the command channel has both alarms',
        () => existsSync(out) && readFileSync(out, 'utf8').trim().split('\n').length === 2,
      );
      // each HTTP channel is tried again (backoff), and still fails
      await until('each HTTP channel tried at least twice', () =>
        ['/hook', '/chat/', '/ntfy/'].every((p) => rx!.refused.filter((u) => u.startsWith(p)).length >= 4),
      );
      expect(rx.got).toEqual([]);
      expect(readMarker(config.stateDir, 'cap-reached', 'hour/2026-12-03T17')?.delivered).toBe(false);

      rx.recover();
      await until('every alarm on every HTTP channel', () => new Set(rx!.got.map(keyOf)).size === 6);
      await until('both markers delivered', () => [a1!, a2!].every((a) => readMarker(config.stateDir, a.kind, a.key)?.delivered === true));

      // after dedup by the idempotency key: each (alarm, channel) once, under the alarm's id and the channel's name
      const expected = [a1!, a2!].flatMap((a) => ['webhook', 'team-chat', 'ntfy-1'].map((c) => `${alarmId(a.kind, a.key)}/${c}`));
      expect([...new Set(rx.got.map(keyOf))].sort()).toEqual(expected.sort());

      // the shapes: the generic webhook's JSON (the alarm's own fields, its id and the key beside them)
      const hook = rx.got.find((g) => g.path === '/hook' && keyOf(g).startsWith(alarmId('session-will-not-exit', 'task/t1')))!;
      expect(hook.headers['content-type']).toBe('application/json');
      expect(JSON.parse(hook.body)).toMatchObject({
        kind: 'session-will-not-exit',
        key: 'task/t1',
        taskId: 't1',
        sessionId: 's1',
        host: config.host,
        message: 'session s1 will not exit',
        alarmId: alarmId('session-will-not-exit', 'task/t1'),
        idempotencyKey: keyOf(hook),
        channel: 'webhook',
        link: 'https://sunset.example:8443/decisions#alarms-card',
      });
      // the chat's: Slack's text and blocks, the key in a field and in the context line
      const chat = JSON.parse(
        rx.got.find((g) => g.path.startsWith('/chat/') && keyOf(g).startsWith(alarmId('cap-reached', 'hour/2026-12-03T17')))!.body,
      );
      expect(chat.text).toBe(`sunset on ${config.host}: cap-reached: cap reached: 36/35`);
      expect(chat.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: `sunset on ${config.host}: cap-reached` } });
      expect(chat.blocks[1]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: 'cap reached: 36/35' } });
      expect(chat.blocks.at(-1).type).toBe('context');
      expect(chat.blocks.at(-1).elements[0].text).toContain(chat.idempotencyKey);
      expect(chat.idempotencyKey).toBe(`${alarmId('cap-reached', 'hour/2026-12-03T17')}/team-chat`);
      // ntfy's: the text as the body, title, priority, tags, a link and the token from the environment
      const ntfy = rx.got.find(
        (g) => g.path === '/ntfy/sunset-alerts' && keyOf(g).startsWith(alarmId('session-will-not-exit', 'task/t1')),
      )!;
      expect(ntfy.body).toBe('session s1 will not exit');
      expect(ntfy.headers).toMatchObject({
        title: `sunset on ${config.host}: session-will-not-exit`,
        priority: 'urgent',
        tags: 'warning,robot',
        click: 'https://sunset.example:8443/decisions#alarms-card',
        authorization: `Bearer ${TOKEN}`,
      });
      // the command's: the webhook's JSON, one line each
      const lines = readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => l.idempotencyKey).sort()).toEqual([a1!, a2!].map((a) => `${alarmId(a.kind, a.key)}/log-file`).sort());

      // the token is never logged, nor kept in stateDir
      expect(JSON.stringify(s.events)).not.toContain(TOKEN);
      expect(s.events.filter((e) => e.event === 'alarm:delivery-failed').length).toBeGreaterThanOrEqual(6);
      expect(s.events.filter((e) => e.event === 'alarm:delivered')).toHaveLength(8);
    } finally {
      delete process.env.SUNSET_TEST_NTFY_TOKEN;
    }
  }, 60_000);

  it('a restart delivers what was pending: the record in stateDir, not the queue, is what is delivered', async () => {
    rx = await receiver();
    const config = testConfig(ctx.fleet, {
      // a retry far away: only the restart can deliver it within the test
      alarms: { webhook: `${rx.url}/hook`, channels: [{ type: 'chat', url: `${rx.url}/chat` }], retryDelay: '1h' },
    });
    let s = (ctx.sunset = await startTestSunset(config));
    const a = (await s.deps.alarms.raise('session-will-not-exit', 'task/t9', { taskId: 't9', message: 'will not exit' }))!;
    await until('both channels tried once', () => rx!.refused.length >= 2);
    // closed: the test's host keys go with it (its queue, its delayed retry): only stateDir remembers the alarm
    await s.close();
    ctx.sunset = null;
    expect(readMarker(config.stateDir, a.kind, a.key)?.delivered).toBe(false);

    rx.recover();
    s = ctx.sunset = await startTestSunset(config);
    await until('delivered after the restart', () => new Set(rx!.got.map(keyOf)).size === 2);
    expect(rx.got.map(keyOf).sort()).toEqual([`${alarmId(a.kind, a.key)}/chat-1`, `${alarmId(a.kind, a.key)}/webhook`]);
    await until('marker delivered', () => readMarker(config.stateDir, a.kind, a.key)?.delivered === true);

    // and once delivered, a further restart sends nothing again
    await s.close();
    s = ctx.sunset = await startTestSunset(config);
    const processor = createAlarmDeliveryProcessor(s.deps);
    expect(await processor({ id: 'tick-now', data: { op: 'tick' } } as never)).toMatchObject({ queued: 0 });
    expect(rx.got).toHaveLength(2);
  }, 60_000);

  it('the digest of lanes awaiting a person: sent once, not again while the list is unchanged, again when it changes', async () => {
    rx = await receiver();
    rx.recover();
    const config = testConfig(ctx.fleet, {
      alarms: {
        channels: [
          { type: 'webhook', name: 'digests', url: `${rx.url}/digest`, kinds: ['digest'] },
          { type: 'webhook', name: 'alarms-only', url: `${rx.url}/alarms` },
          { type: 'ntfy', name: 'phone', url: `${rx.url}/ntfy/lanes`, kinds: ['digest', 'session-will-not-exit'] },
        ],
        digestEvery: 1, // ms: the test asks for every change
        webUrl: 'https://sunset.example',
      },
    });
    // the workers alone: no scheduler or start tick of its own, the test runs each tick
    const s = (ctx.sunset = await startTestSunset(config, { roles: ['workers'] }));
    const tick = () => createAlarmDeliveryProcessor(s.deps)({ id: 'tick', data: { op: 'tick' } } as never) as Promise<{ digest: string }>;

    expect((await tick()).digest).toBe('empty');
    const lane = await ctx.fleet.spawnBackground();
    ctx.fleet.setJob(lane, { state: 'blocked', tempo: 'blocked', needs: 'Which database should the migration use?' });
    ctx.fleet.writeTask({
      id: 'lane-1',
      state: 'awaiting-human',
      sessionId: lane.sessionId,
      stateChangedAt: new Date(Date.now() - 5 * 3_600_000).toISOString(),
    });

    expect((await tick()).digest).toBe('queued');
    await until('the digest arrives on both channels that want it', () => rx!.got.length === 2);
    expect((await tick()).digest).toBe('unchanged');
    expect((await tick()).digest).toBe('unchanged');

    const digest = rx.got.find((g) => g.path === '/digest')!;
    const body = JSON.parse(digest.body);
    expect(body).toMatchObject({ kind: 'digest', host: config.host, channel: 'digests', idempotencyKey: keyOf(digest) });
    expect(body.message).toMatch(/^1 lane awaiting a person, holding \d+ (KB|MB); the oldest, lane-1, has waited 5 h\.$/);
    expect(body.lanes).toEqual([
      expect.objectContaining({
        taskId: 'lane-1',
        sessionId: lane.sessionId,
        live: true,
        asks: 'Which database should the migration use?',
        rssBytes: expect.any(Number),
        link: 'https://sunset.example/decisions#lane-lane-1',
      }),
    ]);
    expect(body.lanes[0].waitedMs).toBeGreaterThanOrEqual(5 * 3_600_000);
    const phone = rx.got.find((g) => g.path === '/ntfy/lanes')!;
    expect(phone.headers).toMatchObject({
      title: `sunset on ${config.host}: 1 lane awaiting a person`,
      priority: 'default',
      click: 'https://sunset.example/decisions',
    });
    expect(phone.body).toContain('lane-1: waiting 5 h');
    expect(phone.body).toContain('asks: Which database should the migration use?');

    // the list changes: a second lane (no session running) — a new digest, under a new id
    ctx.fleet.writeTask({ id: 'lane-2', state: 'awaiting-human', sessionId: 'no-such-session' });
    expect((await tick()).digest).toBe('queued');
    await until('the second digest arrives', () => rx!.got.length === 4);
    const second = JSON.parse(rx.got.filter((g) => g.path === '/digest')[1].body);
    expect(second.lanes.map((l: { taskId: string }) => l.taskId).sort()).toEqual(['lane-1', 'lane-2']);
    expect(second.lanes.find((l: { taskId: string }) => l.taskId === 'lane-2')).toMatchObject({ live: false, rssBytes: null, asks: null });
    expect(second.idempotencyKey).not.toBe(body.idempotencyKey);
    expect((await tick()).digest).toBe('unchanged');
    // a channel that did not name `digest` got none
    expect(rx.got.filter((g) => g.path === '/alarms')).toEqual([]);
  }, 60_000);

  it('the digest waits out digestEvery: a changed list is not sent before it is due', async () => {
    rx = await receiver();
    rx.recover();
    const config = testConfig(ctx.fleet, {
      alarms: { channels: [{ type: 'webhook', url: `${rx.url}/digest`, kinds: ['digest'] }], digestEvery: '24h' },
    });
    const s = (ctx.sunset = await startTestSunset(config, { roles: ['workers'] }));
    const tick = () => createAlarmDeliveryProcessor(s.deps)({ id: 'tick', data: { op: 'tick' } } as never) as Promise<{ digest: string }>;
    ctx.fleet.writeTask({ id: 'a', state: 'awaiting-human', sessionId: 'sa' });
    expect((await tick()).digest).toBe('queued');
    ctx.fleet.writeTask({ id: 'b', state: 'awaiting-human', sessionId: 'sb' });
    expect((await tick()).digest).toBe('not-due');
    await until('the first digest arrives', () => rx!.got.length === 1);
  }, 60_000);
});

describe('sunset alarms test, probeChannels', () => {
  it('sends a test message to each channel and says what each answered; exit 1 when any failed', async () => {
    rx = await receiver();
    rx.recover();
    const deadPort = await freePort();
    const file = ctx.fleet.writeConfig({
      alarms: {
        webhook: `${rx.url}/hook`,
        channels: [
          { type: 'chat', url: `${rx.url}/chat` },
          { type: 'ntfy', name: 'phone', url: `${rx.url}/always-down/topic` },
          { type: 'webhook', name: 'nobody', url: `http://127.0.0.1:${deadPort}/x` },
        ],
      },
    });
    const r = await runCli(['alarms', 'test', '--config', file], { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ok\s+webhook\s+webhook\s+HTTP 200: ok$/m);
    expect(r.stdout).toMatch(/^ok\s+chat-1\s+chat\s+HTTP 200: ok$/m);
    expect(r.stdout).toMatch(/^FAILED\s+phone\s+ntfy\s+HTTP 500: receiver down$/m);
    expect(r.stdout).toMatch(/^FAILED\s+nobody\s+webhook\s+http:\/\/127\.0\.0\.1:\d+\/x: .*ECONNREFUSED/m);
    expect(r.stdout).toContain('2 of 4 channels failed');
    const test = JSON.parse(rx.got.find((g) => g.path === '/hook')!.body);
    expect(test).toMatchObject({ kind: 'test', channel: 'webhook', message: expect.stringContaining('test message') });

    const json = await runCli(['alarms', 'test', '--json', '--config', file], { timeoutMs: 60_000 });
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.ok).toBe(false);
    expect(parsed.channels.map((c: { name: string; ok: boolean; status: number | null }) => [c.name, c.ok, c.status])).toEqual([
      ['webhook', true, 200],
      ['chat-1', true, 200],
      ['phone', false, 500],
      ['nobody', false, null],
    ]);

    const good = ctx.fleet.writeConfig({ alarms: { channels: [{ type: 'chat', url: `${rx.url}/chat` }] } });
    expect((await runCli(['alarms', 'test', '--config', good], { timeoutMs: 60_000 })).code).toBe(0);
    const none = await runCli(['alarms', 'test', '--config', ctx.fleet.writeConfig({})], { timeoutMs: 60_000 });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no alarm channel is configured');
    const bad = await runCli(['alarms', 'test', 'extra', '--config', good], { timeoutMs: 60_000 });
    expect(bad.code).toBe(2);
  }, 60_000);

  it('probeChannels: reachable or not, without sending anything a person reads', async () => {
    rx = await receiver();
    rx.recover();
    const deadPort = await freePort();
    const config = testConfig(ctx.fleet, {
      alarms: {
        webhook: `${rx.url}/hook`,
        command: ['/no/such/program'],
        channels: [
          { type: 'ntfy', url: `${rx.url}/ntfy/t`, tokenEnv: 'SUNSET_TEST_UNSET_TOKEN' },
          { type: 'chat', url: `http://127.0.0.1:${deadPort}/x` },
          { type: 'command', argv: [process.execPath, '-e', '0'] },
        ],
      },
    });
    const answers = await probeChannels(config, { PATH: process.env.PATH });
    expect(answers.map((a) => [a.name, a.ok])).toEqual([
      ['webhook', true],
      ['command', false],
      ['ntfy-1', false],
      ['chat-1', false],
      ['command-1', true],
    ]);
    expect(answers[2].detail).toContain('SUNSET_TEST_UNSET_TOKEN');
    expect(rx.got.every((g) => g.body === '')).toBe(true); // HEADs only
    // the HEAD goes to the full URL, path included; only the origin is said, ok or not
    expect(rx.got.map((g) => g.path)).toContain('/hook');
    expect(answers[0].detail).toBe(`${rx.url} answers (HTTP 200 to HEAD; nothing sent)`);
    expect(answers[3].detail).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${deadPort}: .*ECONNREFUSED`));
    expect(answers.map((a) => a.detail).join(' ')).not.toMatch(/\/hook|\/x\b/);
  });
});

describe('alarm delivery: the parts', () => {
  it('a job that used up its attempts is brought back by the next tick: delivery keeps trying while sunset runs', async () => {
    const host = uniqueHost();
    const url = process.env.REDIS_URL!;
    const stateDir = tempDir('sunset-alarm-retry-');
    const config = parseConfig({ host, stateDir, alarms: { channels: [{ type: 'webhook', url: 'http://127.0.0.1:9/x' }] } }, { env: {} });
    const producer = new Producer(alarmDeliveryQueue, host, redisOptions(url));
    // raised by a process with no queue: its one attempt fails (nothing listens on port 9), the marker stays undelivered
    const alarm = (await new Alarms(config).raise('cap-reached', 'hour/x', { message: 'cap reached' }))!;
    const id = deliveryId(alarmId(alarm.kind, alarm.key), 'webhook-1');
    const worker = new Worker(
      producer.name,
      async () => {
        throw new UnrecoverableError('failed for good (as after its last attempt)');
      },
      { connection: redisOptions(url), prefix: PREFIX },
    );
    try {
      expect(await enqueuePending(producer, config)).toBe(1);
      await until(
        'the job failed for good',
        async () => (await producer.queue.getJob(id))?.failedReason !== undefined && (await producer.queue.getJobState(id)) === 'failed',
      );
      await worker.close();
      expect(await enqueuePending(producer, config)).toBe(1);
      expect(await producer.queue.getJobState(id)).toBe('waiting');
      expect(await producer.queue.getJobs(['waiting', 'failed', 'completed'])).toHaveLength(1); // the same job, not a second
    } finally {
      await worker.close();
      await producer.close();
      await dropHost(url, host);
    }
  });

  it('backoff: retryDelay, doubled each attempt, at most an hour', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 10_000))).toEqual([10_000, 20_000, 40_000, 80_000]);
    expect(backoffMs(11, 10_000)).toBe(3_600_000);
  });

  it('config: channels are checked when the config loads, each error naming the key and the fix', () => {
    const bad = (alarms: unknown) => {
      try {
        parseConfig({ alarms }, { env: {} });
        return 'accepted';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(bad({ channels: [{ type: 'chat', name: 'webhook', url: 'https://x.example/a' }] })).toContain(
      '"alarms.channels.0.name" takes a name no other channel has',
    );
    expect(bad({ channels: [{ type: 'chat', url: 'https://x.example/a', kinds: ['digests'] }] })).toContain('alarms.channels.0.kinds.0');
    expect(bad({ channels: [{ type: 'ntfy', url: 'ftp://x.example/a' }] })).toContain(
      '"alarms.channels.0.url" takes an http:// or https:// URL',
    );
    // a token goes in the environment, never in the file
    expect(bad({ channels: [{ type: 'ntfy', url: 'https://ntfy.sh/t', token: 'tk_abc' }] })).toContain(
      'unknown key "alarms.channels.0.token"',
    );
    expect(bad({ channels: [{ type: 'ntfy', url: 'https://ntfy.sh/t', tokenEnv: 'not a name' }] })).toContain(
      'takes the name of an environment variable',
    );
    expect(bad({ channels: [{ type: 'email', to: 'x' }] })).toContain('alarms.channels.0.type');
    expect(bad({ digestEvery: 'daily' })).toContain('"alarms.digestEvery" takes a duration');
    const ok = parseConfig(
      { alarms: { webhook: 'https://a.example/h', channels: [{ type: 'ntfy', url: 'https://ntfy.sh/t' }] } },
      { env: {} },
    ).alarms;
    expect(ok).toMatchObject({ retryDelay: 10_000, digestEvery: 86_400_000, webUrl: null });
    expect(ok.channels[0]).toMatchObject({ priority: 'high', tags: ['warning'], kinds: null, tokenEnv: null });
  });
});
