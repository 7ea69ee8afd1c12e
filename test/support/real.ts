// sunset pointed at a fleet of the REAL Claude Code CLI (sim/real/real-fleet.ts): the fleet's own HOME, daemon,
// tmux socket and stand-in Messages API; the test's own redis-server. sunset runs the CLI through a small
// wrapper that carries the fleet's environment (a person runs sunset as the user whose HOME holds the fleet).
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config.js';
import { afterAll, beforeAll } from 'vitest';
import { RealFleet } from '../../sim/real/real-fleet.js';
import { ownRedis, type OwnRedis } from './redis.js';
import type { TestSunset } from './sunset.js';
import { claudeWrapper } from '../../sim/real/claude-wrapper.js';
import { FAST_WINDOWS, uniqueHost } from './sunset.js';

export { claudeWrapper };

/** A sunset config for the real fleet: its folders, its tmux socket, the wrapper; windows compressed. */
export function realConfig(fleet: RealFleet, redisUrl: string, overrides: Record<string, any> = {}): Config {
  const claude = claudeWrapper(fleet);
  const { windows, fleet: fleetOverrides, ...rest } = overrides;
  return parseConfig(
    {
      host: uniqueHost(),
      redisUrl,
      stateDir: join(fleet.root, 'sunset-state'),
      probeTimeout: 20_000,
      exitRate: { max: 20, per: 100 },
      log: { level: 'debug' },
      fleet: {
        rosterCommand: [claude, 'agents', '--json', '--all'],
        claudeCommand: claude,
        claudeDir: fleet.claudeDir,
        projectsDir: join(fleet.claudeDir, 'projects'),
        tasksDir: join(fleet.root, 'tasks'),
        inboxDir: join(fleet.root, 'inbox'),
        tmuxSocket: fleet.tmuxSocket,
        ...fleetOverrides,
      },
      windows: { ...FAST_WINDOWS, silence: 300, grace: 200, exitConfirm: 20_000, ...windows },
      ...rest,
    },
    { env: {} },
  );
}

/** A Driver's task file in the fleet's tasks folder. */
export function writeTask(fleet: RealFleet, t: Record<string, unknown> & { id: string }): string {
  const dir = join(fleet.root, 'tasks');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${t.id}.json`);
  const tmp = join(dir, `.${t.id}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(t, null, 2)}\n`);
  renameSync(tmp, file);
  return file;
}

export function readTask(fleet: RealFleet, id: string): Record<string, any> {
  return JSON.parse(readFileSync(join(fleet.root, 'tasks', `${id}.json`), 'utf8'));
}

export interface RealFleetTest {
  readonly fleet: RealFleet;
  readonly redis: OwnRedis;
  /** The sunset a test started, if any: closed after the file, before its fleet goes. */
  sunset: TestSunset | null;
}

/**
 * One real fleet (its own HOME, daemon, tmux socket, stand-in API) and one redis-server of its own for the
 * calling test file; after it: the sunset closed, every process of the fleet ended by pid, the server stopped.
 */
export function useRealFleet(): RealFleetTest {
  let fleet: RealFleet | null = null;
  let redis: OwnRedis | null = null;
  const t: RealFleetTest = {
    get fleet() {
      if (!fleet) throw new Error('useRealFleet: no fleet (its beforeAll failed?)');
      return fleet;
    },
    get redis() {
      if (!redis) throw new Error('useRealFleet: no redis-server (its beforeAll failed?)');
      return redis;
    },
    sunset: null,
  };
  beforeAll(async () => {
    fleet = await RealFleet.create();
    redis = await ownRedis();
  }, 300_000);
  afterAll(async () => {
    await t.sunset?.close();
    await fleet?.destroy();
    await redis?.destroy();
  }, 120_000);
  return t;
}
