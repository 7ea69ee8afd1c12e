// claude-code-unreadable on the test fleet (real processes, real Redis, the stand-in CLI): the decision itself
// (pure), then sunset up with its web while the fleet's job files are moved aside and back — one alarm, shown by
// `sunset verdict` (text and --json), the fleet page and /metrics, the sessions protected, closed when the files
// read again; and a session file or daemon roster of a protocol sunset does not know.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { untilWithin, useFleet } from './support/use-fleet.js';
import { startWebSunset, type WebSunset } from './support/web.js';
import { runCli } from './support/cli.js';
import { testConfig } from './support/sunset.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { readAudit } from '../src/store/audit.js';
import {
  nextUnreadable,
  unreadableFinding,
  unreadableMessage,
  type FilesSeen,
  type UnreadableFinding,
} from '../src/doctrine/unreadable.js';
import { trustFilesAgain } from '../src/evidence/file-roster.js';
import { metric } from './support/metrics.js';

const H = 3_600_000;
const ctx = useFleet({ hookTimeout: 90_000 });
const until = untilWithin(30_000, 50);
const KIND = 'claude-code-unreadable';

const seen = (o: Partial<FilesSeen> = {}): FilesSeen => ({ sessions: [], daemonRoster: null, ...o });
const bg = (label: string, o: Partial<FilesSeen['sessions'][number]> = {}) => ({
  label,
  sessionId: `${label}-uuid`,
  listed: true,
  jobState: null,
  sessionFile: null,
  ...o,
});

describe('the decision (pure)', () => {
  it('finds what does not read, per file and problem; none when every file reads', () => {
    expect(unreadableFinding(seen({ sessions: [bg('a'), bg('b')] }))).toBeNull();
    expect(unreadableFinding(seen())).toBeNull();
    const f = unreadableFinding(
      seen({
        sessions: [
          bg('a', { jobState: 'missing' }),
          bg('b', { jobState: 'missing', listed: false }),
          bg('c', { sessionFile: 'unknown-protocol' }),
          bg('d'),
        ],
      }),
    )!;
    expect(f.sessions).toBe(3);
    expect(f.checked).toBe(4);
    expect(f.files).toEqual([
      { file: 'job-state', problem: 'missing', path: '~/.claude/jobs/<id>/state.json', sessions: ['a', 'b'] },
      { file: 'session-file', problem: 'unknown-protocol', path: '~/.claude/sessions/<pid>.json', sessions: ['c'] },
    ]);
    expect(f.unlisted).toEqual(['b-uuid']);
    expect(f.meanwhile.join(' ')).toMatch(/job-unknown/);
    expect(f.meanwhile.join(' ')).toMatch(/probe-failed/);
    // a daemon roster of another protocol touches every live background session
    const d = unreadableFinding(seen({ sessions: [bg('a'), bg('b')], daemonRoster: { problem: 'unknown-protocol', proto: 2 } }))!;
    expect(d.files).toEqual([
      { file: 'daemon-roster', problem: 'unknown-protocol', path: '~/.claude/daemon/roster.json', sessions: ['a', 'b'] },
    ]);
    // read in a configured fleet.claudeDir: the paths, and the alarm's words, name that folder
    const elsewhere = unreadableFinding(seen({ sessions: [bg('a', { jobState: 'unreadable' })], claudeDir: '/srv/agents/.claude/' }))!;
    expect(elsewhere.files).toEqual([
      { file: 'job-state', problem: 'unreadable', path: '/srv/agents/.claude/jobs/<id>/state.json', sessions: ['a'] },
    ]);
    expect(unreadableMessage(elsewhere, '2.1.328')).toContain(
      'the job state file (/srv/agents/.claude/jobs/<id>/state.json) does not read as a JSON object for 1 session (a)',
    );
    expect(unreadableMessage(elsewhere, null)).not.toContain('~/.claude');
  });

  it('raises once the finding has held for holdFor, once per episode; closes when the files read again; nothing to look at changes nothing', () => {
    const f = unreadableFinding(seen({ sessions: [bg('a', { jobState: 'missing' })] })) as UnreadableFinding;
    const t0 = Date.parse('2026-12-03T10:00:00Z');
    const s1 = nextUnreadable(null, { finding: f, checked: 1, at: t0 }, 60_000);
    expect(s1.act).toEqual({ act: null });
    expect(s1.state).toMatchObject({ since: '2026-12-03T10:00:00.000Z', key: null });
    const s2 = nextUnreadable(s1.state, { finding: f, checked: 1, at: t0 + 59_999 }, 60_000);
    expect(s2.act).toEqual({ act: null });
    const s3 = nextUnreadable(s2.state, { finding: f, checked: 1, at: t0 + 60_000 }, 60_000);
    expect(s3.act).toEqual({ act: 'raise', key: `${KIND}/2026-12-03T10:00:00.000Z` });
    const s4 = nextUnreadable(s3.state, { finding: f, checked: 1, at: t0 + 120_000 }, 60_000);
    expect(s4.act).toEqual({ act: null }); // once per episode, not every sweep
    expect(s4.state?.key).toBe(s3.state?.key);
    // no live background session to look at: neither raised again nor closed
    expect(nextUnreadable(s4.state, { finding: null, checked: 0, at: t0 + 130_000 }, 60_000)).toEqual({
      state: s4.state,
      act: { act: null },
    });
    const s5 = nextUnreadable(s4.state, { finding: null, checked: 2, at: t0 + 140_000 }, 60_000);
    expect(s5).toEqual({ state: null, act: { act: 'clear', key: s3.state!.key } });
    // a finding that went before it was raised: nothing to close
    expect(nextUnreadable(s1.state, { finding: null, checked: 1, at: t0 + 1000 }, 60_000)).toEqual({ state: null, act: { act: null } });
  });
});

describe('on the test fleet', () => {
  it('job files moved aside: one alarm, shown by verdict, the fleet page and /metrics, the sessions protected; moved back: closed; moved again: a new one', async () => {
    const fleet = ctx.fleet;
    // written to a moment ago: untasked and not idle for the expire window, so they stay through the test
    const a = await fleet.spawnBackground();
    const b = await fleet.spawnBackground();
    const s: WebSunset = await startWebSunset(fleet, ['producers', 'workers', 'web'], { windows: { unreadableFor: 300 } });
    ctx.sunset = s;
    const web = s.web;
    const get = async (path: string) => (await fetch(new URL(path, web.url))).text();
    const mine = () => s.deps.alarms.listed().filter((x) => x.kind === KIND);
    const configFile = fleet.writeConfig({ host: s.config.host });
    await s.reconcile();
    expect(mine()).toEqual([]);

    const jobs = join(fleet.claudeDir, 'jobs');
    renameSync(jobs, `${jobs}.aside`);
    await until('the alarm is raised', () => mine().length === 1);
    for (let i = 0; i < 3; i++) await s.reconcile(); // later sweeps find it again: still one alarm
    expect(mine()).toHaveLength(1);
    const alarm = mine()[0];
    expect(alarm.ack).toBeNull();
    expect(alarm.message).toMatch(
      /^Claude Code .*test fleet's stand-in.*: its files do not read as sunset knows them for 2 of 2 live background sessions/,
    );
    // the folder it reads (the test fleet's fleet.claudeDir), not the default ~/.claude
    expect(alarm.message).toContain(`the job state file (${fleet.claudeDir}/jobs/<id>/state.json) is missing for 2 sessions`);
    expect(alarm.message).toMatch(/protected \(job-unknown\)/);
    expect(alarm.message).toMatch(/To do: compare `claude --version` .* docs\/operations\.md, "When Claude Code's files stop reading"\.$/);
    expect(alarm).toMatchObject({
      sessions: 2,
      checked: 2,
      files: [{ file: 'job-state', problem: 'missing', path: `${fleet.claudeDir}/jobs/<id>/state.json` }],
    });

    // sunset verdict --json: the fleet-level field, and each session protected
    const v = await runCli(['verdict', '--json', '--config', configFile]);
    expect(v.code, v.stderr).toBe(0);
    const j = JSON.parse(v.stdout);
    expect(j.claudeCodeUnreadable).toMatchObject({
      sessions: 2,
      checked: 2,
      unlisted: [],
      alarm: { id: alarm.id },
      files: [{ file: 'job-state', problem: 'missing', sessions: expect.arrayContaining([a.id, b.id]) }],
    });
    for (const x of [a, b]) {
      const row = j.sessions.find((r: any) => r.sessionId === x.sessionId);
      expect(row.verdict).toBe('protected');
      expect(row.reasons).toContain('job-unknown');
    }
    const text = await runCli(['verdict', '--config', configFile]);
    expect(text.stdout).toMatch(/^claude-code-unreadable: Claude Code .*2 of 2 live background sessions/m);
    expect(text.stdout).toContain(`alarm ${alarm.id} (claude-code-unreadable) raised`);

    // the fleet page and /metrics
    const page = await get('/');
    expect(page).toContain('id="claude-code-unreadable"');
    expect(page).toContain(alarm.id);
    let m = await get('/metrics');
    expect(metric(m, 'sunset_claude_code_unreadable')).toBe(1);
    expect(metric(m, 'sunset_claude_code_unreadable_sessions{file="job-state"}')).toBe(2);
    expect(metric(m, 'sunset_claude_code_unreadable_sessions{file="session-file"}')).toBe(0);
    expect(metric(m, `sunset_alarms_open{kind="${KIND}"}`)).toBe(1);

    // the files back: the alarm closes by itself, once, audited
    renameSync(`${jobs}.aside`, jobs);
    await until('the alarm is closed', () => mine()[0]?.ack !== null);
    expect(mine()[0].ack).toMatchObject({ by: 'sunset', why: expect.stringMatching(/read again/) });
    expect(existsSync(join(s.config.stateDir, 'claude-code-unreadable.json'))).toBe(false);
    expect(readAudit(s.config.stateDir).filter((e) => e.event === 'alarm:acknowledged' && e.kind === KIND)).toHaveLength(1);
    m = await get('/metrics');
    expect(metric(m, 'sunset_claude_code_unreadable')).toBe(0);
    expect(metric(m, 'sunset_claude_code_unreadable_sessions{file="job-state"}')).toBe(0);
    expect(await get('/')).not.toContain('id="claude-code-unreadable"');
    const after = JSON.parse((await runCli(['verdict', '--json', '--config', configFile])).stdout);
    expect(after.claudeCodeUnreadable).toBeNull();

    // a new episode is a new alarm
    renameSync(jobs, `${jobs}.aside`);
    await until('a second alarm', () => mine().length === 2);
    expect(mine()[1].id).not.toBe(alarm.id);
    expect(mine()[1].ack).toBeNull();
    renameSync(`${jobs}.aside`, jobs);
    await until('the second closed', () => mine()[1]?.ack !== null);
  }, 180_000);

  it('a session file or a daemon roster of a protocol sunset does not know: protected, nothing sent over its socket, the roster from the CLI', async () => {
    const fleet = ctx.fleet;
    const a = await fleet.spawnBackground({ transcriptAgeMs: H });
    const cfg = testConfig(fleet);
    const file = join(fleet.claudeDir, 'sessions', `${a.pid}.json`);
    await until('its session file', () => existsSync(file));
    let snap = await gatherFleet(cfg);
    expect(snap.claudeFiles).toEqual({ checked: 1, unreadable: null });
    const mine = () => snap.sessions.find((x) => x.sessionId === a.sessionId)!;
    expect(mine().evidence.socket).toBeTruthy();

    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), peerProtocol: 2 }));
    snap = await gatherFleet(cfg);
    expect(snap.claudeFiles?.unreadable?.files).toEqual([
      { file: 'session-file', problem: 'unknown-protocol', path: `${fleet.claudeDir}/sessions/<pid>.json`, sessions: [a.id] },
    ]);
    expect(mine().evidence.socket).toBeNull();
    expect(mine().reasons).toContain('probe-failed');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), peerProtocol: 1 }));

    // the daemon's roster: proto 1 lets a sweep stand on the files; another does not
    mkdirSync(join(fleet.claudeDir, 'daemon'), { recursive: true });
    const roster = join(fleet.claudeDir, 'daemon', 'roster.json');
    trustFilesAgain();
    writeFileSync(roster, JSON.stringify({ proto: 1, workers: {} }));
    snap = await gatherFleet(cfg);
    expect(snap.rosterFrom).toBe('files');
    expect(snap.claudeFiles?.unreadable).toBeNull();
    writeFileSync(roster, JSON.stringify({ proto: 2, workers: {} }));
    snap = await gatherFleet(cfg);
    expect(snap.rosterFrom).toBe('cli');
    expect(snap.claudeFiles?.unreadable).toMatchObject({
      sessions: 1,
      files: [{ file: 'daemon-roster', problem: 'unknown-protocol', path: `${fleet.claudeDir}/daemon/roster.json`, sessions: [a.id] }],
    });
    expect(snap.claudeFiles?.unreadable?.meanwhile.join(' ')).toMatch(/taken from the CLI/);
  });
});
