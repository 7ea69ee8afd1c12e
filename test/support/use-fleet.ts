// One test fleet per test, and the doctrine checked after every test: no agent ever received a signal (D1).
import { afterEach, beforeEach, expect } from 'vitest';
import { TestFleet, waitFor } from '../../sim/fleet/fleet.js';
import type { TestSunset } from './sunset.js';

type Step = () => unknown;

export interface FleetTest {
  /** This test's fleet: a new one before each test, destroyed after it. */
  readonly fleet: TestFleet;
  /** The sunset this test started, if any: closed after the test, before its fleet goes. */
  sunset: TestSunset | null;
}

/**
 * Registers, in the calling file or describe, a new fleet before each test and, after each test:
 * `first` (a test's own processes, pages, servers), close the sunset, `after`, read the fleet's signals,
 * destroy the fleet, and expect the signals to be none (D1). `hookTimeout` is for the after-each step.
 */
export function useFleet(o: { first?: Step; after?: Step; hookTimeout?: number } = {}): FleetTest {
  let fleet: TestFleet | null = null;
  const t: FleetTest = {
    get fleet() {
      if (!fleet) throw new Error('useFleet: there is a fleet only while a test runs');
      return fleet;
    },
    sunset: null,
  };
  beforeEach(async () => {
    fleet = await TestFleet.create();
  });
  afterEach(async () => {
    await o.first?.();
    await t.sunset?.close();
    t.sunset = null;
    await o.after?.();
    const f = fleet;
    fleet = null;
    if (!f) return; // an earlier before-each step failed: no fleet was made
    const signals = f.signals();
    await f.destroy();
    expect(signals).toEqual([]); // D1: no agent ever received a signal
  }, o.hookTimeout);
  return t;
}

export type Until = (what: string, cond: () => boolean | Promise<boolean>, ms?: number) => Promise<void>;

/** An `until` that waits up to `defaultMs` (unless told otherwise), checking every `everyMs`. */
export function untilWithin(defaultMs: number, everyMs?: number): Until {
  return async (what, cond, ms = defaultMs) => {
    if (!(await waitFor(cond, ms, everyMs))) throw new Error(`timed out waiting for: ${what}`);
  };
}

/** Wait for `cond` (30 s unless told otherwise), or fail naming what was awaited. */
export const until: Until = untilWithin(30_000);
