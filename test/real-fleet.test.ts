// sunset on the REAL Claude Code CLI (2.1.328, sim/real): a fleet of background and interactive sessions on a
// stand-in Messages API, people watching by id, by name and through the agent view (and one narrowed by --cwd),
// a blocked job, work in flight, a pin, tasks of every state. Every live session is judged and counted; nobody
// watched or waited on is asked or stopped; interactive sessions with terminal tasks leave by /exit and come back
// with --resume; the memory totals match the box; a session ended by hand mid-chain gets exitedAt.
// This test owns its HOME, daemon, tmux socket and Redis, and ends every process it started (RealFleet.destroy).
import { realpathSync } from 'node:fs';
import { basename } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RealFleet } from '../sim/real/real-fleet.js';
import { conversationTexts } from '../sim/real/messages-api.js';
import type { OwnRedis } from './support/redis.js';
import { realConfig, readTask, useRealFleet, writeTask } from './support/real.js';
import { startTestSunset, type TestSunset } from './support/sunset.js';
import { runCli } from './support/cli.js';
import { gatherFleet, type SessionView } from '../src/evidence/fleet.js';
import { countCap } from '../src/cap/cap.js';
import { readFileRoster } from '../src/evidence/file-roster.js';
import { readProcTable } from '../src/evidence/proc.js';
import { buildReport } from '../src/report/report.js';
import type { Config } from '../src/config.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const done = (id: string, sessionId: string) => ({ id, state: 'done', sessionId, releasedAt: ago(H) });

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

/** The sessions of one sweep, by sessionId. */
async function sweep(cfg: Config) {
  const snap = await gatherFleet(cfg);
  expect(snap.roster.ok, JSON.stringify(snap.roster)).toBe(true);
  const by = (sid: string): SessionView => {
    const v = snap.sessions.find((s) => s.sessionId === sid && s.pid !== null);
    if (!v) throw new Error(`no live row for ${sid}: ${JSON.stringify(snap.sessions.map((s) => [s.sessionId, s.pid]))}`);
    return v;
  };
  return { snap, by };
}

describe('sunset on the real Claude Code CLI', () => {
  it('sees, judges and counts every session; protects those watched or waited on; the memory totals match the box', async () => {
    const bgDone = await fleet.startBackground('[[state:done]] write the changelog');
    const bgBlocked = await fleet.startBackground('[[state:blocked needs=Should I squash the commits?]] prepare the release');
    const bgInFlight = await fleet.startBackground('[[bg:sleep 600]] start the dev server');
    const bgPinned = await fleet.startBackground('[[state:done]] tidy the imports');
    const bgById = await fleet.startBackground('[[state:done]] bump the version');
    const bgByName = await fleet.startBackground('[[state:done]] refactor the parser', { name: 'refactor-parser' });
    const i1 = await fleet.startInteractive('[[reply:Ready.]] [[state:done]] rename the module', { name: 'pane-one' });
    const i2 = await fleet.startInteractive('[[reply:Waiting for you.]] review the plan');
    const i3 = await fleet.startInteractive();
    for (const [id, s] of [
      ['t-done', bgDone],
      ['t-blocked', bgBlocked],
      ['t-inflight', bgInFlight],
      ['t-pinned', bgPinned],
      ['t-byid', bgById],
      ['t-byname', bgByName],
      ['t-i1', i1],
    ] as const)
      writeTask(fleet, done(id, s.sessionId));
    writeTask(fleet, { id: 't-i2', state: 'awaiting-human', sessionId: i2.sessionId });
    await fleet.waitForRow(bgDone.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    await fleet.waitForRow(bgBlocked.shortId, (r) => r?.state === 'blocked', 60_000);
    await fleet.waitFor(() => (fleet.jobState(bgInFlight.shortId)?.inFlight?.tasks ?? 0) > 0, 60_000);
    for (const s of [bgPinned, bgById, bgByName])
      await fleet.waitForRow(s.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    fleet.pin(bgPinned.shortId);
    const byId = await fleet.attach(bgById.shortId);
    const byName = await fleet.attach('refactor-parser');
    const cfg = realConfig(fleet, redis.url);

    let { snap, by } = await sweep(cfg);
    // every live session is judged — interactive ones (no id on their rows) included — and counted
    expect(snap.sessions.filter((s) => s.pid !== null)).toHaveLength(9);
    expect(countCap(snap, 35).live).toBe(9);
    expect(by(i1.sessionId)).toMatchObject({ id: null, kind: 'interactive', label: i1.sessionId.slice(0, 8), name: 'pane-one' });
    await fleet.waitFor(async () => (await sweep(cfg)).by(bgDone.sessionId).verdict === 'eligible', 30_000, 300);
    ({ snap, by } = await sweep(cfg));
    expect(by(bgDone.sessionId)).toMatchObject({ verdict: 'eligible', next: { step: 'ask' } });
    expect(
      by(i1.sessionId),
      JSON.stringify({ reasons: by(i1.sessionId).reasons, notes: by(i1.sessionId).notes, evidence: by(i1.sessionId).evidence }),
    ).toMatchObject({ verdict: 'eligible', next: { step: 'ask' } });
    expect(by(bgBlocked.sessionId)).toMatchObject({ verdict: 'protected', notes: ['it asks: Should I squash the commits?'] });
    expect(by(bgBlocked.sessionId).reasons).toContain('job-blocked');
    expect(by(bgInFlight.sessionId).reasons).toContain('job-in-flight');
    expect(by(bgPinned.sessionId).reasons).toEqual(['pinned']);
    expect(by(bgById.sessionId).reasons).toEqual(['client-attached']);
    expect(by(bgByName.sessionId).reasons).toEqual(['client-attached']);
    expect(by(i2.sessionId).reasons).toContain('task-not-terminal');
    // untasked and never prompted: the real CLI writes no transcript before the first prompt, and unknown protects
    expect(by(i3.sessionId)).toMatchObject({ verdict: 'protected', reasons: ['transcript-unknown'] });

    // the memory totals: sessions (trees with their pty hosts) plus the fleet's overhead = what the box holds
    const report = buildReport(snap);
    const box = fleet.memory();
    const held =
      Object.values(box.byPid)
        .filter((p) => p.role !== 'tmux' && p.role !== 'cli')
        .reduce((a, p) => a + p.mb, 0) *
      1024 *
      1024;
    expect(Math.abs(report.memory.fleetBytes - held) / held).toBeLessThan(0.05);
    expect(report.memory.overhead!.byKind.daemon.processes).toBeGreaterThanOrEqual(1);
    expect(report.memory.overhead!.byKind.clients.processes).toBe(2);
    // an interactive lane awaiting a human is reported running, with the memory it holds
    expect(report.awaitingHuman).toMatchObject([{ taskId: 't-i2', sessionId: i2.sessionId, live: true }]);
    expect(report.awaitingHuman[0]!.rssBytes).toBeGreaterThan(50 * 1024 * 1024);
    // a background session's pty host is counted with it
    expect(by(bgDone.sessionId).rssBytes! / 1024 / 1024).toBeGreaterThan(box.byPid[bgDone.pid]!.mb + 30);

    // the roster read from Claude Code's own files says what `claude agents --json --all` says (a sweep that
    // costs a few ms, not a 0.3 s, 134 MB child): the same rows, pids, states and names
    const cliRows = (await fleet.roster())
      .map((r) => [r.sessionId, r.pid ?? null, r.id ?? null, r.state ?? null, r.kind, r.name ?? null].join(' '))
      .sort();
    const fileRoster = await readFileRoster(fleet.claudeDir, await readProcTable());
    expect(fileRoster.ok).toBe(true);
    const fileRows = (fileRoster.ok ? fileRoster.rows : [])
      .map((r) => [r.sessionId, r.pid, r.id, r.state, r.kind, r.name].join(' '))
      .sort();
    expect(fileRows).toEqual(cliRows);
    expect((await gatherFleet(cfg)).rosterFrom).toBe('files');

    // the CLI takes a short id, a sessionId, a prefix of either, or a name
    const cfgFile = writeConfigFile(cfg);
    const byPrefix = await runCli(['verdict', i1.sessionId.slice(0, 8), '--config', cfgFile]);
    expect(byPrefix.code, byPrefix.stdout + byPrefix.stderr).toBe(0);
    expect((await runCli(['verdict', 'pane-one', '--config', cfgFile])).code).toBe(0);
    expect((await runCli(['verdict', 'refactor-parser', '--config', cfgFile])).code).toBe(3);
    const cap = await runCli(['cap', '--json', '--config', cfgFile]);
    expect(JSON.parse(cap.stdout)).toMatchObject({ live: 9 });

    // the agent view can open any background session: while it is open, none is eligible
    const view = await fleet.agentView();
    ({ snap, by } = await sweep(cfg));
    expect(snap.agentViews).toBe(1);
    expect(by(bgDone.sessionId)).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    expect(by(i1.sessionId).verdict).toBe('eligible'); // interactive sessions are not in it
    const text = await runCli(['verdict', '--config', cfgFile]);
    expect(text.stdout).toMatch(/a person has the agent view open/);
    await view.close();
    await byId.close();
    await byName.close();
    ({ snap, by } = await sweep(cfg));
    expect(by(bgDone.sessionId).verdict).toBe('eligible');
    expect(by(bgById.sessionId).verdict).toBe('eligible');

    // `claude agents --cwd <dir>` lists only the sessions started under <dir> (a relative <dir> from its own folder):
    // it protects those, and no other
    const narrowed = await fleet.agentView({ args: ['--cwd', basename(bgDone.cwd)], cwd: fleet.workRoot });
    await fleet.waitForScreen(narrowed.paneId, /1 completed/, 30_000);
    ({ snap, by } = await sweep(cfg));
    const folder = realpathSync(bgDone.cwd);
    expect(snap.agentViewsOpen).toEqual([{ pid: narrowed.pid, cwd: folder }]);
    expect(by(bgDone.sessionId)).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    expect(by(bgDone.sessionId).evidence.agentViewsListing).toEqual([{ pid: narrowed.pid, cwd: folder }]);
    for (const s of [bgById, bgByName]) expect(by(s.sessionId).verdict).toBe('eligible');
    expect((await runCli(['verdict', '--config', cfgFile])).stdout).toContain(
      `agent view open on ${folder} (claude agents --cwd, pid ${narrowed.pid})`,
    );
    await narrowed.close();
  }, 600_000);

  it('asks, then exits by their own paths; nobody watched or waited on is touched; a session stopped by hand mid-chain gets exitedAt; /exit is resumable', async () => {
    const rows = await fleet.roster();
    const live = (sid: string) => rows.find((r) => r.sessionId === sid && typeof r.pid === 'number')!;
    const sid = (task: string) => readTask(fleet, task).sessionId as string;
    const bgHand = await fleet.startBackground('[[state:done]] write the release notes');
    writeTask(fleet, done('t-hand', bgHand.sessionId));
    await fleet.waitForRow(bgHand.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    const byName = await fleet.attach('refactor-parser'); // still watched: must never be asked or stopped

    // run 1: a long wait after the ask, so the chains stop there
    sunset = await startTestSunset(realConfig(fleet, redis.url, { windows: { askWait: H } }));
    await fleet.waitFor(() => ['t-done', 't-i1', 't-hand'].every((t) => Boolean(readTask(fleet, t).exitAskedAt)), 90_000, 200);
    for (const t of ['t-blocked', 't-inflight', 't-pinned', 't-byname', 't-i2']) expect(readTask(fleet, t).exitAskedAt, t).toBeUndefined();
    // a person stops one by hand, mid-chain: its row becomes a record; reconcile latches exitedAt
    expect((await fleet.stop(bgHand.shortId)).code).toBe(0);
    await fleet.waitForExit(bgHand.pid, 20_000);
    await sunset.reconcile();
    await fleet.waitFor(() => Boolean(readTask(fleet, 't-hand').exitedAt), 30_000, 200);
    expect(sunset.exitCalls).toEqual([]);
    expect(sunset.events.some((e) => e.event === 'chain:session-ended' && e.taskId === 't-hand' && e.by === 'other')).toBe(true);
    await sunset.close();
    sunset = null;

    // run 2: the requests go out; the finished sessions leave by their own exit paths
    const bgDone = live(sid('t-done'));
    const bgById = live(sid('t-byid')); // its person detached at the end of the first test: free to go
    const i1 = live(sid('t-i1'));
    const before = fleet.api.requests().length;
    sunset = await startTestSunset(realConfig(fleet, redis.url, { windows: { askWait: 200, retryWait: 500 } }));
    await fleet.waitFor(() => ['t-done', 't-byid', 't-i1'].every((t) => Boolean(readTask(fleet, t).exitedAt)), 120_000, 250);
    expect(await fleet.waitForExit(bgDone.pid!, 10_000)).toBe(true);
    expect(await fleet.waitForExit(i1.pid!, 10_000)).toBe(true);
    const after = await fleet.roster();
    expect(after.find((r) => r.sessionId === i1.sessionId)).toBeUndefined(); // an interactive row goes when it ends
    expect(after.find((r) => r.sessionId === bgDone.sessionId)?.pid).toBeUndefined(); // a background one stays as a record
    const said = sunset.events
      .filter((e) => /^(exit|chain|idle):/.test(e.event))
      .map((e) => `${e.event} ${e.sessionId ?? ''} ${e.why ?? e.how ?? e.outcome ?? ''}`);
    expect(sunset.exitCalls.sort(), said.join('\n')).toEqual([bgDone.id, bgById.id, i1.sessionId].sort());
    for (const t of ['t-blocked', 't-inflight', 't-pinned', 't-byname', 't-i2']) {
      expect(readTask(fleet, t).exitAskedAt, t).toBeUndefined();
      expect(readTask(fleet, t).exitedAt, t).toBeUndefined();
    }
    await byName.close();
    await sunset.close();
    sunset = null;

    // the interactive session comes back with its conversation
    const r = await fleet.claude(['--resume', i1.sessionId, '-p', 'what did I ask you before?'], { cwd: i1.cwd, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const resumed = fleet.api
      .requests()
      .slice(before)
      .filter((q) => q.kind === 'main' && conversationTexts(q.body).some((t) => t.includes('what did I ask you before?')));
    expect(resumed.length).toBeGreaterThan(0);
    expect(conversationTexts(resumed[0]!.body).some((t) => t.includes('rename the module'))).toBe(true); // the old conversation, sent again
  }, 600_000);
});

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
/** The config as a file, for the CLI (`--config`). */
function writeConfigFile(cfg: Config): string {
  const file = join(fleet.root, 'sunset.config.json');
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  return file;
}
