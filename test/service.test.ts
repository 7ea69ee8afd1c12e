// `sunset service print`: the systemd user unit it prints or writes (the built CLI, spawned from a chosen
// working directory). docs/operations.md ("As a systemd user service") is what it must agree with.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './support/cli.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sunset-service-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function sunset(args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv }) {
  const env = { ...process.env, ...o.env };
  delete env.SUNSET_CONFIG;
  if (!o.env?.REDIS_URL) delete env.REDIS_URL;
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: o.cwd, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('sunset service print', () => {
  const work = join(root, 'where-I-work');
  const cfgDir = join(root, 'cfg');
  mkdirSync(work, { recursive: true });
  mkdirSync(cfgDir, { recursive: true });
  const cfg = join(cfgDir, 'sunset.config.json');
  writeFileSync(cfg, JSON.stringify({ stateDir: 'state', fleet: { tasksDir: '/abs/tasks' } }));

  it('runs in the directory it was printed from (where relative config paths resolve), with the config made absolute; no ordering on system units', () => {
    const r = sunset(['service', 'print', '--config', '../cfg/sunset.config.json'], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^WorkingDirectory=${work}$`, 'm'));
    expect(r.stdout).toContain(`up --config ${cfg}`);
    expect(r.stdout).not.toMatch(/^(After|Wants|Requires)=/m);
    expect(r.stdout).toMatch(/^KillMode=process$/m);
    expect(r.stdout).toMatch(/^Environment=MALLOC_ARENA_MAX=2$/m); // as the sunset command's shebang sets it
    expect(r.stdout).not.toMatch(/^Environment=REDIS_URL/m);
    // stateDir is relative: it says from where it resolves
    expect(r.stderr).toMatch(new RegExp(`stateDir is a relative path: it resolves from ${work}`));
    // from a checkout: its docs, and its own pino-pretty (a dev dependency; test/package.test.ts: an installed one)
    const checkout = realpathSync(new URL('..', import.meta.url).pathname);
    expect(r.stdout).toContain(`Documentation=file://${join(checkout, 'docs', 'operations.md')}\n`);
    expect(r.stdout).toContain(`(cd ${checkout} && npx --no-install pino-pretty)`);
  });

  it('bakes $REDIS_URL into the unit and says so', () => {
    const r = sunset(['service', 'print', '--config', cfg], { cwd: work, env: { REDIS_URL: 'redis://127.0.0.1:6390' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Environment=REDIS_URL=redis:\/\/127\.0\.0\.1:6390$/m);
    expect(r.stderr).toMatch(/REDIS_URL from your environment is written into the unit/);
  });

  it('--output writes the unit whole (folders created), and a bad config leaves the file as it was (exit 2)', () => {
    const out = join(root, 'home', '.config', 'systemd', 'user', 'sunset.service');
    const printed = sunset(['service', 'print', '--config', cfg], { cwd: work });
    const w = sunset(['service', 'print', '--config', cfg, '--output', out], { cwd: work });
    expect(w.code).toBe(0);
    expect(w.stdout).toBe('');
    expect(readFileSync(out, 'utf8')).toBe(printed.stdout);
    const bad = join(cfgDir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ windows: { grace: 'soonish' } }));
    const b = sunset(['service', 'print', '--config', bad, '--output', out], { cwd: work });
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/windows\.grace/);
    expect(readFileSync(out, 'utf8')).toBe(printed.stdout);
    // a file that cannot be written: exit 1, naming it
    const c = sunset(['service', 'print', '--config', cfg, '--output', join(cfg, 'x')], { cwd: work });
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/cannot write/);
  });
});

describe('the node options', () => {
  it("the unit runs node with the same options as the sunset command's shebang", async () => {
    const { NODE_ENV, NODE_OPTIONS } = await import('../src/cli/service.js');
    const first = (await import('node:fs')).readFileSync(new URL('../src/cli.ts', import.meta.url), 'utf8').split('\n', 1)[0];
    expect(first).toBe(`#!/usr/bin/env -S ${NODE_ENV.join(' ')} node ${NODE_OPTIONS.join(' ')}`);
  });
});
