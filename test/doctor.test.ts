// `sunset doctor`: the built CLI on a real test fleet — the stand-in claude, a real tmux server holding an
// interactive session's pane, the shared Redis, a local HTTP receiver as the alarm webhook, hooks and the
// service unit installed by sunset's own verbs — then the same setup broken three ways.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let servers: Server[] = [];
const ctx = useFleet({
  first: async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    servers = [];
  },
});

/** A local HTTP receiver (the alarm webhook): its URL. */
async function receiver(): Promise<string> {
  const s = createServer((_, res) => res.end('ok'));
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook?token=secret-in-the-query`;
}

/** A port nothing listens on: one the kernel handed out, then closed. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

function meminfo(mb: number): string {
  const file = join(ctx.fleet.root, 'meminfo');
  writeFileSync(file, `MemTotal:       ${mb * 2048} kB\nMemAvailable:   ${mb * 1024} kB\n`);
  return file;
}

function configFile(over: Record<string, unknown>): string {
  const file = join(ctx.fleet.root, `doctor-${uniqueHost()}.json`);
  writeFileSync(file, JSON.stringify(ctx.fleet.config({ host: uniqueHost(), redisUrl: REDIS, probeTimeout: '10s', ...over })));
  return file;
}

// HOME is the fleet's root (the service unit's place); no XDG_CONFIG_HOME of the test's own
const doctor = (args: string[]) => runCli(['doctor', ...args], { env: { HOME: ctx.fleet.root, XDG_CONFIG_HOME: '', REDIS_URL: '' } });

const lineOf = (out: string, name: string) => out.split('\n').find((l) => new RegExp(`^(ok  |warn|FAIL) ${name} `).test(l)) ?? '';

describe('sunset doctor', () => {
  it('a good setup: a line each, all ok, exit 0; --json says the same', async () => {
    await ctx.fleet.spawnInteractive(); // a tmux server on the fleet's socket, holding a pane
    const cfg = configFile({
      memoryFloorMB: 1000,
      meminfoPath: meminfo(8000),
      alarms: { webhook: await receiver(), command: [process.execPath, '-e', '0'] },
    });
    const env = { HOME: ctx.fleet.root, XDG_CONFIG_HOME: '', REDIS_URL: '' };
    const hooks = await runCli(['hooks', 'install', '--config', cfg], { env });
    expect(hooks.code, hooks.stderr).toBe(0);
    const unit = join(ctx.fleet.root, '.config', 'systemd', 'user', 'sunset.service');
    const service = await runCli(['service', 'print', '--config', cfg, '--output', unit], { env });
    expect(service.code, service.stderr).toBe(0);

    const r = await doctor(['--config', cfg]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const names = ['redis', 'tmux', 'claude', 'claude-files', 'agents', 'tasks', 'hooks', 'alarms', 'service', 'memory'];
    for (const n of names) expect(lineOf(r.stdout, n), `${n} in:\n${r.stdout}`).toMatch(/^ok {3}/);
    expect(lineOf(r.stdout, 'redis')).toContain(`Redis answers at ${REDIS}`);
    expect(lineOf(r.stdout, 'tmux')).toMatch(/tmux \S+, the same as the server of the panes on socket sunset-test-/);
    expect(lineOf(r.stdout, 'claude')).toContain("the test fleet's stand-in");
    expect(lineOf(r.stdout, 'hooks')).toMatch(/sunset's 6 hooks are installed/);
    // the alarms' own probe: an HTTP HEAD to each URL (nothing a person reads is sent), a command looked up, not run
    // only the URL's origin is said; the ok line points to `sunset alarms test` for a real delivery check
    expect(lineOf(r.stdout, 'alarms')).toMatch(
      /^ok {3}alarms +webhook: http:\/\/127\.0\.0\.1:\d+ answers \(HTTP 200 to HEAD; nothing sent\); command: \S+ is there and executable \(not run\) — `sunset alarms test` sends a test alarm through each, to check delivery$/,
    );
    expect(r.stdout).not.toContain('secret-in-the-query'); // a webhook's path and query are never shown
    expect(r.stdout).not.toContain('/hook');
    expect(lineOf(r.stdout, 'memory')).toMatch(/MemAvailable 7\.8 GB, memoryFloorMB 1000 MB: room for about 14 sessions of 500 MB/);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('all is well');

    const j = await doctor(['--json', '--config', cfg]);
    expect(j.code).toBe(0);
    const o = JSON.parse(j.stdout);
    expect(o).toMatchObject({ ok: true, failures: 0, warnings: 0 });
    expect(o.checks.map((c: { name: string }) => c.name)).toEqual(names);
  });

  it('a broken setup: a bogus claude, Redis and the webhook unreachable: FAIL lines naming the fix, exit 1; no tasks folder warns', async () => {
    const port = await deadPort();
    const cfg = configFile({
      redisUrl: `redis://:hunter2@127.0.0.1:${port}`,
      fleet: { tasksDir: join(ctx.fleet.root, 'no-tasks'), claudeCommand: join(ctx.fleet.root, 'bin', 'no-claude') },
      alarms: {
        webhook: `http://127.0.0.1:${await deadPort()}/x`,
        channels: [{ type: 'ntfy', name: 'phone', url: await receiver(), tokenEnv: 'SUNSET_DOCTOR_TEST_TOKEN' }],
      },
      meminfoPath: meminfo(8000),
    });
    const r = await doctor(['--config', cfg]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(lineOf(r.stdout, 'redis')).toBe(
      `FAIL redis         Redis at redis://:***@127.0.0.1:${port} does not answer — start it, or fix redisUrl / $REDIS_URL (or name none: sunset then runs its own)`,
    );
    expect(r.stdout).not.toContain('hunter2'); // a password is never shown
    expect(lineOf(r.stdout, 'claude')).toMatch(
      /^FAIL claude +`.*no-claude --version` failed \(not found\) — install Claude Code, or point fleet\.claudeCommand/,
    );
    expect(lineOf(r.stdout, 'tasks')).toContain(
      `warn tasks         the tasks folder ${join(ctx.fleet.root, 'no-tasks')} does not exist: no session has a task (finished background jobs still leave by their own chain) — if a Driver writes task files, create it (mkdir -p `,
    );
    // the failing channels first, each marked; a token variable that is not set is named in the fix
    expect(lineOf(r.stdout, 'alarms')).toMatch(/^FAIL alarms +webhook: FAILED http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    expect(lineOf(r.stdout, 'alarms')).toMatch(
      /; phone \(ntfy\): FAILED .*SUNSET_DOCTOR_TEST_TOKEN \(tokenEnv\) is not set — set SUNSET_DOCTOR_TEST_TOKEN in sunset's environment \(its unit's Environment= or EnvironmentFile=, or export it before `sunset up`\)$/,
    );
    expect(lineOf(r.stdout, 'alarms')).not.toMatch(/\d\/x/); // the origin alone, not the path
    // what is merely missing warns: hooks, the unit
    expect(lineOf(r.stdout, 'hooks')).toMatch(/^warn hooks +sunset's hooks are not installed/);
    expect(lineOf(r.stdout, 'service')).toMatch(/^warn service +no systemd user unit at /);
    expect(lineOf(r.stdout, 'service')).toContain(`— sunset service print --config ${cfg} --output `); // the config it was given
    expect(r.stdout.trim().split('\n').at(-1)).toBe('3 to fix, 3 to look at: sunset cannot do its work until the FAIL lines are fixed');

    const j = JSON.parse((await doctor(['--json', '--config', cfg])).stdout);
    expect(j).toMatchObject({ ok: false, failures: 3, warnings: 3 });
    expect(j.checks.filter((c: { status: string }) => c.status === 'fail').map((c: { name: string }) => c.name)).toEqual([
      'redis',
      'claude',
      'alarms',
    ]);
  });

  it('no Redis named: its private one is said not yet run, or not running with its schedule in its AOF', async () => {
    const c: Record<string, unknown> = { ...ctx.fleet.config({ host: uniqueHost() }), privateRedis: 'always' };
    delete c.redisUrl;
    const file = join(ctx.fleet.root, `doctor-${uniqueHost()}.json`);
    writeFileSync(file, JSON.stringify(c));
    expect(lineOf((await doctor(['--config', file])).stdout, 'redis')).toMatch(
      /^ok {3}redis +no Redis runs yet: `sunset up` starts its private one/,
    );
    // it has run before: its config is there (written at each start), and its AOF beside it
    const dir = join(String(c.stateDir), 'redis');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'redis.conf'), 'port 0\n');
    expect(lineOf((await doctor(['--config', file])).stdout, 'redis')).toMatch(
      /^ok {3}redis +sunset's private Redis is not running \(no `sunset up`\): `sunset up` starts it again \(.*\), its schedule kept in its AOF in /,
    );
  });

  it('MemAvailable under the floor warns; unreadable, it fails (admit would start nothing)', async () => {
    const low = await doctor(['--json', '--config', configFile({ memoryFloorMB: 2000, meminfoPath: meminfo(1500) })]);
    const mem = (out: string) => JSON.parse(out).checks.find((c: { name: string }) => c.name === 'memory');
    expect(mem(low.stdout)).toMatchObject({ status: 'warn', says: 'MemAvailable 1.5 GB, memoryFloorMB 2.0 GB: under the floor' });
    const gone = join(ctx.fleet.root, 'no-meminfo');
    const r = await doctor(['--json', '--config', configFile({ meminfoPath: gone })]);
    expect(r.code).toBe(1);
    expect(mem(r.stdout)).toMatchObject({ status: 'fail', says: `MemAvailable cannot be read from ${gone}` });
  });

  it('a claude of an untested version warns (2.1.x: read the same so far), and still exits 0 for it', async () => {
    const fake = join(ctx.fleet.root, 'bin', 'claude-2.1.999');
    writeFileSync(fake, `#!${process.execPath}\nprocess.stdout.write('2.1.999 (Claude Code)\\n');\n`);
    chmodSync(fake, 0o755);
    const r = await doctor(['--json', '--config', configFile({ fleet: { claudeCommand: fake } })]);
    const claude = JSON.parse(r.stdout).checks.find((c: { name: string }) => c.name === 'claude');
    expect(claude).toMatchObject({ status: 'warn', says: 'Claude Code 2.1.999 is not one sunset was tested with (tested: 2.1.328)' });
    expect(claude.fix).toMatch(/2\.1\.x has read the same so far/);
    expect(r.code, r.stdout).toBe(0); // a warning is not a failure
  });
});
