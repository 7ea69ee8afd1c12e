// One full GC once a big sweep is let go (src/heap.ts): only where node exposes gc, and at most one a GC_EVERY_MS.
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage, GC_EVERY_MS } from '../src/heap.js';

const g = globalThis as { gc?: unknown };
const had = g.gc;
afterEach(() => {
  g.gc = had;
});

describe('collectGarbage', () => {
  it('does nothing where node does not expose gc', () => {
    g.gc = undefined;
    expect(collectGarbage(1e12)).toBe(false);
  });
  it('runs gc at most once a GC_EVERY_MS', () => {
    let runs = 0;
    g.gc = () => runs++;
    const t = 2e12;
    expect(collectGarbage(t)).toBe(true);
    expect(collectGarbage(t + GC_EVERY_MS - 1)).toBe(false);
    expect(runs).toBe(1);
    expect(collectGarbage(t + GC_EVERY_MS)).toBe(true);
    expect(runs).toBe(2);
  });
});
