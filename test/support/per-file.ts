// After every test file: the keys of every host its tests made are dropped from the run's Redis — whatever a
// test left (a job queued for a worker that never ran, a lease, a scheduler), nothing stays behind; and the temp
// folders its tests made with tempDir() are removed.
import { afterAll } from 'vitest';
import { dropHost, testHosts } from './sunset.js';
import { fleetHosts } from '../../sim/fleet/fleet.js';
import { removeTempDirs } from './temp-dir.js';

afterAll(async () => {
  removeTempDirs();
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  for (const h of [...testHosts, ...fleetHosts]) await dropHost(url, h);
  testHosts.clear();
  fleetHosts.clear();
});
