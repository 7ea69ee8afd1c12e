// `npm run real-fleet` (sim/real/trial.ts), as a new user runs it: real Claude Code sessions on the stand-in
// Messages API, sunset on them, what happened to each printed, and nothing of it left afterwards — no process of
// its fleet (found by its HOME in their environment, or its folder in their argv), no tmux server, no
// redis-server answering where it ran one, no folder.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processesUnder, redisAnswers } from './support/leftovers.js';

const ROOT = join(import.meta.dirname, '..');

function run(
  env: NodeJS.ProcessEnv = {},
  o: { interruptAt?: RegExp } = {},
): Promise<{ code: number | null; out: string; signalledAt: number | null; endedAt: number }> {
  return new Promise((resolve) => {
    let signalledAt: number | null = null;
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'sim', 'real', 'trial.ts')], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a process group of its own: a Ctrl-C is sent to the group, as a terminal does
    });
    let out = '';
    const seen = (b: Buffer) => {
      out += b.toString();
      if (o.interruptAt && signalledAt === null && o.interruptAt.test(out)) {
        signalledAt = Date.now();
        process.kill(-child.pid!, 'SIGINT');
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('close', (code) => resolve({ code, out, signalledAt, endedAt: Date.now() }));
  });
}

describe('npm run real-fleet', () => {
  it('real sessions: the finished ones leave by their own exit path, the one asking a question stays; nothing is left running', async () => {
    const { code, out } = await run();
    expect(out).toMatch(/sunset on the real Claude Code CLI \d+\.\d+\.\d+/);
    const root = /^fleet: (\S+) /m.exec(out)?.[1];
    const socket = /tmux -L (\S+)`/.exec(out)?.[1];
    const redisUrl = /Redis: (redis:\/\/\S+)$/m.exec(out)?.[1];
    expect(root && socket && redisUrl, out).toBeTruthy();
    for (const label of ['changelog', 'bump-version'])
      expect(out).toMatch(
        new RegExp(
          `^${label} \\(background, finishes\\) +left by its own exit path \\(\`claude stop\`\\) [\\d.]+ s after its task closed, asked once first$`,
          'm',
        ),
      );
    expect(out).toMatch(/^rename \(interactive, finishes\) +left by its own exit path \(`\/exit` typed into its pane\)/m);
    expect(out).toMatch(/^release \(background, asks a question\) +still running, protected: .*job-blocked.* — never asked$/m);
    expect(out).toMatch(/ended: every process it started \(by pid\), its tmux server, its redis-server; its folder removed\./);
    expect(code, out).toBe(0);
    expect(processesUnder(root!)).toEqual([]);
    expect(existsSync(root!)).toBe(false);
    expect(spawnSync('tmux', ['-L', socket!, 'list-sessions'], { stdio: 'ignore' }).status).not.toBe(0);
    expect(await redisAnswers(redisUrl!)).toBe(false);
  }, 400_000);

  it('Ctrl-C while its sessions start: it ends them, sunset and its Redis, and exits 130; nothing is left', async () => {
    const r = await run({}, { interruptAt: /starting 4 real sessions/ });
    const root = /^fleet: (\S+) /m.exec(r.out)?.[1];
    const socket = /tmux -L (\S+)`/.exec(r.out)?.[1];
    const redisUrl = /Redis: (redis:\/\/\S+)$/m.exec(r.out)?.[1];
    expect(r.signalledAt, r.out).not.toBeNull();
    expect(r.out).toMatch(/Interrupted: ending the sessions, sunset and its Redis/);
    expect(r.out).toMatch(/ended: every process it started/);
    expect(r.out).not.toMatch(/── what happened/);
    expect(r.code, r.out).toBe(130);
    expect(processesUnder(root!)).toEqual([]);
    expect(existsSync(root!)).toBe(false);
    expect(spawnSync('tmux', ['-L', socket!, 'list-sessions'], { stdio: 'ignore' }).status).not.toBe(0);
    expect(await redisAnswers(redisUrl!)).toBe(false);
  }, 400_000);

  it('with the real CLI not installed, it says how to get it and exits 1, starting nothing', async () => {
    const { code, out } = await run({ SUNSET_CLAUDE_CODE_CACHE: join(ROOT, 'no-such-cache') });
    expect(code).toBe(1);
    expect(out).toMatch(/The real Claude Code CLI [\d.]+ is not installed/);
    expect(out).toMatch(/npm install --prefix \S+no-such-cache\S* --no-save --no-audit --no-fund @anthropic-ai\/claude-code@[\d.]+/);
    expect(out).not.toMatch(/^fleet: /m);
  }, 60_000);
});
