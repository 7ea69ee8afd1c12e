// The pages in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core.
// These tests FAIL when Chromium is missing: CI installs it (`apt-get install -y chromium`).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { startWebSunset } from './support/web.js';
import type { Web } from '../src/web/server.js';
import { ownRedis } from './support/redis.js';
import { closeProducers, createDeps } from '../src/pipeline/deps.js';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { writeExit, type ExitRecord } from '../src/store/ledger.js';
import { appendSample, type Sample } from '../src/report/sampler.js';
import { shellWord } from '../src/web/model.js';

const CHROMIUM = process.env.SUNSET_TEST_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = join(__dirname, '..', 'test-artifacts');
const H = 3_600_000;
// a real browser on a busy 2-core machine: generous deadlines, but every wait is on a condition
const SLOW = 120_000;
const POLL = { timeout: 20_000, interval: 100 };

let browser: BrowserContext;
let profile: string;
let page: Page;
/** Every URL the page asked for, and every console error it printed. */
let requested: string[] = [];
let consoleErrors: string[] = [];

/** Set when there is no browser: every test then fails with it (never skips: CI must install Chromium). */
let missing: string | null = null;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    missing = `Chromium is not installed at ${CHROMIUM}: the browser tests need it (apt-get install -y chromium). They fail rather than skip, so CI must install it.`;
    return;
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  profile = mkdtempSync(join(tmpdir(), 'sunset-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1440, height: 900 },
  });
}, SLOW);
afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
}, SLOW);

beforeEach(() => {
  if (missing) throw new Error(missing); // before the fleet is made: the steps after it do not run
});
const ctx = useFleet({ first: () => page?.close(), hookTimeout: SLOW });
beforeEach(async () => {
  page = await browser.newPage();
  requested = [];
  consoleErrors = [];
  page.on('request', (r) => requested.push(r.url()));
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(e.message));
});

async function up(
  roles: Array<'producers' | 'workers' | 'web'>,
  windows: Record<string, number> = {},
  config: Record<string, unknown> = {},
): Promise<Web> {
  const s = await startWebSunset(ctx.fleet, roles, { windows, ...config });
  ctx.sunset = s;
  return s.web;
}

const until = untilWithin(45_000, 50);

/** The page fetched nothing but from the server itself, and printed no error but the answers it expected. */
function stayedHome(web: Web, expectedStatuses: number[] = []) {
  const origin = new URL(web.url).origin;
  expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
  const expected = (e: string) =>
    expectedStatuses.some((st) => e.includes(`Failed to load resource: the server responded with a status of ${st}`));
  expect(consoleErrors.filter((e) => !expected(e))).toEqual([]);
}

describe('the fleet page', () => {
  it(
    'lists every roster row with its verdict and reasons in words, a memory chart by lane, timelines; sorts and refreshes itself',
    async () => {
      const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
      ctx.fleet.writeTask({
        id: 'design-review',
        state: 'awaiting-human',
        sessionId: waiting.sessionId,
        stateChangedAt: new Date(Date.now() - 269 * H).toISOString(),
      });
      const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
      ctx.fleet.writeTask({ id: 'fix-login', state: 'active', sessionId: busy.sessionId });
      const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
      const young = await ctx.fleet.spawnBackground({ transcriptAgeMs: 10 * 60_000 });
      const asked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
      const t0 = Date.now() - H;
      ctx.fleet.writeTask({
        id: 'ship-report',
        state: 'done',
        sessionId: asked.sessionId,
        releasedAt: new Date(t0).toISOString(),
        exitAskedAt: new Date(t0 + 15 * 60_000).toISOString(),
        exitRequests: 2,
        exitRequestedAt: new Date(t0 + 45 * 60_000).toISOString(),
      });
      const rec = ctx.fleet.addRecord();
      // web only: nothing acts, so every verdict stays as written
      const web = await up(['web']);

      await page.goto(web.url);
      const row = (id: string) => page.locator(`#sessions tr[data-id="${id}"]`);
      await expect.poll(() => page.locator('#sessions tbody tr').count(), POLL).toBe(6);
      expect(await row(waiting.id).getAttribute('data-verdict')).toBe('protected');
      expect(await row(waiting.id).innerText()).toContain('its task is still open (active or awaiting a human)');
      expect(await row(waiting.id).innerText()).toContain('design-review');
      expect(await row(busy.id).innerText()).toContain('the roster says it is busy');
      expect(await row(idle.id).getAttribute('data-verdict')).toBe('eligible');
      expect(await row(idle.id).innerText()).toMatch(/nothing protects it[\s\S]*next: expire 1/);
      expect(await row(young.id).innerText()).toContain('untasked and not yet idle for the expire window');
      expect(await row(asked.id).getAttribute('data-verdict')).toBe('eligible');
      expect(await row(asked.id).innerText()).toContain('request 2 of 3');
      expect(await row(asked.id).locator('ol.timeline li.done').count()).toBe(4); // released, asked, request 1, request 2
      expect(await row(rec.id).getAttribute('data-verdict')).toBe('record');
      expect(await row(rec.id).innerText()).toContain('a roster record with no process');

      // memory by lane: an inline SVG, one bar per lane
      expect(await page.locator('svg.lane-chart g.lane').count()).toBe(4);
      expect(await page.locator('svg.lane-chart g.lane[data-lane="awaiting-human"] text.lane-value').textContent()).toMatch(
        /MB · 1 session · \d+ %/,
      );
      expect(await page.locator('.task-tl[data-task="ship-report"]').innerText()).toMatch(
        /released[\s\S]*asked[\s\S]*request 2[\s\S]*exited/,
      );
      // nothing has exited and the sampler has not run: both sections say so plainly
      expect(await page.locator('#exited').innerText()).toContain('No session has exited yet.');
      expect(await page.locator('#over-time').innerText()).toMatch(
        /No samples yet: sunset up records one every windows\.sampleEvery \(5m here\)/,
      );
      await page.screenshot({ path: join(ARTIFACTS, 'fleet.png'), fullPage: true });

      // sort by memory, largest first; a second click turns it around
      const memory = page.locator('#sessions thead th', { hasText: 'Memory' });
      const rss = async () =>
        (await page.locator('#sessions tbody tr td:nth-child(6)').evaluateAll((tds) => tds.map((td) => (td as HTMLElement).dataset.sort)))
          .filter((v) => v !== '')
          .map(Number);
      await memory.click();
      expect(await memory.getAttribute('aria-sort')).toBe('descending');
      const down = await rss();
      expect(down).toEqual([...down].sort((a, b) => b - a));
      await memory.click();
      const upward = await rss();
      expect(upward).toEqual([...upward].sort((a, b) => a - b));

      // it refreshes itself, keeping the sort: the busy session turns idle and the page says so
      ctx.fleet.setStatus(busy, 'idle');
      await until('the page refreshed', async () => !(await row(busy.id).innerText()).includes('the roster says it is busy'), 45_000);
      expect(await memory.getAttribute('aria-sort')).toBe('ascending');
      expect(await row(busy.id).innerText()).toContain('its task is still open');
      stayedHome(web);
    },
    SLOW,
  );
});

/** A census as the sampler writes it (src/sampler.ts), for a fixture. */
function sample(at: number, o: { live: number; mb: Record<string, number>; silentH: number }): Sample {
  const MB = 1024 ** 2;
  const lane = (l: string) => ({ sessions: o.mb[l] ? 1 : 0, bytes: (o.mb[l] ?? 0) * MB });
  const byLane = {
    'awaiting-human': lane('awaiting-human'),
    active: lane('active'),
    finished: lane('finished'),
    untasked: lane('untasked'),
  };
  return {
    v: 1,
    at: new Date(at).toISOString(),
    host: 'fixture',
    rosterOk: true,
    rows: o.live + 1,
    live: o.live,
    records: 1,
    gone: 0,
    rssBytes: Object.values(byLane).reduce((n, x) => n + x.bytes, 0),
    byLane,
    silence: { longestMs: o.silentH * H, longestSessionId: 'a1b2c3d4', buckets: { '>=48h': o.silentH >= 48 ? 1 : 0 }, unknown: 0 },
    since: null,
    exits: 1,
    asks: 2,
    auditOffset: 0,
  };
}

describe('the fleet page: where memory goes, what came back, over time', () => {
  it(
    'shows what eligible sessions would give back (and the memory floor), the resume ledger with its commands, and the sampler chart',
    async () => {
      const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H }); // eligible: untasked, idle past the window
      const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 30 * H });
      ctx.fleet.writeTask({ id: 'design-review', state: 'awaiting-human', sessionId: waiting.sessionId });
      // the ledger: one task's session that left, one a person asked to leave, and one that did not leave
      const dir = ctx.fleet.stateDir;
      const ago = (h: number) => new Date(Date.now() - h * H).toISOString();
      writeExit(dir, {
        jobId: 'request/ship-report/1',
        reason: 'request',
        taskId: 'ship-report',
        sessionId: '7569525c-f279-4fd9-88c7-a8ca4cffa11c',
        id: '7569525c',
        kind: 'background',
        cwd: '/home/me/work/ship report',
        n: 1,
        calledAt: ago(3),
        finishedAt: ago(3),
        outcome: 'exited',
        rssBytes: 612 * 1024 ** 2,
      });
      // its transcript is still there (a session of another folder: found by its session id)
      mkdirSync(join(ctx.fleet.projectsDir, '-home-me-work-ship-report'), { recursive: true });
      writeFileSync(join(ctx.fleet.projectsDir, '-home-me-work-ship-report', '7569525c-f279-4fd9-88c7-a8ca4cffa11c.jsonl'), '{}\n');
      writeExit(dir, {
        jobId: 'person/0b9e/1',
        reason: 'person',
        sessionId: '0b9e2f11-5c4d-4e8a-9a51-2d3f6b7c8d90',
        id: '0b9e2f11',
        kind: 'interactive',
        cwd: '/home/me/work/pricing',
        calledAt: ago(0.5),
        finishedAt: ago(0.5),
        outcome: 'exited',
        rssBytes: 1.4 * 1024 ** 3,
        by: 'web 127.0.0.1',
        why: 'parked for two weeks',
        override: true,
      } as ExitRecord);
      writeExit(dir, {
        jobId: 'request/t9/1',
        reason: 'request',
        taskId: 't9',
        sessionId: 'sid-stuck',
        n: 1,
        calledAt: ago(1),
        finishedAt: ago(1),
        outcome: 'still-running',
      });
      // three days of samples, one an hour; late on, a session had sat silent past 48 h
      const t0 = Date.now() - 72 * H;
      for (let i = 0; i <= 72; i++) {
        const wave = Math.round(400 + 300 * Math.sin(i / 7));
        appendSample(
          dir,
          sample(t0 + i * H, {
            live: 3 + (i % 4),
            mb: { 'awaiting-human': 300 + i * 4, active: wave, finished: i % 12 < 3 ? 250 : 0, untasked: 180 },
            silentH: i >= 60 ? i - 10 : (i % 24) * 1.5,
          }),
        );
      }
      // a floor of a petabyte: MemAvailable is always under it
      const web = await up(['web'], {}, { memoryFloorMB: 1_000_000_000 });

      await page.goto(web.url);
      const give = page.locator('.figure', { hasText: 'eligible now · would give back' });
      await expect.poll(() => give.innerText(), POLL).toMatch(/^1 · \d+ MB/);
      expect(await give.getAttribute('title')).toMatch(/^eligible now: 1 session, would give back \d+ MB$/);
      expect(await page.locator('#pressure').innerText()).toMatch(
        /Under the memory floor — exits go largest first\. MemAvailable is [\d.]+ [GM]B, under memoryFloorMB/,
      );
      expect(await page.locator('.figure.bad', { hasText: 'MemAvailable' }).count()).toBe(1);
      expect(await page.locator(`#sessions tr[data-id="${idle.id}"]`).getAttribute('data-verdict')).toBe('eligible');

      // the resume ledger, newest first; what did not leave is not in it
      const ledger = page.locator('#exited-table tbody tr');
      expect(await ledger.count()).toBe(2);
      expect(await ledger.nth(0).innerText()).toMatch(
        /30 min ago[\s\S]*0b9e2f11[\s\S]*interactive[\s\S]*untasked[\s\S]*a person's request \(web 127\.0\.0\.1: parked for two weeks, overriding protection\)[\s\S]*1\.4 GB/,
      );
      // no transcript here, nor a kept copy: gone, said so in its own column, and no command that cannot work
      expect(await ledger.nth(0).locator('td.resumable').innerText()).toBe('gone');
      expect(await ledger.nth(0).locator('code.copy').count()).toBe(0);
      expect(await ledger.nth(0).locator('td.resume').innerText()).toBe('cannot be resumed: no transcript and no kept copy');
      // from its transcript: both commands
      expect(await ledger.nth(1).locator('td.resumable').innerText()).toBe('transcript');
      const claude = shellWord(ctx.sunset!.config.fleet.claudeCommand);
      const cmds = ledger.nth(1).locator('code.copy');
      expect(await cmds.nth(0).innerText()).toBe(
        `(cd '/home/me/work/ship report' && ${claude} --resume 7569525c-f279-4fd9-88c7-a8ca4cffa11c)`,
      );
      expect(await cmds.nth(1).innerText()).toBe('sunset resume ship-report');
      expect(await ledger.nth(1).innerText()).toMatch(
        /3\.0 h ago[\s\S]*7569525c[\s\S]*ship-report[\s\S]*task ship-report finished \(request 1 of 3\)[\s\S]*612 MB/,
      );
      // a click selects the whole command, ready to copy
      await cmds.nth(1).click();
      expect(await page.evaluate(() => String(window.getSelection()))).toBe('sunset resume ship-report');

      // over time: the chart as an image, and the figures that answer the 48 h question
      const chart = page.locator('#over-time figure img');
      expect(await chart.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
      await expect.poll(() => chart.evaluate((img) => (img as HTMLImageElement).naturalWidth), POLL).toBeGreaterThan(0);
      const fact = (k: string) => page.locator(`#over-time dd[data-fact="${k}"]`).innerText();
      expect(await fact('samples')).toMatch(/^73 over 3 days/);
      expect(await fact('live sessions')).toMatch(/3 – 6[\s\S]*median/);
      expect(await fact('idle ≥ 48 h')).toMatch(/^13 of 73 samples \(18 %\) had a session silent 48 h or more/);
      expect(await fact('longest silence')).toMatch(/^3 days[\s\S]*a1b2c3d4/);
      expect(await fact('exits · asks')).toMatch(/^73 · 146/);
      await page.screenshot({ path: join(ARTIFACTS, 'fleet-ledger.png'), fullPage: true });
      await page.locator('#exited').screenshot({ path: join(ARTIFACTS, 'fleet-exited.png') });
      await page.locator('#over-time').screenshot({ path: join(ARTIFACTS, 'fleet-over-time.png') });
      stayedHome(web);
    },
    SLOW,
  );
});

describe('the decisions page', () => {
  it(
    'shows lanes awaiting a human (the header counts what the table lists) and an alarm; a person exits a lane from the page and it leaves by its own path, and the page says so',
    async () => {
      const lane = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
      ctx.fleet.writeTask({
        id: 'pricing-question',
        state: 'awaiting-human',
        sessionId: lane.sessionId,
        stateChangedAt: new Date(Date.now() - 269 * H).toISOString(),
      });
      const lane2 = await ctx.fleet.spawnBackground({ transcriptAgeMs: 50 * H });
      ctx.fleet.writeTask({
        id: 'api-naming',
        state: 'awaiting-human',
        sessionId: lane2.sessionId,
        awaitingHumanSince: new Date(Date.now() - 46 * H).toISOString(),
      });
      // a lane whose session is not running: the table lists it, so the header counts it
      ctx.fleet.writeTask({
        id: 'copy-review',
        state: 'awaiting-human',
        sessionId: 'sid-not-running',
        stateChangedAt: new Date(Date.now() - 10 * H).toISOString(),
      });
      // a session the chain gave up on: its task file latched as the retry worker leaves it, and its alarm
      const stubborn = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
      const t0 = Date.now() - 2 * H;
      const at = (min: number) => new Date(t0 + min * 60_000).toISOString();
      ctx.fleet.writeTask({
        id: 'migrate-db',
        state: 'done',
        sessionId: stubborn.sessionId,
        releasedAt: at(0),
        exitAskedAt: at(15),
        exitRequests: 3,
        exitRequestedAt: at(45),
        exitGaveUpAt: at(55),
      });
      // workers (the exit worker carries out a person's request) and the web; no producer re-plans the chains
      const web = await up(['workers', 'web']);
      await ctx.sunset!.deps.alarms.raise('session-will-not-exit', 'migrate-db', {
        taskId: 'migrate-db',
        sessionId: stubborn.sessionId,
        message: `session ${stubborn.id} did not exit after 3 requests (task migrate-db): a person decides`,
      });

      await page.goto(new URL('/decisions', web.url).href);
      const lanes = page.locator('#awaiting tbody tr');
      expect(await lanes.count()).toBe(3);
      expect(await lanes.nth(0).getAttribute('data-task')).toBe('pricing-question'); // oldest first
      expect(await lanes.nth(0).innerText()).toMatch(/11 days[\s\S]*from stateChangedAt/);
      expect(await lanes.nth(1).innerText()).toMatch(/46 h[\s\S]*from awaitingHumanSince/);
      expect(await lanes.nth(2).innerText()).toMatch(/not running/);
      // the header once counted only the lanes with a running session (2) while the table listed 3
      expect(await page.locator('p.headline').innerText()).toMatch(
        /across 3 lanes awaiting a human, \d+ % of the fleet's [\d.]+ [MG]B\. \(1 of them has no running session\.\)/,
      );
      const alarm = page.locator('#alarms tbody tr[data-kind="session-will-not-exit"]');
      expect(await alarm.count()).toBe(1);
      expect(await alarm.innerText()).toContain('migrate-db');
      await page.screenshot({ path: join(ARTIFACTS, 'decisions.png'), fullPage: true });

      // without the override the verdict refuses, and says why in words
      const form = page.locator('#awaiting tr[data-task="pricing-question"] form.exit-form');
      await form.locator('input[name=reason]').fill('parked for two weeks; the box needs the memory');
      await form.locator('button').click();
      await expect.poll(() => form.locator('output').textContent(), POLL).toMatch(/Refused: .* is protected \(its task is still open/);
      expect(await page.locator('#notices .notice.bad').count()).toBe(1);
      expect(ctx.fleet.isAlive(lane)).toBe(true);

      // with it, the person's decision goes through the same queue as `sunset exit`
      await form.locator('input[name=override]').check();
      await form.locator('button').click();
      await expect.poll(() => page.locator('#notices .notice.ok').first().textContent(), POLL).toMatch(/requested \(job person\//);
      // the new notice replaced the red one: no stale refusal stays under it
      expect(await page.locator('#notices .notice').count()).toBe(1);
      await page.screenshot({ path: join(ARTIFACTS, 'decisions-after-request.png'), fullPage: false });
      await until('the lane left', () => !ctx.fleet.isAlive(lane));
      // the page follows the exit it requested to its outcome, and says it
      await expect
        .poll(() => page.locator('#notices .notice').first().textContent(), POLL)
        .toMatch(new RegExp(`^Session ${lane.id} exited: it left by its own exit path \\(claude stop\\)`));
      expect(await page.locator('#notices .notice.ok').count()).toBe(1);
      expect(ctx.fleet.ended(lane)).toMatchObject([{ how: 'stop' }]);
      expect(ctx.fleet.isAlive(lane2) && ctx.fleet.isAlive(stubborn)).toBe(true);
      const audit = readFileSync(join(ctx.sunset!.config.stateDir, 'audit.jsonl'), 'utf8');
      expect(audit).toMatch(/"event":"exit:person-request".*"why":"parked for two weeks; the box needs the memory","override":true/);
      stayedHome(web, [409]); // the refusal above
    },
    SLOW,
  );

  it(
    "a person's exit that does not take (still running) says so on the page; a person acknowledges the alarm, which leaves the list and the fleet page's count",
    async () => {
      const stubborn = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
      const t0 = Date.now() - 2 * H;
      const at = (min: number) => new Date(t0 + min * 60_000).toISOString();
      ctx.fleet.writeTask({
        id: 'migrate-db',
        state: 'done',
        sessionId: stubborn.sessionId,
        releasedAt: at(0),
        exitAskedAt: at(15),
        exitRequests: 3,
        exitRequestedAt: at(45),
        exitGaveUpAt: at(55),
      });
      const web = await up(['workers', 'web']);
      const alarms = ctx.sunset!.deps.alarms;
      await alarms.raise('session-will-not-exit', 'migrate-db', {
        taskId: 'migrate-db',
        sessionId: stubborn.sessionId,
        message: `session ${stubborn.id} did not exit after 3 requests (task migrate-db): a person decides`,
      });
      await alarms.raise('cap-reached', 'hour/2026-11-30T04', { message: 'cap reached: 36/35; a start was refused' });
      const [willNot, cap] = alarms.listed();

      // the fleet page shows the open alarms at a glance, linking to Decisions
      await page.goto(web.url);
      const count = page.locator('a#open-alarms');
      expect(await count.innerText()).toMatch(/^2\s+open alarms →$/);
      expect(await count.getAttribute('class')).toContain('bad');
      await count.click();
      await page.waitForURL(/\/decisions#alarms-card$/);

      // a person asks the stubborn session to leave once more, overriding "gave up": it does not, and the page says so
      const row = page.locator(`#alarms tr[data-alarm="${willNot.id}"]`);
      expect(await row.innerText()).toContain(willNot.id);
      const exitForm = row.locator('form.exit-form');
      await exitForm.locator('input[name=reason]').fill('one more try before I look at it');
      await exitForm.locator('input[name=override]').check();
      await exitForm.locator('button').click();
      await expect.poll(() => page.locator('#notices .notice').first().textContent(), POLL).toMatch(/requested \(job person\//);
      // still-running comes after exitConfirm (3 s here): the page polls GET /api/exit/<jobId> until the ledger has it
      await expect
        .poll(() => page.locator('#notices .notice').first().textContent(), { timeout: 30_000, interval: 200 })
        .toMatch(
          new RegExp(
            `^Session ${stubborn.id} is still running: it was asked to leave \\(claude stop\\) and had not left when sunset stopped waiting \\(3s, windows\\.exitConfirm\\)\\. sunset does not force it`,
          ),
        );
      expect(await page.locator('#notices .notice.bad').count()).toBe(1);
      expect(await page.locator('#notices .notice').count()).toBe(1);
      expect(ctx.fleet.isAlive(stubborn)).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, 'decisions-still-running.png'), fullPage: false });

      // acknowledged: the alarm leaves the list (it stays in the log), audited with who and why
      const ackForm = page.locator(`#alarms tr[data-alarm="${willNot.id}"] form.ack-form`);
      await ackForm.locator('input[name=reason]').fill('I will stop it by hand after reading its transcript');
      await ackForm.locator('button').click();
      await expect
        .poll(() => page.locator('#notices .notice').first().textContent(), POLL)
        .toBe(`Alarm ${willNot.id} acknowledged: it leaves the list and stays in the log (sunset alarms --all).`);
      expect(await page.locator('#notices .notice.ok').count()).toBe(1); // the red one before it is gone
      await expect.poll(() => page.locator(`#alarms tr[data-alarm="${willNot.id}"]`).count(), POLL).toBe(0);
      expect(await page.locator(`#alarms tr[data-alarm="${cap.id}"]`).count()).toBe(1);
      expect(await page.locator('#alarms-card').innerText()).toMatch(/1 alarm acknowledged, not listed/);
      expect(alarms.list()).toHaveLength(2);
      expect(alarms.open().map((a) => a.id)).toEqual([cap.id]);
      const audit = readFileSync(join(ctx.sunset!.config.stateDir, 'audit.jsonl'), 'utf8');
      expect(audit).toMatch(
        new RegExp(
          `"event":"alarm:acknowledged".*"alarmId":"${willNot.id}".*"by":"web 127\\.0\\.0\\.1","why":"I will stop it by hand after reading its transcript"`,
        ),
      );
      await page.screenshot({ path: join(ARTIFACTS, 'decisions-acknowledged.png'), fullPage: true });

      await page.goto(web.url);
      expect(await page.locator('a#open-alarms').innerText()).toMatch(/^1\s+open alarm →$/);
      stayedHome(web);
    },
    SLOW,
  );
});

describe('on a phone', () => {
  it(
    'at 390 px wide nothing overflows the page: each table scrolls sideways inside its card',
    async () => {
      for (let i = 0; i < 3; i++) await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
      const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 30 * H });
      ctx.fleet.writeTask({ id: 'a-rather-long-task-name-for-a-phone', state: 'awaiting-human', sessionId: waiting.sessionId });
      const asked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
      const t0 = Date.now() - H;
      ctx.fleet.writeTask({
        id: 'ship-report',
        state: 'done',
        sessionId: asked.sessionId,
        releasedAt: new Date(t0).toISOString(),
        exitAskedAt: new Date(t0 + 60_000).toISOString(),
        exitRequests: 1,
        exitRequestedAt: new Date(t0 + 120_000).toISOString(),
      });
      ctx.fleet.addRecords(2);
      writeExit(ctx.fleet.stateDir, {
        jobId: 'request/ship-report/1',
        reason: 'request',
        taskId: 'ship-report',
        sessionId: '7569525c-f279-4fd9-88c7-a8ca4cffa11c',
        id: '7569525c',
        kind: 'background',
        cwd: '/home/me/work/a folder with a long name/ship report',
        n: 1,
        calledAt: new Date().toISOString(),
        finishedAt: new Date().toISOString(),
        outcome: 'exited',
        rssBytes: 612 * 1024 ** 2,
      });
      const web = await up(['web']);
      await ctx.sunset!.deps.alarms.raise('session-will-not-exit', 'task/x', {
        taskId: 'x',
        sessionId: waiting.sessionId,
        message: 'a session that did not exit after three requests, with a long message',
      });
      await page.setViewportSize({ width: 390, height: 844 });
      for (const [path, shot, tables] of [
        ['/', 'fleet-phone.png', ['sessions', 'exited-table']],
        ['/decisions', 'decisions-phone.png', ['awaiting', 'alarms']],
      ] as const) {
        await page.goto(new URL(path, web.url).href);
        await page.locator(`#${tables[0]}`).waitFor();
        // the page itself is no wider than the screen
        expect({ path, width: await page.evaluate(() => document.documentElement.scrollWidth) }).toEqual({ path, width: 390 });
        for (const id of tables) {
          const box = await page.locator(`#${id}`).evaluate((t) => {
            const wrap = t.parentElement!;
            const card = t.closest('section.card')!.getBoundingClientRect();
            const w = wrap.getBoundingClientRect();
            return {
              overflowX: getComputedStyle(wrap).overflowX,
              insideCard: w.left >= card.left - 0.5 && w.right <= card.right + 0.5,
              scrolls: wrap.scrollWidth > wrap.clientWidth,
            };
          });
          expect({ path, id, ...box }).toMatchObject({ path, id, overflowX: 'auto', insideCard: true });
          if (id === 'sessions') expect(box.scrolls).toBe(true); // wider than a phone: it scrolls, inside its card
        }
        await page.screenshot({ path: join(ARTIFACTS, shot), fullPage: true });
      }
      stayedHome(web);
    },
    SLOW,
  );
});

describe('the queue board', () => {
  it(
    "serves Bull Board for every host's queues from this server alone",
    async () => {
      // a private Redis: the board shows what is in it, and the shared one holds every other test's queues
      const redis = await ownRedis();
      try {
        const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 2 * H });
        const s = await startWebSunset(ctx.fleet, ['workers', 'web'], { redisUrl: redis.url });
        ctx.sunset = s;
        const web = s.web;
        // another host sharing the Redis, with one exit request waiting for its own workers
        const other = createDeps(parseConfig(ctx.fleet.config({ host: 'other-host', redisUrl: redis.url }), { env: {} }), {
          log: silentLogger,
        });
        await other.producers.exit.add('person/elsewhere/1', {
          reason: 'person',
          sessionId: 'elsewhere',
          by: 'test',
          why: 'board test',
          override: false,
          at: new Date().toISOString(),
        });
        await closeProducers(other.producers);
        // one job through this host's exit queue, so the board has something to show
        const res = await fetch(new URL(`/api/exit/${a.id}`, web.url), {
          method: 'POST',
          headers: { authorization: `Bearer ${web.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ reason: 'board test' }),
        });
        expect(res.status).toBe(202);
        await until('the session left', () => !ctx.fleet.isAlive(a));

        await page.goto(new URL('/queues', web.url).href);
        const host = s.config.host;
        await page.getByText(`session-exit @ ${host}`).first().waitFor({ timeout: 30_000 });
        await page.getByText('session-exit @ other-host').first().waitFor({ timeout: 30_000 });
        await page.screenshot({ path: join(ARTIFACTS, 'queues.png'), fullPage: false });
        const origin = new URL(web.url).origin;
        expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
      } finally {
        await ctx.sunset?.close();
        ctx.sunset = null;
        await redis.destroy();
      }
    },
    SLOW,
  );
});
