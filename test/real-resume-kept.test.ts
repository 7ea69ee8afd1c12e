// Resume, kept, on the REAL Claude Code CLI (sim/real): a background session sunset ended by its own exit path
// keeps a copy of its transcript; its transcript deleted the way Claude Code's cleanup (cleanupPeriodDays) does —
// the .jsonl unlinked — the CLI itself can no longer resume it, and `sunset resume` puts the copy back and resumes
// it with its context: the stand-in API receives the earlier conversation in the resumed request.
// This test owns its HOME, daemon, tmux socket and Redis, and ends every process it started (RealFleet.destroy).
import { existsSync, readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conversationTexts } from '../sim/real/messages-api.js';
import { claudeWrapper, realConfig, readTask, useRealFleet, writeTask } from './support/real.js';
import { startTestSunset } from './support/sunset.js';
import { runCli } from './support/cli.js';

const H = 3_600_000;
const ctx = useRealFleet();

describe('resume, kept, on the real Claude Code CLI', () => {
  it('a session sunset ended, its transcript deleted, is resumed by sunset resume with its context', async () => {
    const fleet = ctx.fleet;
    const bg = await fleet.startBackground('[[state:done]] remember the word PELICAN for later');
    writeTask(fleet, { id: 't-keep', state: 'done', sessionId: bg.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
    await fleet.waitForRow(bg.shortId, (r) => r?.state === 'done' && r.status === 'idle', 60_000);
    // `sunset resume` runs the resume command in the foreground for a background session: here one turn (-p)
    const claude = claudeWrapper(fleet);
    const cfg = realConfig(fleet, ctx.redis.url, {
      windows: { askWait: 200, retryWait: 500 },
      fleet: { resumeCommand: [claude, '--resume', '{sessionId}', '-p', 'which word was it?'] },
    });
    const cfgFile = join(fleet.root, 'sunset-kept.json');
    writeFileSync(cfgFile, JSON.stringify(cfg));

    ctx.sunset = await startTestSunset(cfg);
    await fleet.waitFor(() => Boolean(readTask(fleet, 't-keep').exitedAt), 120_000, 250);
    expect(await fleet.waitForExit(bg.pid, 10_000)).toBe(true);
    expect(ctx.sunset.exitCalls).toEqual([bg.shortId]);
    await fleet.waitFor(() => ctx.sunset!.events.some((e) => e.event === 'resume:kept' && e.sessionId === bg.sessionId), 20_000, 100);
    await ctx.sunset.close();
    ctx.sunset = null;

    // the transcript, where Claude Code keeps it; the copy holds it as it was at the exit
    const projects = join(fleet.claudeDir, 'projects');
    const folder = readdirSync(projects).find((d) => existsSync(join(projects, d, `${bg.sessionId}.jsonl`)));
    expect(folder).toBeDefined();
    const transcript = join(projects, folder!, `${bg.sessionId}.jsonl`);
    const atExit = readFileSync(transcript, 'utf8');
    expect(atExit).toContain('PELICAN');
    let listed = JSON.parse((await runCli(['exited', '--json', '--config', cfgFile])).stdout);
    expect(listed.entries).toMatchObject([
      { sessionId: bg.sessionId, resumeFrom: 'transcript', kept: { bytes: Buffer.byteLength(atExit) } },
    ]);

    // Claude Code's cleanup deletes the .jsonl; the CLI alone cannot resume it any more
    unlinkSync(transcript);
    const alone = await fleet.claude(['--resume', bg.sessionId, '-p', 'are you there?'], { cwd: bg.cwd, timeoutMs: 60_000 });
    expect(alone.code).toBe(1);
    expect(alone.stderr + alone.stdout).toMatch(/No conversation found/);
    listed = JSON.parse((await runCli(['exited', '--json', '--config', cfgFile])).stdout);
    // so it is not offered: only `sunset resume`, which puts the copy back first
    expect(listed.entries[0]).toMatchObject({ resumeFrom: 'kept copy', resume: [], sunsetResume: 'sunset resume t-keep' });

    // sunset resume puts the copy back, then resumes it: the resumed request carries the earlier conversation
    const before = fleet.api.requests().length;
    const r = await runCli(['resume', 't-keep', '--config', cfgFile], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`put sunset's kept copy back at ${transcript}`);
    const resumed = fleet.api
      .requests()
      .slice(before)
      .filter((q) => q.kind === 'main' && conversationTexts(q.body).some((t) => t.includes('which word was it?')));
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed[0]!.sessionId).toBe(bg.sessionId);
    expect(conversationTexts(resumed[0]!.body).some((t) => t.includes('remember the word PELICAN'))).toBe(true);
    // the resumed turn went on in the restored transcript
    const after = readFileSync(transcript, 'utf8');
    expect(after.startsWith(atExit)).toBe(true);
    expect(after).toContain('which word was it?');
    listed = JSON.parse((await runCli(['exited', '--json', '--config', cfgFile])).stdout);
    expect(listed.entries[0]).toMatchObject({ resumeFrom: 'transcript' });
  }, 600_000);
});
