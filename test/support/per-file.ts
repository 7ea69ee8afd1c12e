// After every test file: the keys of every host its tests made are dropped from the run's Redis — whatever a
// test left (a job queued for a worker that never ran, a lease, a scheduler), nothing stays behind.
import { afterAll } from 'vitest';
import { dropHost, testHosts } from './sunset.js';
import { fleetHosts } from '../../sim/fleet/fleet.js';

afterAll(async () => {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  for (const h of [...testHosts, ...fleetHosts]) await dropHost(url, h);
  testHosts.clear();
  fleetHosts.clear();
});
