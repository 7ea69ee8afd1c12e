// The resume ledger: what sunset exited comes back on demand, through the cap.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../sim/fleet/fleet.js';
import { CLI, runCli } from './support/cli.js';
import { startTestSunset, testConfig, FAST_WINDOWS, uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { findExited, resumeArgv, resumeEntries, resumeLines } from '../src/report/resume.js';
import { parseConfig } from '../src/config.js';

const H = 3_600_000;

describe('resume entries (pure)', () => {
  const cfg = parseConfig({}, { env: {} });
  it('lists exited sessions newest first with their resume command, and gave-up ones without', () => {
    const e = resumeEntries(
      cfg,
      [
        {
          jobId: 'exit/t1/s1/1',
          reason: 'request',
          taskId: 't1',
          sessionId: 's1',
          id: 'a1',
          kind: 'background',
          cwd: '/w/1',
          n: 1,
          outcome: 'exited',
          finishedAt: '2026-11-30T01:00:00Z',
          rssBytes: 400e6,
        },
        {
          jobId: 'person/s2/1',
          reason: 'person',
          sessionId: 's2',
          id: 'a2',
          kind: 'interactive',
          cwd: '/w/2',
          outcome: 'exited',
          finishedAt: '2026-11-30T02:00:00Z',
          by: 'gera',
          why: 'memory',
        } as any,
        {
          jobId: 'exit/t3/s3/1',
          reason: 'request',
          taskId: 't3',
          sessionId: 's3',
          outcome: 'still-running',
          finishedAt: '2026-11-30T03:00:00Z',
        },
      ],
      [
        {
          kind: 'session-will-not-exit',
          key: 'task/t4',
          at: '2026-11-30T04:00:00Z',
          host: 'h',
          taskId: 't4',
          sessionId: 's4',
          message: 'will not exit',
        },
      ],
    );
    expect(e.map((x) => [x.outcome, x.sessionId])).toEqual([
      ['gave-up', 's4'],
      ['exited', 's2'],
      ['exited', 's1'],
    ]);
    expect(e[2]).toMatchObject({
      resume: ['claude', '--resume', 's1'],
      cwd: '/w/1',
      rssFreedBytes: 400e6,
      why: 'task t1 finished (request 1 of 3)',
    });
    expect(e[1].why).toMatch(/gera: memory/);
    expect(findExited(e, 't1')?.sessionId).toBe('s1');
    expect(findExited(e, 'a2')?.sessionId).toBe('s2');
    expect(findExited(e, 's4')).toBeNull(); // gave up: still running, nothing to resume
    expect(resumeArgv(cfg, e[1], false).argv).toEqual([
      'tmux',
      '-u',
      'new-session',
      '-d',
      '-s',
      'sunset-resume-a2',
      '-c',
      '/w/2',
      '--',
      'claude',
      '--resume',
      's2',
    ]);
    expect(resumeArgv(cfg, e[1], true).argv).toEqual(['tmux', 'new-window', '-c', '/w/2', '--', 'claude', '--resume', 's2']);
    expect(resumeArgv(cfg, e[2], false).argv).toEqual(['claude', '--resume', 's1']);
  });
  it('the commands a person pastes are quoted for a POSIX shell (CLI and web alike)', () => {
    const [x] = resumeEntries(
      cfg,
      [
        {
          jobId: 'exit/t/s/1',
          reason: 'request',
          taskId: "it's $(x)",
          sessionId: 's 1',
          cwd: '/w/my dir',
          n: 1,
          outcome: 'exited',
          finishedAt: '2026-11-30T01:00:00Z',
        },
      ],
      [],
    );
    expect(resumeLines(x)).toEqual({ shell: "(cd '/w/my dir' && claude --resume 's 1')", sunset: "sunset resume 'it'\\''s $(x)'" });
  });
});

describe('sunset exited / sunset resume on a test fleet', () => {
  const ctx = useFleet();

  it('an interactive session sunset exited comes back in a tmux session, and is then protected as resumed', async () => {
    const host = uniqueHost();
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'ti', state: 'done', sessionId: i.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { host }));
    expect(await waitFor(() => Boolean(ctx.fleet.readTask('ti').exitedAt), 30_000)).toBe(true);
    await ctx.sunset.close();
    ctx.sunset = null;
    const cfg = ctx.fleet.writeConfig({ host, windows: FAST_WINDOWS });
    const exited = await runCli(['exited', '--json', '--config', cfg]);
    expect(exited.code).toBe(0);
    const listed = JSON.parse(exited.stdout).entries; // { entries } as GET /api/exited; --array gives the bare list
    expect(JSON.parse((await runCli(['exited', '--json', '--array', '--config', cfg])).stdout)).toEqual(listed);
    expect(listed).toMatchObject([
      {
        outcome: 'exited',
        taskId: 'ti',
        sessionId: i.sessionId,
        kind: 'interactive',
        cwd: i.cwd,
        resume: [ctx.fleet.claudeBin, '--resume', i.sessionId],
      },
    ]);
    const r = await runCli(['resume', 'ti', '--config', cfg], { env: { TMUX: '' } });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/attach with: tmux -u -L/);
    expect(await waitFor(() => typeof ctx.fleet.row(i)?.pid === 'number' && ctx.fleet.isAlive(ctx.fleet.row(i)!.pid), 20_000)).toBe(true);
    const v = JSON.parse((await runCli(['verdict', i.sessionId, '--json', '--config', cfg])).stdout);
    expect(v.sessions[0]).toMatchObject({ kind: 'interactive', verdict: 'protected', live: true });
    expect(v.sessions[0].reasons).toContain('resumed');
  });

  it('a stateDir that does not exist is said on stderr; stdout stays what it says (and valid JSON with --json)', async () => {
    const cfg = ctx.fleet.writeConfig({ host: uniqueHost(), stateDir: '/nonexistent/sunset-state' });
    for (const verb of ['exited', 'alarms']) {
      const plain = await runCli([verb, '--config', cfg]);
      expect(plain.code).toBe(0);
      expect(plain.stdout.trim()).toBe(verb === 'exited' ? 'nothing exited yet' : 'no alarms');
      expect(plain.stderr).toContain('/nonexistent/sunset-state does not exist');
      const json = await runCli([verb, '--json', '--config', cfg]);
      expect(JSON.parse(json.stdout)).toEqual(
        verb === 'exited' ? { entries: [], kept: { copies: 0, gzBytes: 0, keep: true, maxMB: 1024, keepDays: null } } : { alarms: [] },
      );
    }
  });

  it('unknown ids exit 2; a background session resumes in the foreground and passes on its exit code', async () => {
    const cfg = ctx.fleet.writeConfig({ host: uniqueHost() });
    const unknown = await runCli(['resume', 'nope', '--config', cfg]);
    expect(unknown.code).toBe(2);
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'tb', state: 'done', sessionId: a.sessionId });
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet));
    expect(await waitFor(() => Boolean(ctx.fleet.readTask('tb').exitedAt), 30_000)).toBe(true);
    const child = spawn(process.execPath, [CLI, 'resume', 'tb', '--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    const code = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
    expect(await waitFor(() => typeof ctx.fleet.row(a)?.pid === 'number' && ctx.fleet.isAlive(ctx.fleet.row(a)!.pid), 20_000)).toBe(true);
    await ctx.fleet.stop(a.id); // it leaves by its own path again; `sunset resume` passes its exit code on
    expect(await code).toBe(0);
  });
});
