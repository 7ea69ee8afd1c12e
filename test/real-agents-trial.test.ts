// `npm run real-agents` (sim/agents/trial.ts), as a new user runs it: real Codex and Gemini CLI sessions on their
// stand-in model APIs, sunset on them, what happened to each printed, and nothing of it left afterwards — no process
// of either fleet (found by its HOME in their environment, or its folder in their argv), no tmux server, no
// redis-server answering where it ran one, no folder. What test/real-trial.test.ts is for `npm run real-fleet`.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processesUnder, redisAnswers } from './support/leftovers.js';

const ROOT = join(import.meta.dirname, '..');

function run(env: NodeJS.ProcessEnv = {}, o: { interruptAt?: RegExp } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'sim', 'agents', 'trial.ts')], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a process group of its own: a Ctrl-C is sent to the group, as a terminal does
    });
    let out = '';
    let signalled = false;
    const seen = (b: Buffer) => {
      out += b.toString();
      if (o.interruptAt && !signalled && o.interruptAt.test(out)) {
        signalled = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Nothing the trial printed it started is left: processes, folders, the tmux server, the redis-server. */
async function nothingLeft(out: string): Promise<void> {
  const roots = [...out.matchAll(/^(?:codex|gemini) fleet: (\S+) /gm), ...out.matchAll(/^sunset's folder: (\S+) /gm)].map((m) => m[1]);
  const socket = /tmux -L (\S+)`/.exec(out)?.[1];
  const redisUrl = /Redis: (redis:\/\/\S+)$/m.exec(out)?.[1];
  expect(roots.length === 3 && socket && redisUrl, out).toBeTruthy();
  for (const root of roots) {
    expect(processesUnder(root)).toEqual([]);
    expect(existsSync(root)).toBe(false);
  }
  expect(spawnSync('tmux', ['-L', socket!, 'list-sessions'], { stdio: 'ignore' }).status).not.toBe(0);
  expect(await redisAnswers(redisUrl!)).toBe(false);
}

describe('npm run real-agents', () => {
  it('real Codex and Gemini CLI sessions: the finished ones leave by `/quit`, the held ones stay; nothing is left running', async () => {
    const { code, out } = await run();
    expect(out).toMatch(/sunset on the real Codex CLI \d+\.\d+\.\d+ and Gemini CLI \d+\.\d+\.\d+/);
    for (const cli of ['codex', 'gemini']) {
      expect(out).toMatch(
        new RegExp(
          `^${cli} \\(finishes\\) +left by its own exit path \\(\`/quit\` typed into its pane\\) [\\d.]+ s after its task closed, asked once first$`,
          'm',
        ),
      );
      expect(out).toMatch(new RegExp(`^${cli} \\(held open\\) +still running, never asked — protected: .*task-not-terminal`, 'm'));
    }
    expect(out).toMatch(/ended: every process it started \(by pid\), its tmux server, its redis-server; its folders removed\./);
    expect(code, out).toBe(0);
    await nothingLeft(out);
  }, 400_000);

  it('Ctrl-C while its sessions start: it ends them, sunset and its Redis, and exits 130; nothing is left', async () => {
    const { code, out } = await run({}, { interruptAt: /starting 4 real sessions/ });
    expect(out).toMatch(/Interrupted: ending the sessions, sunset and its Redis/);
    expect(out).toMatch(/ended: every process it started/);
    expect(out).not.toMatch(/── what happened/);
    expect(code, out).toBe(130);
    await nothingLeft(out);
  }, 400_000);

  it('when a CLI cannot be installed, it names the command that installs it by hand and exits 1, starting nothing', async () => {
    // an empty cache and an npm that fails: no network is needed, nothing is installed
    const dir = mkdtempSync(join(tmpdir(), 'sunset-real-agents-test-'));
    try {
      mkdirSync(join(dir, 'bin'));
      writeFileSync(join(dir, 'bin', 'npm'), '#!/bin/sh\necho "npm error code E404" >&2\nexit 1\n');
      chmodSync(join(dir, 'bin', 'npm'), 0o755);
      const { code, out } = await run({ SUNSET_AGENTS_CACHE: join(dir, 'cache'), PATH: `${join(dir, 'bin')}:${process.env.PATH}` });
      expect(out).toMatch(/@openai\/codex [\d.]+: installing into \S+cache\/codex\/[\d.]+/);
      expect(out).toMatch(/@openai\/codex [\d.]+ could not be installed:/);
      expect(out).toMatch(/^ {2}npm install --prefix \S+cache\/codex\/[\d.]+ --no-save --no-audit --no-fund @openai\/codex@[\d.]+$/m);
      expect(out).not.toMatch(/fleet: /);
      expect(out).not.toMatch(/ended: /);
      expect(code, out).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
