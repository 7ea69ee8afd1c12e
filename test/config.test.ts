import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../src/config.js';
import { parseDuration } from '../src/duration.js';
import { redisAddress } from '../src/redis.js';
import { tempDir } from './support/temp-dir.js';

describe('durations', () => {
  it('reads ms numbers and one-unit strings', () => {
    expect(parseDuration(250)).toBe(250);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('48h')).toBe(172_800_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('1.5s')).toBe(1500);
  });
  it('refuses the rest', () => {
    for (const bad of ['15 minutes', '1h30m', '-5s', '', 'm', -1, NaN, null, {}]) expect(parseDuration(bad)).toBeNull();
  });
});

describe('config', () => {
  it('defaults fit Claude Code', () => {
    const c = parseConfig({}, { env: {} });
    expect(c.fleet.rosterCommand).toEqual(['claude', 'agents', '--json', '--all']);
    expect(c.windows.grace).toBe(15 * 60_000);
    expect(c.windows.expireIdle).toBe(48 * 3_600_000);
    expect(c.maxExitRequests).toBe(3);
    expect(c.cap).toBe(35);
    expect(c.exitRate).toEqual({ max: 1, per: 10_000 });
    expect(c.web).toEqual({ host: '127.0.0.1', port: 3000, token: null });
    expect(c.fleet.tasksDir).toBe(join(homedir(), '.claude/jobs/tasks'));
  });
  it('an unknown key exits 2 naming the key and the known ones', () => {
    expect(() => parseConfig({ windows: { gracee: '1m' } })).toThrow(/unknown key "windows.gracee".*grace/);
    try {
      parseConfig({ nope: 1 });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).exitCode).toBe(2);
    }
  });
  it('a bad value names the key and what it takes', () => {
    expect(() => parseConfig({ windows: { grace: 'soon' } })).toThrow(/"windows.grace".*duration/);
    expect(() => parseConfig({ maxExitRequests: 4 })).toThrow(/maxExitRequests/);
    expect(() => parseConfig({ fleet: { rosterCommand: 'claude agents' } })).toThrow(/fleet.rosterCommand/);
  });
  it('a Redis address that cannot work is refused at load (exit 2), not at first connect', () => {
    for (const redisUrl of ['localhost:6379', 'http://h:6379', 'redis://h:99999', 'redis://h/abc'])
      expect(() => parseConfig({ redisUrl }, { env: {} }), redisUrl).toThrow(/"redisUrl" takes a URL/);
    for (const redisUrl of ['redis://:pw@h:6379/2', 'rediss://[::1]:6380', 'redis://h'])
      expect(parseConfig({ redisUrl }, { env: {} }).redisUrl).toBe(redisUrl);
    expect(() => parseConfig({}, { env: { REDIS_URL: 'nope' } })).toThrow(/REDIS_URL .*redisUrl/);
    for (const node of ['10.0.0.5:99999', '10.0.0.5:0'])
      expect(() => parseConfig({ redisCluster: [node] }, { env: {} }), node).toThrow(/"redisCluster.0" .*port is 1–65535/);
    expect(() => parseConfig({ redisCluster: ['redis://10.0.0.5:7000/3'] }, { env: {} })).toThrow(/no database/);
  });
  it('REDIS_URL overrides redisUrl; ~ and relative paths expand', () => {
    const c = parseConfig(
      { redisUrl: 'redis://a:1', stateDir: 'rel/state', fleet: { tasksDir: '~/t' } },
      { env: { REDIS_URL: 'redis://b:2' }, cwd: '/srv' },
    );
    expect(c.redisUrl).toBe('redis://b:2');
    expect(c.stateDir).toBe('/srv/rel/state');
    expect(c.fleet.tasksDir).toBe(join(homedir(), 't'));
  });
  it('a Redis the user names turns the private one off; SUNSET_DEFAULT_REDIS_URL moves the default address without naming one', () => {
    const bare = parseConfig({}, { env: {} });
    expect(bare.privateRedis).toBe('auto');
    expect(bare.redisUrl).toBe('redis://127.0.0.1:6379');
    // named in the file (even as the default address), by a Cluster, or by $REDIS_URL: used as named
    expect(parseConfig({ redisUrl: 'redis://127.0.0.1:6379' }, { env: {} }).privateRedis).toBe('never');
    expect(parseConfig({ redisCluster: ['10.0.0.5:7000'] }, { env: {} }).privateRedis).toBe('never');
    expect(parseConfig({ privateRedis: 'always' }, { env: { REDIS_URL: 'redis://b:2' } })).toMatchObject({
      privateRedis: 'never',
      redisUrl: 'redis://b:2',
    });
    expect(parseConfig({ redisCluster: null }, { env: {} }).privateRedis).toBe('auto');
    expect(() => parseConfig({ privateRedis: 'always', redisUrl: 'redis://h:1' }, { env: {} })).toThrow(
      /"privateRedis" is "always", but "redisUrl" names a Redis/,
    );
    expect(() => parseConfig({ privateRedis: 'sometimes' }, { env: {} })).toThrow(/"privateRedis"/);
    // the default address moves, and stays unnamed: auto still applies
    expect(parseConfig({}, { env: { SUNSET_DEFAULT_REDIS_URL: 'redis://127.0.0.1:1' } })).toMatchObject({
      privateRedis: 'auto',
      redisUrl: 'redis://127.0.0.1:1',
    });
    expect(parseConfig({ redisUrl: 'redis://h:2' }, { env: { SUNSET_DEFAULT_REDIS_URL: 'redis://127.0.0.1:1' } }).redisUrl).toBe(
      'redis://h:2',
    );
    expect(() => parseConfig({}, { env: { SUNSET_DEFAULT_REDIS_URL: 'nope' } })).toThrow(/SUNSET_DEFAULT_REDIS_URL/);
  });
  it('redisUrl takes a unix socket: unix:///absolute/path.sock, at most ?db=N', () => {
    for (const redisUrl of ['unix:///run/redis/redis.sock', 'unix:///tmp/a%20b/r.sock?db=2', 'unix:/tmp/r.sock'])
      expect(parseConfig({ redisUrl }, { env: {} }).redisUrl, redisUrl).toBe(redisUrl);
    for (const [redisUrl, why] of [
      ['unix://host/tmp/r.sock', /names a host/],
      ['unix:///', /names no socket path/],
      ['unix:///tmp/r.sock?db=x', /database "x"/],
      ['unix:///tmp/r.sock?password=p', /only \?db=N/],
    ] as const)
      expect(() => parseConfig({ redisUrl }, { env: {} }), redisUrl).toThrow(why);
    expect(redisAddress('unix:///tmp/a%20b/r.sock?db=2')).toEqual({ path: '/tmp/a b/r.sock', db: 2 });
    expect(redisAddress('redis://:pw@h:7/3')).toEqual({ host: 'h', port: 7, password: 'pw', db: 3 });
  });
  it('a named config file that is missing is an error; the implicit one is optional', () => {
    const dir = tempDir('sunset-cfg-');
    expect(() => loadConfig({ file: 'missing.json', cwd: dir, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ cwd: dir, env: { SUNSET_CONFIG: 'gone.json' } })).toThrow(/cannot be read/);
    expect(loadConfig({ cwd: dir, env: {} }).cap).toBe(35);
    writeFileSync(join(dir, 'sunset.config.json'), '{"cap": 7, "windows": {"grace": "500ms"}}');
    const c = loadConfig({ cwd: dir, env: {} });
    expect(c.cap).toBe(7);
    expect(c.windows.grace).toBe(500);
    writeFileSync(join(dir, 'bad.json'), '{ nope');
    expect(() => loadConfig({ file: 'bad.json', cwd: dir, env: {} })).toThrow(/not valid JSON/);
  });
});
