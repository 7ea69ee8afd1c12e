// The roster from Claude Code's own files (src/evidence/file-roster.ts) on the test fleet, whose agents keep
// sessions/<pid>.json as the real CLI does: a running session's file that does not parse (caught mid-write, or a
// shape not known) makes its session unknown, never absent — the files are not the roster then, the CLI is
// asked, and the session is protected (probe-failed) rather than taken for gone.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFileRoster } from '../src/evidence/file-roster.js';
import { readProcTable } from '../src/evidence/proc.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { testConfig } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { waitFor } from '../sim/fleet/fleet.js';

const ctx = useFleet();

describe("the roster from Claude Code's files", () => {
  it('lists the live sessions the CLI lists; a file that does not parse makes the CLI the roster and its session protected, not gone', async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: 3_600_000 });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: 3_600_000 });
    const file = join(ctx.fleet.claudeDir, 'sessions', `${a.pid}.json`);
    expect(await waitFor(() => existsSync(file) && existsSync(join(ctx.fleet.claudeDir, 'sessions', `${b.pid}.json`)), 10_000)).toBe(true);
    const good = await readFileRoster(ctx.fleet.claudeDir, await readProcTable());
    expect(
      good.ok &&
        good.rows
          .filter((r) => r.pid !== null)
          .map((r) => r.pid)
          .sort(),
    ).toEqual([a.pid, b.pid].sort());

    const cfg = testConfig(ctx.fleet, { fleet: { rosterFrom: 'files' } });
    expect((await gatherFleet(cfg)).rosterFrom).toBe('files');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.slice(0, Math.floor(text.length / 2))); // torn
    const torn = await readFileRoster(ctx.fleet.claudeDir, await readProcTable());
    expect(torn).toMatchObject({ ok: false, error: expect.stringContaining(`${a.pid}.json does not parse`) });
    const snap = await gatherFleet(cfg);
    expect(snap.rosterFrom).toBe('cli');
    const va = snap.sessions.find((s) => s.sessionId === a.sessionId)!;
    expect(va).toMatchObject({ verdict: 'protected', live: true });
    expect(va.reasons).toContain('probe-failed');
    expect(va.evidence.probeFailures).toContain('session-file');
    expect(snap.sessions.find((s) => s.sessionId === b.sessionId)!.evidence.probeFailures).not.toContain('session-file');
    // written whole again: the files are the roster again (a torn read is no reason to stop reading them)
    writeFileSync(file, text);
    expect((await gatherFleet(cfg)).rosterFrom).toBe('files');
  });
});
