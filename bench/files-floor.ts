// The realfleet sweep's floor: the files `claude agents --json --all` reads, read whole (plain synchronous reads),
// and each session's /proc/<pid>/stat. Measured in the sweep's own process, between its sweeps (bench/sweep-child.ts),
// so the box's moods (a busy neighbour, a slower CPU) weigh on the floor as on the sweep.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function filesFloor(claudeDir: string): void {
  const read = (f: string) => {
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  };
  const list = (d: string) => {
    try {
      return readdirSync(d);
    } catch {
      return [] as string[];
    }
  };
  const sessions = list(join(claudeDir, 'sessions'));
  const texts = [
    ...sessions.map((f) => read(join(claudeDir, 'sessions', f))),
    ...list(join(claudeDir, 'jobs')).map((j) => read(join(claudeDir, 'jobs', j, 'state.json'))),
    read(join(claudeDir, 'daemon', 'roster.json')),
  ];
  for (const t of texts.slice(0, sessions.length)) {
    let pid = NaN;
    try {
      pid = Number(JSON.parse(t).pid);
    } catch {
      /* not a session file */
    }
    if (Number.isInteger(pid)) read(`/proc/${pid}/stat`);
  }
}

/** How busy the whole box is (0..1 of all its CPUs) over the next `ms`, from /proc/stat; null where it cannot be read. */
export async function boxBusy(ms: number): Promise<number | null> {
  const read = (): { idle: number; total: number } | null => {
    try {
      const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
      return { idle: f[3] + (f[4] || 0), total: f.reduce((a, b) => a + (b || 0), 0) };
    } catch {
      return null;
    }
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  if (!a || !b || b.total <= a.total) return null;
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}
