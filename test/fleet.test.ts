// Tests of the test fleet itself: real processes, a real private tmux server, no mocks.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TestFleet, pidAlive, waitFor, type Agent } from '../sim/fleet/fleet.js';

let fleet: TestFleet | undefined;
const make = async (): Promise<TestFleet> => (fleet = await TestFleet.create());

afterEach(async () => {
  if (fleet) {
    const f = fleet;
    fleet = undefined;
    await f.destroy();
  }
});

function cmdlineOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

function lastLine(a: Agent): Record<string, any> {
  const lines = readFileSync(a.transcriptPath, 'utf8').trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as Record<string, any>;
}

describe('test fleet: layout and roster', () => {
  it('creates the temp root, an executable bin/claude and a config pointing at it', async () => {
    const f = await make();
    expect(basename(f.root)).toMatch(/^sunset-fleet-/);
    for (const d of [f.registryDir, f.tasksDir, f.inboxDir, f.projectsDir]) expect(existsSync(d)).toBe(true);
    expect(basename(f.claudeBin)).toBe('claude');
    expect(statSync(f.claudeBin).mode & 0o111).not.toBe(0);
    expect(readFileSync(f.claudeBin, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
    expect(f.tmuxSocket).toMatch(/^sunset-test-[0-9a-f]+$/);
    const c = f.config({ windows: { grace: '1s' }, fleet: { askVia: 'pane' } });
    expect(c.fleet.rosterCommand).toEqual([f.claudeBin, 'agents', '--json', '--all']);
    expect(c.fleet.claudeCommand).toBe(f.claudeBin);
    expect(c.fleet.tmuxSocket).toBe(f.tmuxSocket);
    expect(c.fleet.attachArgv).toEqual(['claude', 'attach']);
    expect(c.fleet.askVia).toBe('pane');
    expect(c.fleet.tasksDir).toBe(f.tasksDir);
    expect(c.windows.grace).toBe('1s');
    expect(c.stateDir).toBe(`${f.root}/state`);
  });

  it('lists live rows with pids, records without, status overrides and extra fields — in the real CLI shapes', async () => {
    const f = await make();
    const bg = await f.spawnBackground({ mode: 'busy', name: 'fix-login' });
    const it1 = await f.spawnInteractive({ mode: 'waiting' });
    const idle = await f.spawnBackground({ mode: 'stubborn', extra: { attached: true } });
    const rec = f.addRecord();
    f.addRecords(50);
    expect(bg.id).toMatch(/^[0-9a-f]{8}$/);
    expect(bg.sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    // the real CLI path, as sunset runs it: argv, no shell
    const out = execFileSync(f.rosterCommand[0]!, f.rosterCommand.slice(1), { encoding: 'utf8' });
    const rows = JSON.parse(out) as Array<Record<string, any>>;
    expect(rows).toHaveLength(54);
    const byId = new Map(rows.map((r) => [r.sessionId, r]));
    expect(byId.get(bg.sessionId)).toMatchObject({
      id: bg.id,
      kind: 'background',
      pid: bg.pid,
      state: 'working',
      status: 'busy',
      cwd: bg.cwd,
      name: 'fix-login',
    });
    expect(typeof byId.get(bg.sessionId)!.startedAt).toBe('number'); // epoch ms, as the real CLI prints it
    expect(byId.get(bg.sessionId)!.startedAt).toBeGreaterThan(Date.now() - 60_000);
    // an interactive row carries no id and no state (the real CLI's shape)
    expect(byId.get(it1.sessionId)).toMatchObject({ kind: 'interactive', pid: it1.pid, status: 'waiting' });
    expect('id' in byId.get(it1.sessionId)!).toBe(false);
    expect('state' in byId.get(it1.sessionId)!).toBe(false);
    expect(byId.get(idle.sessionId)).toMatchObject({ status: 'idle', attached: true });
    // a record keeps no pid and no status
    expect(byId.get(rec.sessionId)).toMatchObject({ id: rec.id, state: 'stopped', kind: 'background' });
    expect('pid' in byId.get(rec.sessionId)!).toBe(false);
    expect('status' in byId.get(rec.sessionId)!).toBe(false);
    expect(rows.filter((r) => typeof r.pid !== 'number')).toHaveLength(51);

    f.setStatus(bg, 'idle');
    f.setRowField(it1, 'clients', 2);
    const rows2 = await f.roster();
    expect(rows2.find((r) => r.id === bg.id)!.status).toBe('idle');
    expect(rows2.find((r) => r.sessionId === it1.sessionId)!.clients).toBe(2);
    // a background row's state is its job's (Claude Code's jobs/<id>/state.json)
    f.setJob(bg, { state: 'blocked', needs: 'which branch?' });
    expect((await f.roster()).find((r) => r.id === bg.id)!.state).toBe('blocked');

    // without --all only rows with a live pid
    const live = JSON.parse((await f.claude(['agents', '--json'])).stdout) as unknown[];
    expect(live).toHaveLength(3);

    // transcript at projects/<slug of cwd>/<sessionId>.jsonl; busy ones keep writing (until set idle)
    expect(bg.transcriptPath).toBe(`${f.projectsDir}/${bg.cwd.replace(/\//g, '-')}/${bg.sessionId}.jsonl`);
    f.setStatus(bg, 'busy');
    const size0 = f.transcriptSize(bg)!;
    expect(await waitFor(() => f.transcriptSize(bg)! > size0, 3000)).toBe(true);
    const quiet = f.transcriptSize(idle)!;
    expect(quiet).toBeGreaterThan(0);
  });

  it('ages and deletes transcripts, writes inbox messages and task files', async () => {
    const f = await make();
    const a = await f.spawnBackground({ transcriptAgeMs: 3_600_000 });
    expect(Date.now() - statSync(a.transcriptPath).mtimeMs).toBeGreaterThan(3_500_000);
    const none = await f.spawnBackground({ noTranscript: true });
    expect(existsSync(none.transcriptPath)).toBe(false);
    f.deleteTranscript(a);
    expect(existsSync(a.transcriptPath)).toBe(false);

    const m = f.addInboxMessage(a);
    expect(m.startsWith(`${f.inboxDir}/${a.sessionId}/`)).toBe(true);
    expect(f.inboxFiles(a)).toHaveLength(1);

    const t = f.writeTask({ id: 'task-1', state: 'done', sessionId: a.sessionId, custom: { keep: 1 } });
    expect(t).toBe(`${f.tasksDir}/task-1.json`);
    expect(readFileSync(t, 'utf8')).toContain('\n  "state": "done"');
    expect(f.readTask('task-1').custom).toEqual({ keep: 1 });
    const raw = f.writeTaskRaw('broken.json', '{ not json');
    expect(readFileSync(raw, 'utf8')).toBe('{ not json');
    expect(() => f.writeTaskRaw('../x.json', '{}')).toThrow();
  });

  it('spawnLight and addRecords build a big roster cheaply', async () => {
    const f = await make();
    const light = await f.spawnLight(20, { transcriptAgeMs: 7_200_000 });
    f.addRecords(500);
    const rows = await f.roster();
    expect(rows).toHaveLength(520);
    for (const a of light) {
      expect(pidAlive(a.pid)).toBe(true);
      expect(Date.now() - statSync(a.transcriptPath).mtimeMs).toBeGreaterThan(7_000_000);
    }
    const row = rows.find((r) => r.id === light[0]!.id)!;
    expect(row).toMatchObject({ pid: light[0]!.pid, kind: 'background', status: 'idle', state: 'working' });
    expect(Object.keys(row).some((k) => k.startsWith('_'))).toBe(false);
    // stop on a light one returns at once (it cannot answer)
    const t0 = Date.now();
    expect((await f.stop(light[0]!)).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(f.unexplainedDeaths()).toEqual([]);
  });
});

describe('test fleet: exit paths', () => {
  it('claude stop makes an idle background agent leave, transcript flushed; its row becomes a record', async () => {
    const f = await make();
    const a = await f.spawnBackground({ mode: 'idle' });
    const r = await f.stop(a);
    expect(r.code).toBe(0);
    expect(await f.waitForExit(a, 5000)).toBe(true);
    const [e] = f.ended(a);
    expect(e).toMatchObject({ how: 'stop', pid: a.pid });
    expect(e!.transcriptBytesAfter).toBeGreaterThan(e!.transcriptBytesBefore);
    expect(lastLine(a).type).toBe('exit-flush');
    expect(f.requests(a).map((q) => q.how)).toEqual(['stop']);
    const row = (await f.roster()).find((x) => x.id === a.id)!;
    expect(row).toMatchObject({ state: 'stopped' });
    expect('pid' in row).toBe(false);
    expect(f.job(a)!.state).toBe('stopped');
    expect(existsSync(`${f.registryDir}/stop/${a.id}`)).toBe(false);
    expect(f.unexplainedDeaths()).toEqual([]);
    expect(f.signals()).toEqual([]);

    // a second stop: the real CLI gives the same answer for a session already stopped
    const again = await f.stop(a);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/stopped/);
  });

  it('a busy background agent also leaves on stop', async () => {
    const f = await make();
    const a = await f.spawnBackground({ mode: 'busy' });
    expect((await f.stop(a)).code).toBe(0);
    expect(await f.waitForExit(a, 5000)).toBe(true);
    expect(f.ended(a)[0]!.how).toBe('stop');
  });

  it('a stubborn background agent acknowledges stop and stays', async () => {
    const f = await make();
    const a = await f.spawnBackground({ mode: 'stubborn' });
    const t0 = Date.now();
    const r = await f.stop(a);
    expect(r.code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2500); // acknowledged, not timed out
    expect(f.isAlive(a)).toBe(true);
    expect(f.ended(a)).toEqual([]);
    expect(f.requests(a)).toHaveLength(1);
    expect(lastLine(a).type).toBe('ignored-stop');
    expect(existsSync(`${f.registryDir}/stop/${a.id}`)).toBe(false);
    expect((await f.stop(a)).code).toBe(0);
    expect(f.requests(a)).toHaveLength(2);
    expect(f.isAlive(a)).toBe(true);
    expect((await f.roster()).find((x) => x.id === a.id)!.pid).toBe(a.pid);
  });

  it('claude stop answers records as stopped, refuses unknown ids, interactive sessions and unsafe ids; takes a prefix', async () => {
    const f = await make();
    const rec = f.addRecord();
    const [bulk] = f.addRecords(3);
    expect((await f.stop(rec.id)).code).toBe(0);
    expect((await f.claude(['stop', bulk!.id])).code).toBe(0);
    expect((await f.claude(['stop', 'deadbeef'])).stderr).toMatch(/No session matching 'deadbeef'/);
    const i = await f.spawnInteractive();
    expect((await f.claude(['stop', i.id])).code).toBe(1); // an interactive session leaves only through its pane
    expect((await f.claude(['stop', i.sessionId])).code).toBe(1);
    const b = await f.spawnBackground();
    expect((await f.claude(['stop', b.id.slice(0, 5)])).code).toBe(0);
    expect(await f.waitForExit(b, 5000)).toBe(true);
    for (const bad of ['../x', 'a/b', '..']) expect((await f.claude(['stop', bad])).code).toBe(2);
    expect((await f.claude(['stop'])).code).toBe(2);
    expect((await f.claude(['frobnicate'])).code).toBe(2);
  });

  it('typing /exit + Enter into the pane makes an interactive agent leave', async () => {
    const f = await make();
    const a = await f.spawnInteractive({ mode: 'idle' });
    expect(a.paneId).toMatch(/^%\d+$/);
    expect(f.tmux(['display-message', '-p', '-t', a.paneId!, '#{pane_pid}']).trim()).toBe(String(a.pid));
    f.tmux(['send-keys', '-t', a.paneId!, '-l', 'hello there']);
    f.tmux(['send-keys', '-t', a.paneId!, 'Enter']);
    expect(await waitFor(() => f.typed(a).length === 1, 3000)).toBe(true);
    expect(f.isAlive(a)).toBe(true);
    f.tmux(['send-keys', '-t', a.paneId!, '-l', '/exit']);
    f.tmux(['send-keys', '-t', a.paneId!, 'Enter']);
    expect(await f.waitForExit(a, 5000)).toBe(true);
    expect(f.typed(a).map((t) => t.line)).toEqual(['hello there', '/exit']);
    expect(f.requests(a).map((q) => q.how)).toEqual(['exit-typed']);
    const [e] = f.ended(a);
    expect(e).toMatchObject({ how: 'exit-typed', pid: a.pid });
    expect(e!.transcriptBytesAfter).toBeGreaterThan(e!.transcriptBytesBefore);
    // an interactive session that has ended is not listed at all (the real CLI keeps no record of it)
    expect((await f.roster()).find((x) => x.sessionId === a.sessionId)).toBeUndefined();
    expect(f.unexplainedDeaths()).toEqual([]);
    expect(f.signals()).toEqual([]);
  });

  it('remainOnExit keeps a dead pane for reap to find', async () => {
    const f = await make();
    const a = await f.spawnInteractive({ remainOnExit: true });
    f.typeInto(a, '/exit');
    expect(await f.waitForExit(a, 5000)).toBe(true);
    expect(await waitFor(() => f.tmux(['display-message', '-p', '-t', a.paneId!, '#{pane_dead}']).trim() === '1', 3000)).toBe(true);
    expect(f.tmux(['list-panes', '-a', '-F', '#{pane_id} #{pane_dead}'])).toContain(`${a.paneId} 1`);
  });

  it('a stubborn interactive agent ignores /exit', async () => {
    const f = await make();
    const a = await f.spawnInteractive({ mode: 'stubborn' });
    f.typeInto(a, '/exit');
    expect(await waitFor(() => f.requests(a).length === 1, 3000)).toBe(true);
    expect(f.requests(a)[0]!.how).toBe('exit-typed');
    expect(await f.waitForExit(a, 500)).toBe(false);
    expect(f.ended(a)).toEqual([]);
  });

  it('bg-on-exit: /exit turns the session into a background row with a new pid, which claude stop ends', async () => {
    const f = await make();
    const a = await f.spawnInteractive({ mode: 'idle', bgOnExit: true });
    f.typeInto(a, '/exit');
    expect(await f.waitForExit(a, 6000)).toBe(true);
    const row = (await f.roster()).find((x) => x.id === a.id)!;
    expect(row).toMatchObject({ kind: 'background', sessionId: a.sessionId, state: 'working' });
    expect(row.pid).not.toBe(a.pid);
    const succ = row.pid as number;
    expect(pidAlive(succ)).toBe(true);
    expect(f.currentPid(a)).toBe(succ);
    expect(f.ended(a).map((e) => [e.how, e.pid])).toEqual([['to-background', a.pid]]);
    expect(f.unexplainedDeaths()).toEqual([]);

    expect((await f.stop(a)).code).toBe(0);
    expect(await f.waitForExit(succ, 5000)).toBe(true);
    expect(f.ended(a).map((e) => [e.how, e.pid])).toEqual([
      ['to-background', a.pid],
      ['stop', succ],
    ]);
    expect((await f.roster()).find((x) => x.id === a.id)!.pid).toBeUndefined();
    expect(f.unexplainedDeaths()).toEqual([]);
  });
});

describe('test fleet: attach, faults, signals, teardown', () => {
  it('attach runs a process whose argv is claude (basename) attach <id>', async () => {
    const f = await make();
    const a = await f.spawnBackground();
    const att = await f.attach(a);
    const argv = cmdlineOf(att.pid);
    const i = argv.findIndex((w) => basename(w) === 'claude');
    expect(i).toBeGreaterThanOrEqual(0);
    expect(argv.slice(i + 1)).toEqual(['attach', a.id]);
    expect(pidAlive(att.pid)).toBe(true);
    await att.close();
    expect(pidAlive(att.pid)).toBe(false);
    expect(f.isAlive(a)).toBe(true);
    expect(f.signals()).toEqual([]);
  });

  it.runIf(TestFleet.canAttachTmux())('attachTmux attaches a real tmux client to an interactive session', async () => {
    const f = await make();
    const a = await f.spawnInteractive();
    expect(f.clientsOf(a.tmuxSession!)).toBe(0);
    const c = await f.attachTmux(a);
    expect(f.clientsOf(a.tmuxSession!)).toBe(1);
    expect(f.tmux(['list-panes', '-a', '-F', '#{pane_id} #{session_attached}'])).toContain(`${a.paneId} 1`);
    await c.close();
    expect(f.clientsOf(a.tmuxSession!)).toBe(0);
    expect(f.isAlive(a)).toBe(true);
    expect(f.signals()).toEqual([]); // SIGWINCH from the resize is not counted
  });

  it('roster faults: fail, hang, garbage', async () => {
    const f = await make();
    await f.spawnBackground();
    f.setRosterFault('fail');
    const failed = await f.claude(['agents', '--json', '--all']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).not.toBe('');

    f.setRosterFault('garbage');
    const garbage = await f.claude(['agents', '--json', '--all']);
    expect(garbage.code).toBe(0);
    expect(() => JSON.parse(garbage.stdout)).toThrow();

    f.setRosterFault('hang');
    const child = spawn(f.claudeBin, ['agents', '--json', '--all'], { stdio: 'ignore' });
    let exited = false;
    child.on('exit', () => (exited = true));
    expect(await waitFor(() => exited, 800)).toBe(false);
    child.kill('SIGKILL'); // our own probe child past its timeout
    expect(await waitFor(() => exited, 3000)).toBe(true);

    f.setRosterFault(null);
    expect(await f.roster()).toHaveLength(1);
  });

  it('agents record every signal and do not leave on it; unexplainedDeaths reports a killed one', async () => {
    const f = await make();
    const bg = await f.spawnBackground();
    const it1 = await f.spawnInteractive();
    process.kill(bg.pid, 'SIGUSR1');
    process.kill(bg.pid, 'SIGTERM');
    process.kill(it1.pid, 'SIGINT');
    process.kill(it1.pid, 'SIGHUP');
    expect(await waitFor(() => f.signals().length === 4, 3000)).toBe(true);
    const got = f
      .signals()
      .map((s) => `${s.id}:${s.pid}:${s.signal}`)
      .sort();
    expect(got).toEqual(
      [`${bg.id}:${bg.pid}:SIGTERM`, `${bg.id}:${bg.pid}:SIGUSR1`, `${it1.id}:${it1.pid}:SIGHUP`, `${it1.id}:${it1.pid}:SIGINT`].sort(),
    );
    expect(f.isAlive(bg)).toBe(true);
    expect(f.isAlive(it1)).toBe(true);
    expect(f.unexplainedDeaths()).toEqual([]);

    process.kill(bg.pid, 'SIGKILL');
    expect(await f.waitForExit(bg, 3000)).toBe(true);
    expect(f.unexplainedDeaths().map((a) => [a.id, a.pid])).toEqual([[bg.id, bg.pid]]);
    expect((await f.roster()).find((x) => x.id === bg.id)!.pid).toBeUndefined();
  });

  it('destroy leaves no processes, no tmux server, no root; it is idempotent', async () => {
    const f = await make();
    const pids: number[] = [];
    pids.push((await f.spawnBackground({ mode: 'busy' })).pid);
    pids.push((await f.spawnBackground({ mode: 'stubborn' })).pid);
    const i1 = await f.spawnInteractive();
    pids.push(i1.pid);
    const i2 = await f.spawnInteractive({ bgOnExit: true });
    f.typeInto(i2, '/exit');
    expect(await f.waitForExit(i2, 6000)).toBe(true);
    pids.push(f.currentPid(i2)!);
    pids.push(...(await f.spawnLight(3)).map((a) => a.pid));
    pids.push((await f.attach(i1)).pid);
    if (TestFleet.canAttachTmux()) pids.push((await f.attachTmux(i1)).pid);
    f.setRosterFault('hang');
    const hung = spawn(f.claudeBin, ['agents', '--json', '--all'], { stdio: 'ignore', detached: true });
    hung.unref();
    pids.push(hung.pid!);
    expect(await waitFor(() => f.processes().includes(hung.pid!), 3000)).toBe(true);
    expect(f.tmuxServerRunning()).toBe(true);
    expect(pids.every((p) => pidAlive(p))).toBe(true);

    await f.destroy();
    await f.destroy();
    expect(pids.filter((p) => pidAlive(p))).toEqual([]);
    expect(f.processes()).toEqual([]);
    expect(f.tmuxServerRunning()).toBe(false);
    expect(existsSync(f.root)).toBe(false);
    await expect(f.spawnBackground()).rejects.toThrow(/destroyed/);
  });

  it('agents leave on their own when the fleet root disappears (no leaks after a crash)', async () => {
    const f = await make();
    const a = await f.spawnBackground();
    const b = await f.spawnInteractive();
    const att = await f.attach(a);
    execFileSync('rm', ['-rf', f.root]);
    expect(await f.waitForExit(a, 4000)).toBe(true);
    expect(await f.waitForExit(b, 4000)).toBe(true);
    expect(await waitFor(() => !pidAlive(att.pid), 4000)).toBe(true);
  });
});
