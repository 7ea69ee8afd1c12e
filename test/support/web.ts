// sunset with its web role on a test fleet (kept apart from sunset.ts: only the web tests load the server).
import type { TestFleet } from '../../sim/fleet/fleet.js';
import type { UpOptions } from '../../src/pipeline/up.js';
import { startWeb, type Web } from '../../src/web/server.js';
import { startTestSunset, testConfig, type TestSunset } from './sunset.js';

export type WebSunset = TestSunset & { web: Web };

/** Start sunset with `roles` (the web among them) on a free port; `config` as for testConfig. */
export async function startWebSunset(fleet: TestFleet, roles: UpOptions['roles'], config: Record<string, any> = {}): Promise<WebSunset> {
  return (await startTestSunset(testConfig(fleet, { web: { port: 0 }, ...config }), { roles, startWeb })) as unknown as WebSunset;
}
