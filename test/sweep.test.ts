// Integration: a real test fleet (real processes, a private tmux server), the real probes and the verdict.
// `sunset verdict --json` gives the verdict and reason codes DESIGN names for every kind of row.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestFleet } from './fleet/fleet.js';
import { parseConfig } from '../src/config.js';
import { gatherFleet } from '../src/fleet.js';
import { sessionExit } from '../src/session-exit.js';

const run = promisify(execFile);
const CLI = join(__dirname, '..', 'dist', 'src', 'cli.js');
const H = 3_600_000;
const MIN = 60_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

let fleet: TestFleet;
beforeEach(async () => {
  fleet = await TestFleet.create();
});
afterEach(async () => {
  const signals = fleet.signals();
  await fleet.destroy();
  expect(signals).toEqual([]); // D1: no agent ever received a signal
});

async function verdictJson(args: string[] = []) {
  const cfgFile = fleet.writeConfig();
  try {
    const r = await run(process.execPath, [CLI, 'verdict', '--json', '--config', cfgFile, ...args]);
    return { code: 0, json: JSON.parse(r.stdout), stderr: r.stderr };
  } catch (err: any) {
    return { code: err.code as number, json: err.stdout ? JSON.parse(err.stdout) : null, stderr: err.stderr as string };
  }
}

describe('sunset verdict --json on a test fleet', () => {
  it('gives every kind of row its verdict and reason codes', async () => {
    const done = (sessionId: string, extra: Record<string, unknown> = {}) => ({ state: 'done', sessionId, releasedAt: ago(H), ...extra });
    const eligible = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-eligible', ...done(eligible.sessionId) });
    const awaiting = await fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    fleet.writeTask({ id: 't-awaiting', state: 'awaiting-human', sessionId: awaiting.sessionId });
    const busy = await fleet.spawnBackground({ mode: 'busy' });
    fleet.writeTask({ id: 't-busy', ...done(busy.sessionId) });
    const attached = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-attached', ...done(attached.sessionId) });
    const client = await fleet.attach(attached);
    const inbox = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-inbox', ...done(inbox.sessionId) });
    fleet.addInboxMessage(inbox);
    const grace = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-grace', ...done(grace.sessionId, { releasedAt: ago(MIN) }) });
    const noTranscript = await fleet.spawnBackground({ noTranscript: true });
    fleet.writeTask({ id: 't-notr', ...done(noTranscript.sessionId) });
    const untasked = await fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    const untaskedYoung = await fleet.spawnBackground({ transcriptAgeMs: H });
    const interactive = await fleet.spawnInteractive({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't-inter', ...done(interactive.sessionId) });
    const record = fleet.addRecord();
    fleet.writeTask({ id: 't-record', ...done(record.sessionId) });
    fleet.writeTaskRaw('t-broken.json', `{ "id": "t-broken", "sessionId": "${untaskedYoung.sessionId}", oops`);

    const { code, json, stderr } = await verdictJson();
    await client.close();
    expect(code).toBe(0);
    expect(stderr).toMatch(/t-broken\.json is invalid/);
    const by = (a: { id: string }) => json.sessions.find((s: any) => s.id === a.id);
    expect(by(eligible)).toMatchObject({ verdict: 'eligible', reasons: [], next: { step: 'ask' }, taskId: 't-eligible', live: true });
    expect(by(eligible).rssBytes).toBeGreaterThan(1024 * 1024);
    expect(by(awaiting)).toMatchObject({ verdict: 'protected', reasons: ['task-not-terminal'], taskState: 'awaiting-human' });
    expect(by(busy).reasons).toEqual(expect.arrayContaining(['status-busy', 'transcript-recent']));
    expect(by(attached)).toMatchObject({ verdict: 'protected', reasons: ['client-attached'] });
    expect(by(inbox)).toMatchObject({ verdict: 'protected', reasons: ['inbox-pending'] });
    expect(by(grace)).toMatchObject({ verdict: 'protected', reasons: ['grace-pending'] });
    expect(by(noTranscript)).toMatchObject({ verdict: 'protected', reasons: ['transcript-unknown'] });
    expect(by(untasked)).toMatchObject({ verdict: 'eligible', next: { step: 'expire', n: 1 }, taskId: null });
    expect(by(untaskedYoung)).toMatchObject({ verdict: 'protected' });
    expect(by(untaskedYoung).reasons).toEqual(['task-invalid']); // named by a broken file: not untasked
    expect(by(interactive)).toMatchObject({ verdict: 'eligible', kind: 'interactive' });
    expect(by(interactive).evidence.pane.paneId).toBe(interactive.paneId);
    expect(by(record)).toMatchObject({ verdict: 'record', pid: null, live: false, rssBytes: null });
  });

  it('ID form: exit 0 when eligible, 3 otherwise; the roster failing exits 1 with its error', async () => {
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't1', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    const b = await fleet.spawnBackground({ mode: 'busy' });
    expect((await verdictJson([a.id])).code).toBe(0);
    expect((await verdictJson([a.sessionId])).code).toBe(0);
    expect((await verdictJson([b.id])).code).toBe(3);
    for (const fault of ['fail', 'garbage'] as const) {
      fleet.setRosterFault(fault);
      const r = await verdictJson();
      expect(r.code).toBe(1);
      expect(r.json.error).toMatch(/roster/);
      expect(r.json.sessions).toEqual([]);
    }
  });

  it('a roster that hangs times out: nothing eligible', async () => {
    await fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    fleet.setRosterFault('hang');
    const cfg = parseConfig(fleet.config({ probeTimeout: '300ms' }));
    const snap = await gatherFleet(cfg);
    expect(snap.roster.ok).toBe(false);
    expect(snap.sessions.filter((s) => s.verdict === 'eligible')).toEqual([]);
  });

  it('every probe failing → nothing eligible (tmux gone, projects and inbox unreadable)', async () => {
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't1', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    const i = await fleet.spawnInteractive({ transcriptAgeMs: H });
    fleet.writeTask({ id: 't2', state: 'done', sessionId: i.sessionId, releasedAt: ago(H) });
    // projects and inbox folders replaced by files: readdir fails with ENOTDIR, not ENOENT
    const cfg = parseConfig(fleet.config({ fleet: { projectsDir: fleet.claudeBin, inboxDir: fleet.claudeBin, tmuxSocket: '/nonexistent/dir/sock' } }));
    const snap = await gatherFleet(cfg);
    for (const s of snap.sessions) expect(s.verdict).toBe('protected');
    const ra = snap.sessions.find((s) => s.id === a.id)!;
    expect(ra.reasons).toEqual(expect.arrayContaining(['probe-failed', 'transcript-unknown', 'inbox-unknown']));
  });
});

describe('session-exit on real agents', () => {
  it('a background agent leaves by `claude stop`, transcript flushed, no signal', async () => {
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    const cfg = parseConfig(fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit({ id: a.id, sessionId: a.sessionId, kind: 'background', pid: a.pid, startedAt: fleet.row(a)!.startedAt }, cfg);
    expect(out).toMatchObject({ method: 'claude-stop', called: true, exited: true });
    const [end] = fleet.ended(a);
    expect(end.how).toBe('stop');
    expect(end.transcriptBytesAfter).toBeGreaterThan(end.transcriptBytesBefore);
    expect(fleet.row(a)!.pid).toBeNull(); // now a record, resumable
  });

  it('an interactive agent leaves by /exit typed into its pane', async () => {
    const a = await fleet.spawnInteractive({ transcriptAgeMs: H });
    const cfg = parseConfig(fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit({ id: a.id, sessionId: a.sessionId, kind: 'interactive', pid: a.pid, startedAt: fleet.row(a)!.startedAt, paneId: a.paneId }, cfg);
    expect(out).toMatchObject({ method: 'typed-exit', called: true, exited: true });
    expect(fleet.ended(a)[0].how).toBe('exit-typed');
  });

  it('an interactive session that /exit sends to the background is finished with claude stop', async () => {
    const a = await fleet.spawnInteractive({ transcriptAgeMs: H, bgOnExit: true });
    const cfg = parseConfig(fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit({ id: a.id, sessionId: a.sessionId, kind: 'interactive', pid: a.pid, startedAt: fleet.row(a)!.startedAt, paneId: a.paneId }, cfg);
    expect(out).toMatchObject({ method: 'typed-exit+claude-stop', called: true, exited: true });
    expect(fleet.currentPid(a)).toBeNull();
    expect(fleet.ended(a).map((e) => e.how)).toEqual(expect.arrayContaining(['to-background', 'stop']));
  });

  it('a stubborn agent stays; sessionExit reports it honestly and does nothing stronger', async () => {
    const a = await fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    const cfg = parseConfig(fleet.config({ windows: { exitConfirm: '300ms' } }));
    const out = await sessionExit({ id: a.id, sessionId: a.sessionId, kind: 'background', pid: a.pid, startedAt: fleet.row(a)!.startedAt }, cfg);
    expect(out).toMatchObject({ called: true, exited: false });
    expect(fleet.isAlive(a)).toBe(true);
    expect(fleet.requests(a).length).toBe(1);
  });

  it('hostile ids never reach a program as an option or a shell', async () => {
    const cfg = parseConfig(fleet.config({ windows: { exitConfirm: '100ms' } }));
    for (const id of ['--all', '-rf', 'a\nb']) {
      const out = await sessionExit({ id, sessionId: 'x', kind: 'background', pid: 999999, startedAt: null }, cfg);
      expect(out).toMatchObject({ called: false, exited: false });
      expect(out.error).toMatch(/refused/);
    }
    const out = await sessionExit({ id: '$(touch /tmp/sunset-pwned); rm -rf /', sessionId: 'x', kind: 'background', pid: 999999, startedAt: null }, cfg);
    expect(out.called).toBe(true); // passed as one argv word to the stand-in, which finds no such agent
  });
});
