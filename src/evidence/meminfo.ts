// Memory pressure: MemAvailable from /proc/meminfo, against the configured floor.
import { readFileSync } from 'node:fs';

/** Bytes the kernel says are available without swapping; null when /proc/meminfo cannot be read. */
export function memAvailable(file = '/proc/meminfo'): number | null {
  try {
    const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(readFileSync(file, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Under pressure: available memory is known and below the floor (a floor of null never is). */
export function underPressure(floorBytes: number | null, available = memAvailable()): boolean {
  return floorBytes !== null && available !== null && available < floorBytes;
}

/**
 * BullMQ priority for an exit job: under memory pressure the largest RSS goes first (1 is the highest
 * priority). The doctrine does not bend — only the order of what is already eligible changes.
 */
export function exitPriority(rssBytes: number | null | undefined, pressure: boolean): number | undefined {
  if (!pressure) return undefined;
  const mb = Math.max(0, Math.round((rssBytes ?? 0) / (1024 * 1024)));
  return Math.max(1, 2_000_000 - mb);
}
