// The CLI as a person uses it: spawned, reading stdout, stderr and the exit code.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TestFleet } from '../sim/fleet/fleet.js';
import { runCli } from './support/cli.js';
import { FAST_WINDOWS, startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';

const H = 3_600_000;
const sunsetCli = (args: string[]) => runCli(args, { timeoutMs: 60_000 });

describe('usage and config errors', () => {
  it('no command: usage, exit 2; --help: exit 0; unknown command: 2', async () => {
    expect((await sunsetCli([])).code).toBe(2);
    const help = await sunsetCli(['--help']);
    expect(help.code).toBe(0);
    for (const verb of ['up', 'verdict', 'exit', 'report', 'alarms', 'expire', 'demo']) expect(help.stdout).toContain(verb);
    expect((await sunsetCli(['nope'])).code).toBe(2);
    const vh = await sunsetCli(['verdict', '--help']);
    expect(vh.code).toBe(0);
    expect(vh.stdout).toMatch(/Exit codes/);
  });
  it('--help: the commands and their summaries in aligned columns, and the exit codes listed', async () => {
    const { stdout, code } = await sunsetCli(['--help']);
    expect(code).toBe(0);
    const section = (title: string) => {
      const lines = stdout.split('\n');
      const from = lines.indexOf(title) + 1;
      expect(from, title).toBeGreaterThan(0);
      const end = lines.findIndex((l, i) => i >= from && l.trim() === '');
      return lines.slice(from, end < 0 ? undefined : end);
    };
    const { COMMANDS, EXIT_CODES } = await import('../src/cli.js');
    const commands = section('Commands:');
    expect(commands).toHaveLength(COMMANDS.length);
    // every summary starts in the same column, the longest name (hook-event) included
    const starts = commands.map((l, i) => {
      expect(l.trimStart().startsWith(`${COMMANDS[i].name} `)).toBe(true);
      return l.indexOf(COMMANDS[i].summary);
    });
    expect(new Set(starts).size).toBe(1);
    expect(starts[0]).toBeGreaterThan(Math.max(...COMMANDS.map((c) => c.name.length)) + 2);
    const codes = section('Exit codes:');
    expect(codes.map((l) => l.trim().split(/\s{2,}/)[0])).toEqual(['0', '1', '2', '3', '75', '130, 143']);
    expect(new Set(codes.map((l, i) => l.indexOf(EXIT_CODES[i][1]))).size).toBe(1);
    expect(stdout).toMatch(/^ {2}--config FILE +the config file/m);
  });

  it('--config FILE before the command works as it does after it; a --config with no file or no command is exit 2', async () => {
    const fleet = await TestFleet.create();
    try {
      await fleet.spawnBackground();
      const cfg = fleet.writeConfig({ host: uniqueHost() });
      const after = await sunsetCli(['verdict', '--json', '--config', cfg]);
      const before = await sunsetCli(['--config', cfg, 'verdict', '--json']);
      const eq = await sunsetCli([`--config=${cfg}`, 'verdict', '--json']);
      expect(after.code, after.stderr).toBe(0);
      for (const r of [before, eq]) {
        expect(r.code, r.stderr).toBe(after.code);
        // the same fleet read through the same config: the same sessions and verdicts
        const rows = (o: string) => JSON.parse(o).sessions.map((x: { sessionId: string; verdict: string }) => [x.sessionId, x.verdict]);
        expect(rows(r.stdout)).toEqual(rows(after.stdout));
      }
      const noFile = await sunsetCli(['--config']);
      expect(noFile.code).toBe(2);
      expect(noFile.stderr).toMatch(/--config takes a file/);
      const noVerb = await sunsetCli(['--config', cfg]);
      expect(noVerb.code).toBe(2);
      expect(noVerb.stderr).toMatch(/no command after --config FILE/);
      // the config before a command still reaches it: a bad one is that command's usage error
      const bad = await sunsetCli(['--config', join(fleet.root, 'missing.json'), 'report']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^sunset report: config file .*missing\.json cannot be read/);
    } finally {
      await fleet.destroy();
    }
  });

  it("--version and -V print package.json's version; --verbose names node's missing options when run as `node cli.js`", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    for (const flag of ['--version', '-V']) expect(await sunsetCli([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    // runCli is `node dist/src/cli.js`, not the command: none of the shebang's options reach node
    const v = await runCli(['--version', '--verbose'], { env: { MALLOC_ARENA_MAX: undefined }, timeoutMs: 60_000 });
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(
      /^ {2}node options {2}missing MALLOC_ARENA_MAX=2 --max-semi-space-size=2 --optimize-for-size --max-opt=1 --expose-gc: run sunset as the `sunset` command/m,
    );
    const bad = await sunsetCli(['-V', '--json']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--version takes only --verbose/);
  });
  it('a bad option or a bad config exits 2 naming the problem', async () => {
    const r = await sunsetCli(['verdict', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bogus/);
    const fleet = await TestFleet.create();
    try {
      const { writeFileSync } = await import('node:fs');
      const bad = join(fleet.root, 'bad.json');
      writeFileSync(bad, JSON.stringify({ windows: { grace: 'soonish' } }));
      const c = await sunsetCli(['verdict', '--config', bad]);
      expect(c.code).toBe(2);
      expect(c.stderr).toMatch(/windows\.grace.*duration/);
      // a tasks folder that does not exist is no tasks — and a person hears it (a typo in tasksDir looks the same)
      const typo = fleet.writeConfig({ host: uniqueHost(), fleet: { ...fleet.config().fleet, tasksDir: join(fleet.root, 'taks') } });
      for (const verb of ['verdict', 'report']) {
        const t = await sunsetCli([verb, '--config', typo]);
        const said = `no tasks folder at ${join(fleet.root, 'taks')} (fleet.tasksDir): no session has a task; finished background jobs still leave by their own chain, the rest after windows.expireIdle idle`;
        expect(t.stderr, verb).toContain(said);
        expect(t.stderr.split(said).length - 1, verb).toBe(1); // said once
      }
      const missing = await sunsetCli(['report', '--config', join(fleet.root, 'missing.json')]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/cannot be read/);
    } finally {
      await fleet.destroy();
    }
  });
});

describe('sunset exit, report, alarms on a test fleet', () => {
  const ctx = useFleet();

  it('refuses a protected session (3, naming reasons), unknown ids (2), records (3, no override reaches); an override is accepted, carried out and audited', async () => {
    const host = uniqueHost();
    const cfg = ctx.fleet.writeConfig({ host, windows: FAST_WINDOWS, exitRate: { max: 20, per: 100 } });
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: busy.sessionId });
    const rec = ctx.fleet.addRecord();
    const refused = await sunsetCli(['exit', busy.id, '--config', cfg]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/task-not-terminal/);
    expect(refused.stderr).toMatch(/status-busy/);
    expect((await sunsetCli(['exit', 'no-such-session', '--config', cfg])).code).toBe(2);
    const r = await sunsetCli(['exit', rec.id, '--config', cfg, '--override-protection']);
    expect(r.code).toBe(3);
    // said plainly: once "is record:\n  record: record"
    expect(r.stderr.trim()).toBe(`sunset exit: ${rec.id} is a roster record (no process): nothing to exit`);

    const noReason = await sunsetCli(['exit', busy.id, '--config', cfg, '--override-protection']);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason/);

    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { host }));
    const ok = await sunsetCli([
      'exit',
      busy.id,
      '--config',
      cfg,
      '--override-protection',
      '--reason',
      'needs the memory',
      '--wait',
      '--json',
    ]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ status: 'finished', outcome: 'exited' });
    expect(ctx.fleet.ended(busy)).toMatchObject([{ how: 'stop' }]);
    const audit = readFileSync(join(ctx.fleet.config().stateDir, 'audit.jsonl'), 'utf8');
    expect(audit).toMatch(/"event":"exit:person-request".*"why":"needs the memory".*"override":true/);
    expect(ctx.fleet.readTask('lane')).toEqual({ id: 'lane', state: 'awaiting-human', sessionId: busy.sessionId }); // the task is the Driver's
  });

  it('a second request while the first waits joins it; --job says where it is, --cancel takes it back, and nothing is done to the session', async () => {
    const host = uniqueHost();
    const cfg = ctx.fleet.writeConfig({ host, windows: FAST_WINDOWS, exitRate: { max: 20, per: 100 } });
    // a lane awaiting a human: sunset's own chains never touch it; a person's override is the only request
    const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    ctx.fleet.writeTask({ id: 'lane-j', state: 'awaiting-human', sessionId: idle.sessionId });
    const over = ['--override-protection', '--reason', 'needs the memory'];
    // no sunset up: the request waits in the queue
    const first = await sunsetCli(['exit', idle.id, ...over, '--config', cfg, '--json']);
    expect(first.code).toBe(0);
    const a = JSON.parse(first.stdout);
    expect(a).toMatchObject({ status: 'accepted' });
    const second = await sunsetCli(['exit', idle.id, ...over, '--config', cfg, '--json']);
    expect(JSON.parse(second.stdout)).toEqual({ status: 'accepted', jobId: a.jobId, id: idle.id, joined: true });
    const plain = await sunsetCli(['exit', idle.id, ...over, '--config', cfg]);
    expect(plain.stdout).toContain(`already requested: this joins job ${a.jobId}`);

    const where = await sunsetCli(['exit', '--job', a.jobId, '--config', cfg]);
    expect(where.code).toBe(0);
    expect(where.stdout).toMatch(
      new RegExp(`^exit job \\S+ \\(session ${idle.id}\\) is (waiting|prioritized): waiting for a running \`sunset up\``),
    );
    expect((await sunsetCli(['exit', '--job', 'person/nope', '--config', cfg])).code).toBe(2);
    expect((await sunsetCli(['exit', idle.id, '--job', a.jobId, '--config', cfg])).code).toBe(2);

    const cancel = await sunsetCli(['exit', '--cancel', a.jobId, '--config', cfg, '--json']);
    expect(cancel.code).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({ status: 'cancelled', jobId: a.jobId, sessionId: idle.sessionId });
    expect((await sunsetCli(['exit', '--cancel', a.jobId, '--config', cfg])).code).toBe(2); // gone from the queue
    const audit = readFileSync(join(ctx.fleet.config().stateDir, 'audit.jsonl'), 'utf8');
    expect(audit).toMatch(/"event":"exit:person-joined"/);
    expect(audit).toMatch(/"event":"exit:person-cancelled"/);

    // taken back: a sunset up started now has nothing to carry out; a new request is a new job
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { host }));
    const again = await sunsetCli(['exit', idle.id, ...over, '--config', cfg, '--wait', '--json']);
    expect(JSON.parse(again.stdout), again.stdout + again.stderr).toMatchObject({ status: 'finished', outcome: 'exited' });
    expect(JSON.parse(again.stdout).jobId).not.toBe(a.jobId);
    expect(ctx.fleet.ended(idle)).toMatchObject([{ how: 'stop' }]); // one exit call
  });

  it('sunset verdict ID, as another reaper asks it: 0 only for that session when eligible; after "--" an id is an id', async () => {
    const cfg = ctx.fleet.writeConfig();
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: busy.sessionId });
    const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H }); // untasked past expireIdle: eligible
    const code = async (...args: string[]) => (await sunsetCli(['verdict', '--config', cfg, ...args])).code;
    expect(await code(idle.id)).toBe(0);
    expect(await code('--', idle.id)).toBe(0);
    expect(await code(busy.id)).toBe(3);
    expect(await code('--', busy.id)).toBe(3); // "--" once made verdict judge the whole fleet and exit 0
    expect(await code('--', 'no-such-session')).toBe(3);
    expect(await code('--', '-h')).toBe(3); // an id, not the help
    expect(await code('--', busy.id, idle.id)).toBe(2);
    expect((await sunsetCli(['report', '--config', cfg, '--', 'x'])).code).toBe(2); // a verb without ids takes nothing after "--"
  });

  it('sunset exit with Redis down: refusals as ever (they never need Redis); an exit it would queue says so at once (exit 1), no stack traces', async () => {
    const cfg = ctx.fleet.writeConfig();
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    const idle = await ctx.fleet.spawnBackground({ transcriptAgeMs: 49 * H });
    const down = (...args: string[]) =>
      runCli(['exit', '--config', cfg, '--reason', 'x', ...args], { timeoutMs: 30_000, env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    expect((await down(busy.id)).code).toBe(3);
    expect((await down('no-such-session')).code).toBe(2);
    const r = await down(idle.id);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not queuing: cannot reach Redis at redis:\/\/127\.0\.0\.1:1 \(connect ECONNREFUSED/);
    expect(r.stderr).not.toMatch(/at TCPConnectWrap/);
    expect(ctx.fleet.ended(idle)).toEqual([]);
  });

  it('sunset report: lanes awaiting a human, oldest first, with the memory they hold', async () => {
    const cfg = ctx.fleet.writeConfig();
    const a = await ctx.fleet.spawnBackground();
    const b = await ctx.fleet.spawnBackground();
    ctx.fleet.writeTask({
      id: 'young',
      state: 'awaiting-human',
      sessionId: a.sessionId,
      stateChangedAt: new Date(Date.now() - 46 * H).toISOString(),
    });
    ctx.fleet.writeTask({
      id: 'old',
      state: 'awaiting-human',
      sessionId: b.sessionId,
      awaitingHumanSince: new Date(Date.now() - 269 * H).toISOString(),
    });
    ctx.fleet.writeTask({ id: 'd', state: 'done', sessionId: 'gone-session' });
    ctx.fleet.addRecords(2);
    const r = await sunsetCli(['report', '--json', '--config', cfg]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.roster).toMatchObject({ rows: 4, live: 2, records: 2 });
    expect(j.tasks.byState).toEqual({ 'awaiting-human': 2, done: 1 });
    expect(j.awaitingHuman.map((x: any) => [x.taskId, x.waitingSinceFrom])).toEqual([
      ['old', 'awaitingHumanSince'],
      ['young', 'stateChangedAt'],
    ]);
    expect(j.awaitingHuman[0].rssBytes).toBeGreaterThan(1_000_000);
    expect(j.memory.byLane['awaiting-human'].share).toBeCloseTo(1, 5);
    const text = await sunsetCli(['report', '--config', cfg]);
    expect(text.stdout).toMatch(/lanes awaiting a human: 2/);
    expect(text.stdout.indexOf('old')).toBeLessThan(text.stdout.indexOf('young'));
  });

  it('sunset alarms lists the open alarms with their ids; ack ID closes one (audited, kept in the log, listed by --all); --json is an object, --array the bare list', async () => {
    const cfg = ctx.fleet.writeConfig();
    expect((await sunsetCli(['alarms', '--config', cfg])).stdout).toMatch(/no alarms/);
    const { Alarms, alarmId } = await import('../src/store/alarms.js');
    const { parseConfig } = await import('../src/config.js');
    const alarms = new Alarms(parseConfig(ctx.fleet.config()));
    await alarms.raise('session-will-not-exit', 'task/x', { taskId: 'x', sessionId: 's', message: 'session s will not exit' });
    await alarms.raise('cap-reached', 'hour/2026-11-30T04', { message: 'cap reached: 36/35' });
    const id = alarmId('session-will-not-exit', 'task/x');
    const list = await sunsetCli(['alarms', '--config', cfg]);
    expect(list.stdout).toMatch(new RegExp(`^${id}  \\S+  session-will-not-exit\\s+session s will not exit$`, 'm'));
    const j = JSON.parse((await sunsetCli(['alarms', '--json', '--config', cfg])).stdout);
    expect(j).toMatchObject({
      alarms: [{ id, kind: 'session-will-not-exit', taskId: 'x', message: 'session s will not exit', ack: null }, { kind: 'cap-reached' }],
    });
    expect(JSON.parse((await sunsetCli(['alarms', '--json', '--array', '--config', cfg])).stdout)).toMatchObject([
      { id, kind: 'session-will-not-exit' },
      { kind: 'cap-reached' },
    ]);

    const ack = await sunsetCli(['alarms', 'ack', id, '--reason', 'stopped it myself', '--config', cfg]);
    expect(ack.code).toBe(0);
    expect(ack.stdout).toMatch(new RegExp(`alarm ${id} \\(session-will-not-exit\\) acknowledged`));
    const again = await sunsetCli(['alarms', 'ack', id, '--config', cfg]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already acknowledged, .* by \S+: stopped it myself/);
    expect((await sunsetCli(['alarms', 'ack', 'deadbeef', '--config', cfg])).code).toBe(2);
    expect((await sunsetCli(['alarms', 'ack', '--config', cfg])).code).toBe(2);
    expect((await sunsetCli(['alarms', 'nack', id, '--config', cfg])).code).toBe(2);

    const open = await sunsetCli(['alarms', '--config', cfg]);
    expect(open.stdout).not.toContain(id);
    expect(open.stdout).toMatch(/cap-reached[\s\S]*1 acknowledged, not shown: sunset alarms --all/);
    const all = await sunsetCli(['alarms', '--all', '--config', cfg]);
    expect(all.stdout).toMatch(new RegExp(`^${id} .*session s will not exit\\n\\s+acknowledged \\S+ by \\S+: stopped it myself$`, 'm'));
    const allJson = JSON.parse((await sunsetCli(['alarms', '--all', '--json', '--config', cfg])).stdout);
    expect(allJson.alarms[0]).toMatchObject({ id, ack: { why: 'stopped it myself' } });
    const audit = readFileSync(join(ctx.fleet.config().stateDir, 'audit.jsonl'), 'utf8');
    expect(audit.match(/"event":"alarm:acknowledged"/g)).toHaveLength(1);
    expect(readFileSync(join(ctx.fleet.config().stateDir, 'alarms.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
  });
});
