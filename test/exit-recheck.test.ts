// The exit worker's re-check just before acting: on Claude Code's files (what the schedule's steps read), with
// the CLI's word asked only before a session is taken as gone. A `claude agents` call per moment of an exit wave
// cost seconds of wall and ~1 s of CPU each on a loaded box (docs/benchmarks.md, the exit wave).
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSunset, testConfig } from './support/sunset.js';
import { untilWithin, useFleet } from './support/use-fleet.js';

const H = 3_600_000;
const ctx = useFleet();
const task = (id: string) => ctx.fleet.readTask(id);
const until = untilWithin(20_000);

/** The fleet's roster command behind a wrapper that writes the time of each call to a file. */
function countedRoster(): { command: string[]; calls: () => number[] } {
  const file = join(ctx.fleet.root, 'roster-calls');
  appendFileSync(file, '');
  const command = ['sh', '-c', `date +%s%3N >> '${file}'; exec "$0" "$@"`, ...ctx.fleet.rosterCommand];
  const calls = () =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((x) => Number(x));
  return { command, calls };
}

describe("the exit worker's re-check", () => {
  it("stands on Claude Code's files: no `claude agents` call from the request to the exit", async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'r-files', state: 'active', sessionId: a.sessionId });
    const roster = countedRoster();
    const cfg = testConfig(ctx.fleet, { fleet: { rosterFrom: 'files', rosterCommand: roster.command }, windows: { reconcileEvery: H } });
    ctx.sunset = await startTestSunset(cfg);
    ctx.fleet.writeTask({ ...task('r-files'), id: 'r-files', state: 'done' });
    await until('exitedAt latched', () => Boolean(task('r-files').exitedAt));
    const t = task('r-files');
    expect(ctx.fleet.ended(a)).toMatchObject([{ how: 'stop' }]);
    const requested = Date.parse(t.exitRequestedAt);
    const exited = Date.parse(t.exitedAt);
    expect(roster.calls().length).toBeGreaterThan(0); // the start's reconcile: the CLI's word checks the files
    expect(roster.calls().filter((at) => at >= requested && at <= exited)).toEqual([]);
    const calling = ctx.sunset.events.find((e) => e.event === 'exit:calling' && e.taskId === 'r-files');
    expect(calling).toMatchObject({ verdict: 'eligible' });
  });

  it("takes a session the files show ended as gone only on the CLI's word", async () => {
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'r-first', state: 'active', sessionId: a.sessionId });
    ctx.fleet.writeTask({ id: 'r-second', state: 'active', sessionId: b.sessionId });
    const roster = countedRoster();
    // one exit per 4 s: the second's exit job waits for its slot while its session leaves by itself
    const cfg = testConfig(ctx.fleet, {
      fleet: { rosterFrom: 'files', rosterCommand: roster.command },
      exitRate: { max: 1, per: 4000 },
      windows: { reconcileEvery: H },
    });
    ctx.sunset = await startTestSunset(cfg);
    ctx.fleet.writeTask({ ...task('r-first'), id: 'r-first', state: 'done' });
    ctx.fleet.writeTask({ ...task('r-second'), id: 'r-second', state: 'done' });
    await until('both requested', () => Boolean(task('r-first').exitRequestedAt && task('r-second').exitRequestedAt));
    const calling = () => ctx.sunset!.events.find((e) => e.event === 'exit:calling');
    await until('one exit called', () => Boolean(calling()));
    const first = calling()!;
    const late = first.taskId === 'r-first' ? { id: 'r-second', s: b } : { id: 'r-first', s: a };
    const before = roster.calls().length;
    expect((await ctx.fleet.stop(late.s)).code).toBe(0); // it leaves on its own (the CLI's stop, not sunset's)
    await until('the late one latched exitedAt', () => Boolean(task(late.id).exitedAt));
    await until('its exit job finished as gone', () => ctx.sunset!.events.some((e) => e.taskId === late.id && e.event === 'exit:gone'));
    expect(roster.calls().length).toBeGreaterThan(before); // the CLI was asked before "gone" was taken
    expect(ctx.sunset.exitCalls).toEqual([first.taskId === 'r-first' ? a.id : b.id]); // no call for the one gone
  });
});
