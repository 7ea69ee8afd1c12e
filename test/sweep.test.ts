// Integration: a real test fleet (real processes, a private tmux server), the real probes and the verdict.
// `sunset verdict --json` gives the verdict and reason codes DESIGN names for every kind of row.
import { realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { useFleet } from './support/use-fleet.js';
import { parseConfig } from '../src/config.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { fleetCache } from '../src/evidence/fleet-cache.js';
import { sessionExit } from '../src/pipeline/session-exit.js';
import { childCount } from '../src/run.js';

const H = 3_600_000;
const MIN = 60_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

const ctx = useFleet();

async function verdictJson(args: string[] = []) {
  const { code, stdout, stderr } = await runCli(['verdict', '--json', '--config', ctx.fleet.writeConfig(), ...args]);
  return { code, json: code === 0 || stdout ? JSON.parse(stdout) : null, stderr };
}

describe('sunset verdict --json on a test fleet', () => {
  it('gives every kind of row its verdict and reason codes', async () => {
    const done = (sessionId: string, extra: Record<string, unknown> = {}) => ({ state: 'done', sessionId, releasedAt: ago(H), ...extra });
    const eligible = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-eligible', ...done(eligible.sessionId) });
    const awaiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 't-awaiting', state: 'awaiting-human', sessionId: awaiting.sessionId });
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.writeTask({ id: 't-busy', ...done(busy.sessionId) });
    const attached = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-attached', ...done(attached.sessionId) });
    const client = await ctx.fleet.attach(attached);
    const inbox = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-inbox', ...done(inbox.sessionId) });
    ctx.fleet.addInboxMessage(inbox);
    const grace = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-grace', ...done(grace.sessionId, { releasedAt: ago(MIN) }) });
    const noTranscript = await ctx.fleet.spawnBackground({ noTranscript: true });
    ctx.fleet.writeTask({ id: 't-notr', ...done(noTranscript.sessionId) });
    const untasked = await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    const untaskedYoung = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const interactive = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-inter', ...done(interactive.sessionId) });
    const record = ctx.fleet.addRecord();
    ctx.fleet.writeTask({ id: 't-record', ...done(record.sessionId) });
    ctx.fleet.writeTaskRaw('t-broken.json', `{ "id": "t-broken", "sessionId": "${untaskedYoung.sessionId}", oops`);

    const { code, json, stderr } = await verdictJson();
    await client.close();
    expect(code).toBe(0);
    expect(stderr).toMatch(/t-broken\.json is invalid/);
    const by = (a: { sessionId: string }) => json.sessions.find((s: any) => s.sessionId === a.sessionId);
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
    expect(by(interactive)).toMatchObject({ verdict: 'eligible', kind: 'interactive', id: null, label: interactive.sessionId.slice(0, 8) });
    expect(by(interactive).evidence.pane.paneId).toBe(interactive.paneId);
    expect(by(record)).toMatchObject({ verdict: 'record', pid: null, live: false, rssBytes: null });
  });

  it("Claude Code's own evidence: a blocked job (and what it asks), work in flight, a pin, an agent view, a person attached by name", async () => {
    const done = (id: string, sessionId: string) => ctx.fleet.writeTask({ id, state: 'done', sessionId, releasedAt: ago(H) });
    const blocked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-blocked', blocked.sessionId);
    ctx.fleet.setJob(blocked, { state: 'blocked', tempo: 'blocked', needs: 'Which branch should I push to?' });
    const inFlight = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-inflight', inFlight.sessionId);
    ctx.fleet.setJob(inFlight, { inFlight: { tasks: 1, queued: 0 } });
    const pinned = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-pinned', pinned.sessionId);
    const noJob = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-nojob', noJob.sessionId);
    ctx.fleet.setJobRaw(noJob, '{ torn');
    const named = await ctx.fleet.spawnBackground({ transcriptAgeMs: H, name: 'refactor-auth' });
    done('t-named', named.sessionId);
    const prefixed = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-prefixed', prefixed.sessionId);
    const free = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    done('t-free', free.sessionId);
    const inter = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    done('t-inter', inter.sessionId);
    ctx.fleet.setPins([pinned.id]);
    const byName = await ctx.fleet.attach('refactor-auth');
    const byPrefix = await ctx.fleet.attach(prefixed.id.slice(0, 4));

    let { json } = await verdictJson();
    const by = (a: { sessionId: string }) => json.sessions.find((s: any) => s.sessionId === a.sessionId);
    expect(by(blocked)).toMatchObject({
      verdict: 'protected',
      reasons: ['job-blocked'],
      notes: ['it asks: Which branch should I push to?'],
    });
    expect(by(inFlight)).toMatchObject({ verdict: 'protected', reasons: ['job-in-flight'] });
    expect(by(pinned)).toMatchObject({ verdict: 'protected', reasons: ['pinned'] });
    expect(by(noJob)).toMatchObject({ verdict: 'protected', reasons: ['job-unknown'] });
    expect(by(named)).toMatchObject({ verdict: 'protected', reasons: ['client-attached'], name: 'refactor-auth' });
    expect(by(prefixed)).toMatchObject({ verdict: 'protected', reasons: ['client-attached'] });
    expect(by(free)).toMatchObject({ verdict: 'eligible' });
    await byName.close();
    await byPrefix.close();

    // an agent view can open any background session: all of them are attach-unknown while it is open
    const view = await ctx.fleet.agentView();
    ({ json } = await verdictJson());
    expect(json.agentViews).toBe(1);
    expect(by(free)).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    expect(by(free).notes[0]).toMatch(/agent view open/);
    expect(by(inter)).toMatchObject({ verdict: 'eligible' }); // an interactive session is not in the agent view
    const text = await runCli(['verdict', '--config', ctx.fleet.writeConfig()]);
    expect(text.stdout).toMatch(/a person has the agent view open/);
    await view.close();
    ({ json } = await verdictJson());
    expect(by(free)).toMatchObject({ verdict: 'eligible' });

    // a pins file that cannot be read: every background session is pins-unknown; interactive ones are not pinned by it
    ctx.fleet.setPinsRaw('not json');
    ({ json } = await verdictJson());
    expect(by(free).reasons).toEqual(['pins-unknown']);
    expect(by(inter)).toMatchObject({ verdict: 'eligible' });
  });

  it('an agent view narrowed by --cwd protects only the sessions under its folder, and says which view protects which', async () => {
    ctx.fleet.setPins([]);
    const work = join(ctx.fleet.root, 'work');
    const released = async (cwd: string) => {
      const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H, cwd });
      ctx.fleet.writeTask({ id: `t-view-${a.id}`, state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
      return a;
    };
    const inA = await released(join(work, 'view-a'));
    const below = await released(join(work, 'view-a', 'deep', 'er'));
    const sibling = await released(join(work, 'view-ab')); // a longer name, not below view-a
    const worktree = await released(join(work, 'repo', '.claude', 'worktrees', 'fix-1'));
    const dispatched = await released(join(work, 'elsewhere'));
    ctx.fleet.setJob(dispatched, { originCwd: join(work, 'view-a') }); // started from view-a (the CLI files it there)
    const inter = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H, cwd: join(work, 'view-a') });
    ctx.fleet.writeTask({ id: 't-view-inter', state: 'done', sessionId: inter.sessionId, releasedAt: ago(H) });
    symlinkSync(join(work, 'view-a'), join(work, 'view-link'));
    const ours = [inA, below, sibling, worktree, dispatched, inter];

    // relative to the view's own folder, through a symlink
    const narrowed = await ctx.fleet.agentView({ args: ['--cwd', 'view-link'], cwd: work });
    let { json } = await verdictJson();
    const by = (a: { sessionId: string }) => json.sessions.find((s: any) => s.sessionId === a.sessionId);
    const folderA = realpathSync(join(work, 'view-a'));
    expect(json.agentViews).toBe(1);
    expect(json.agentViewsOpen).toEqual([{ pid: narrowed.pid, cwd: folderA }]);
    for (const a of [inA, below, dispatched]) {
      expect(by(a)).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
      expect(by(a).evidence).toMatchObject({ agentViews: 1, agentViewsListing: [{ pid: narrowed.pid, cwd: folderA }] });
      expect(by(a).notes).toEqual([
        `a person has the agent view open (claude agents --cwd ${folderA}, pid ${narrowed.pid}): it lists this session, which may be on their screen`,
      ]);
    }
    for (const a of [sibling, worktree, inter]) {
      expect(by(a)).toMatchObject({ verdict: 'eligible' });
      expect(by(a).evidence.agentViewsListing).toBeUndefined();
    }
    const text = await runCli(['verdict', '--config', ctx.fleet.writeConfig()]);
    expect(text.stdout).toContain(
      `a person has the agent view open on ${folderA} (claude agents --cwd, pid ${narrowed.pid}): the background sessions under it`,
    );
    const report = await runCli(['report', '--config', ctx.fleet.writeConfig()]);
    expect(report.stdout).toContain(`agent view open on ${folderA}`);

    // a second view on the repository: a worktree's session is filed under it
    const onRepo = await ctx.fleet.agentView({ args: [`--cwd=${join(work, 'repo')}`] });
    ({ json } = await verdictJson());
    expect(json.agentViews).toBe(2);
    expect(by(worktree)).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    expect(by(worktree).evidence.agentViewsListing).toEqual([{ pid: onRepo.pid, cwd: realpathSync(join(work, 'repo')) }]);
    expect(by(sibling).verdict).toBe('eligible');
    await narrowed.close();
    ({ json } = await verdictJson());
    expect(by(inA).verdict).toBe('eligible');
    expect(by(worktree).verdict).toBe('protected');

    // one that lists everything protects every background session again
    const all = await ctx.fleet.agentView();
    ({ json } = await verdictJson());
    for (const a of [inA, below, sibling, dispatched]) expect(by(a).evidence.agentViewsListing).toEqual([{ pid: all.pid, cwd: null }]);
    expect(by(worktree).evidence.agentViews).toBe(2);
    expect(by(inter).verdict).toBe('eligible');
    await onRepo.close();
    await all.close();
    ({ json } = await verdictJson());
    for (const a of ours) expect(by(a).verdict).toBe('eligible');
  });

  it('takes a short id, a sessionId, a unique prefix of either or a name; an ambiguous one exits 2 listing the matches', async () => {
    const a = await ctx.fleet.spawnBackground({ id: 'abcd1111', transcriptAgeMs: H, name: 'alpha' });
    ctx.fleet.writeTask({ id: 't1', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    await ctx.fleet.spawnBackground({ id: 'abcd2222', mode: 'busy' });
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't2', state: 'done', sessionId: i.sessionId, releasedAt: ago(H) });
    for (const q of ['abcd1111', 'abcd1', a.sessionId, a.sessionId.slice(0, 6), 'alpha']) {
      const r = await verdictJson([q]);
      expect(r.code, q).toBe(0);
      expect(r.json.sessions.map((s: any) => s.sessionId)).toEqual([a.sessionId]);
    }
    // the interactive session: no short id, so its sessionId or a prefix of it
    expect((await verdictJson([i.sessionId])).code).toBe(0);
    expect((await verdictJson([i.sessionId.slice(0, 8)])).code).toBe(0);
    const amb = await verdictJson(['abcd']);
    expect(amb.code).toBe(2);
    expect(amb.stderr).toMatch(/names 2 sessions/);
    expect(amb.stderr).toMatch(/abcd1111/);
    expect(amb.stderr).toMatch(/abcd2222/);
    expect((await verdictJson(['nope'])).code).toBe(3);
  });

  it('ID form: exit 0 when eligible, 3 otherwise; the roster failing exits 1 with its error', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't1', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    const b = await ctx.fleet.spawnBackground({ mode: 'busy' });
    expect((await verdictJson([a.id])).code).toBe(0);
    expect((await verdictJson([a.sessionId])).code).toBe(0);
    expect((await verdictJson([b.id])).code).toBe(3);
    for (const fault of ['fail', 'garbage'] as const) {
      ctx.fleet.setRosterFault(fault);
      const r = await verdictJson();
      expect(r.code).toBe(1);
      expect(r.json.error).toMatch(/roster/);
      expect(r.json.sessions).toEqual([]);
    }
  });

  it('a roster that hangs times out: nothing eligible', async () => {
    await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    ctx.fleet.setRosterFault('hang');
    const cfg = parseConfig(ctx.fleet.config({ probeTimeout: '300ms' }));
    const snap = await gatherFleet(cfg);
    expect(snap.roster.ok).toBe(false);
    expect(snap.sessions.filter((s) => s.verdict === 'eligible')).toEqual([]);
  });

  it("the schedule's sweep reads tmux only where a verdict could turn on it; a person's reads every pane", async () => {
    const active = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-active', state: 'active', sessionId: active.sessionId });
    const cfg = parseConfig(ctx.fleet.config());
    const calls = () => childCount();
    // the roster call is one child: everything past it is tmux
    let c0 = calls();
    const lazy = await gatherFleet(cfg, { tmux: 'if-needed' });
    const only = lazy.sessions.find((s) => s.sessionId === active.sessionId)!;
    expect(calls() - c0).toBe(1);
    expect(only).toMatchObject({ verdict: 'protected', reasons: ['task-not-terminal'] });
    expect(only.evidence.tmux).toBe('not-read');
    expect(only.evidence.pane).toBeUndefined();

    c0 = calls();
    const full = await gatherFleet(cfg, { tmux: 'all' });
    expect(calls() - c0).toBeGreaterThan(1);
    const seen = full.sessions.find((s) => s.sessionId === active.sessionId)!;
    expect(seen.evidence.tmux).toBeUndefined();
    expect(seen.evidence.pane?.paneId).toBe(active.paneId);

    // a person attaches in tmux: the schedule still needs no tmux (the open task holds it for good) ...
    const client = await ctx.fleet.attachTmux(active);
    try {
      expect((await gatherFleet(cfg, { tmux: 'if-needed' })).sessions.find((s) => s.sessionId === active.sessionId)!.reasons).toEqual([
        'task-not-terminal',
      ]);
      expect((await gatherFleet(cfg)).sessions.find((s) => s.sessionId === active.sessionId)!.reasons).toEqual(
        expect.arrayContaining(['task-not-terminal', 'client-attached']),
      );
      // ... until the task is done: then the verdict could turn on tmux, and it is read (the person attached protects)
      ctx.fleet.writeTask({ id: 't-active', state: 'done', sessionId: active.sessionId, releasedAt: ago(H) });
      const done = (await gatherFleet(cfg, { tmux: 'if-needed' })).sessions.find((s) => s.sessionId === active.sessionId)!;
      expect(done.evidence.tmux).toBeUndefined();
      expect(done).toMatchObject({ verdict: 'protected', reasons: ['client-attached'] });
    } finally {
      await client.close();
    }
    const after = (await gatherFleet(cfg, { tmux: 'if-needed' })).sessions.find((s) => s.sessionId === active.sessionId)!;
    expect(after).toMatchObject({ verdict: 'eligible', next: { step: 'ask' } });
    expect(after.evidence.pane?.paneId).toBe(active.paneId);
  });

  it('every probe failing → nothing eligible (tmux gone, projects and inbox unreadable)', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't1', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't2', state: 'done', sessionId: i.sessionId, releasedAt: ago(H) });
    // projects and inbox folders replaced by files: readdir fails with ENOTDIR, not ENOENT
    const cfg = parseConfig(
      ctx.fleet.config({ fleet: { projectsDir: ctx.fleet.claudeBin, inboxDir: ctx.fleet.claudeBin, tmuxSocket: '/nonexistent/dir/sock' } }),
    );
    const snap = await gatherFleet(cfg);
    for (const s of snap.sessions) expect(s.verdict).toBe('protected');
    const ra = snap.sessions.find((s) => s.id === a.id)!;
    expect(ra.reasons).toEqual(expect.arrayContaining(['probe-failed', 'transcript-unknown', 'inbox-unknown']));
  });
});

describe('session-exit on real agents', () => {
  it('a background agent leaves by `claude stop`, transcript flushed, no signal', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit(
      { id: a.id, sessionId: a.sessionId, kind: 'background', pid: a.pid, startedAt: ctx.fleet.row(a)!.startedAt },
      cfg,
    );
    expect(out).toMatchObject({ method: 'claude-stop', called: true, exited: true });
    const [end] = ctx.fleet.ended(a);
    expect(end.how).toBe('stop');
    expect(end.transcriptBytesAfter).toBeGreaterThan(end.transcriptBytesBefore);
    expect(ctx.fleet.row(a)!.pid).toBeNull(); // now a record, resumable
  });

  it('an interactive agent leaves by /exit typed into its pane', async () => {
    const a = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit(
      { id: a.id, sessionId: a.sessionId, kind: 'interactive', pid: a.pid, startedAt: ctx.fleet.row(a)!.startedAt, paneId: a.paneId },
      cfg,
    );
    expect(out).toMatchObject({ method: 'typed-exit', called: true, exited: true });
    expect(ctx.fleet.ended(a)[0].how).toBe('exit-typed');
  });

  it('an interactive session that /exit sends to the background is finished with claude stop', async () => {
    const a = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H, bgOnExit: true });
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '10s' } }));
    const out = await sessionExit(
      { id: a.id, sessionId: a.sessionId, kind: 'interactive', pid: a.pid, startedAt: ctx.fleet.row(a)!.startedAt, paneId: a.paneId },
      cfg,
    );
    expect(out).toMatchObject({ method: 'typed-exit+claude-stop', called: true, exited: true });
    expect(ctx.fleet.currentPid(a)).toBeNull();
    expect(ctx.fleet.ended(a).map((e) => e.how)).toEqual(expect.arrayContaining(['to-background', 'stop']));
  });

  it("the exit worker's roster (shared sweeps on the CLI's word) finds the successor too", async () => {
    const a = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H, bgOnExit: true });
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '10s' } }));
    const source = fleetCache(cfg);
    const froms: string[] = [];
    const roster = async () => {
      const snap = await source(0, { roster: 'cli', tmux: 'if-needed' });
      froms.push(snap.rosterFrom);
      return snap.roster.ok ? { ok: true as const, rows: snap.sessions.map((v) => v.row), problems: [] } : snap.roster;
    };
    const out = await sessionExit(
      { id: a.id, sessionId: a.sessionId, kind: 'interactive', pid: a.pid, startedAt: ctx.fleet.row(a)!.startedAt, paneId: a.paneId },
      cfg,
      { roster },
    );
    expect(out).toMatchObject({ method: 'typed-exit+claude-stop', called: true, exited: true });
    expect(froms.length).toBeGreaterThan(0);
    expect(froms.every((f) => f === 'cli')).toBe(true);
    expect(ctx.fleet.currentPid(a)).toBeNull();
    expect(ctx.fleet.ended(a).map((e) => e.how)).toEqual(expect.arrayContaining(['to-background', 'stop']));
  });

  it('a stubborn agent stays; sessionExit reports it honestly and does nothing stronger', async () => {
    const a = await ctx.fleet.spawnBackground({ mode: 'stubborn', transcriptAgeMs: H });
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '300ms' } }));
    const out = await sessionExit(
      { id: a.id, sessionId: a.sessionId, kind: 'background', pid: a.pid, startedAt: ctx.fleet.row(a)!.startedAt },
      cfg,
    );
    expect(out).toMatchObject({ called: true, exited: false });
    expect(ctx.fleet.isAlive(a)).toBe(true);
    expect(ctx.fleet.requests(a).length).toBe(1);
  });

  it('hostile ids never reach a program as an option or a shell', async () => {
    const cfg = parseConfig(ctx.fleet.config({ windows: { exitConfirm: '100ms' } }));
    for (const id of ['--all', '-rf', 'a\nb']) {
      const out = await sessionExit({ id, sessionId: 'x', kind: 'background', pid: 999999, startedAt: null }, cfg);
      expect(out).toMatchObject({ called: false, exited: false });
      expect(out.error).toMatch(/refused/);
    }
    const out = await sessionExit(
      { id: '$(touch /tmp/sunset-pwned); rm -rf /', sessionId: 'x', kind: 'background', pid: 999999, startedAt: null },
      cfg,
    );
    expect(out.called).toBe(true); // passed as one argv word to the stand-in, which finds no such agent
  });
});
