// The real-CLI harness (sim/real/) proven on the REAL Claude Code binary: no mock of Claude Code anywhere.
// One fleet for the file (each test uses its own sessions and filters the shared request log by session);
// the last test destroys it and checks that nothing is left.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION, ensureClaudeCode, installCommand } from '../sim/real/install.js';
import { RealFleet, cmdline, pidAlive } from '../sim/real/real-fleet.js';

let fleet: RealFleet;

beforeAll(async () => {
  fleet = await RealFleet.create();
}, 120_000);

afterAll(async () => {
  await fleet?.destroy();
}, 60_000);

describe('install', () => {
  it('ensureClaudeCode gives the pinned real binary of @anthropic-ai/claude-code', async () => {
    expect(CLAUDE_CODE_PACKAGE).toBe('@anthropic-ai/claude-code');
    expect(CLAUDE_CODE_VERSION).toBe('2.1.328');
    const bin = await ensureClaudeCode();
    expect(bin).toMatch(/@anthropic-ai\/claude-code\/bin\/claude\.exe$/);
    expect(bin).toBe(fleet.binary);
    const r = await fleet.claude(['--version']);
    expect(r.stdout.trim()).toBe('2.1.328 (Claude Code)');
  });

  it('an unreachable registry fails plainly and names the command to run by hand', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'sunset-cc-noreg-'));
    const saved = { cache: process.env.SUNSET_CLAUDE_CODE_CACHE, reg: process.env.npm_config_registry };
    process.env.SUNSET_CLAUDE_CODE_CACHE = cache;
    process.env.npm_config_registry = 'http://127.0.0.1:9/'; // nothing listens on the discard port
    try {
      const err = await ensureClaudeCode().then(
        () => null,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect(err!.message).toContain('the npm registry cannot be reached');
      expect(err!.message).toContain(installCommand());
      expect(existsSync(join(cache, CLAUDE_CODE_VERSION))).toBe(false); // nothing half-installed left in place
    } finally {
      if (saved.cache === undefined) delete process.env.SUNSET_CLAUDE_CODE_CACHE;
      else process.env.SUNSET_CLAUDE_CODE_CACHE = saved.cache;
      if (saved.reg === undefined) delete process.env.npm_config_registry;
      else process.env.npm_config_registry = saved.reg;
      rmSync(cache, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('the real CLI under the harness', () => {
  it('a background session starts and shows pid, id and state', async () => {
    const bg = await fleet.startBackground('[[state:working]] index the repository');
    expect(bg.shortId).toMatch(/^[0-9a-f]{8}$/);
    expect(bg.sessionId.startsWith(bg.shortId)).toBe(true);
    const row = await fleet.rosterRow(bg.shortId);
    expect(row).toMatchObject({ pid: bg.pid, id: bg.shortId, kind: 'background', sessionId: bg.sessionId, cwd: bg.cwd });
    expect(typeof row!.state).toBe('string');
    expect(['idle', 'busy', 'waiting']).toContain(row!.status);
    expect(typeof row!.startedAt).toBe('number');
    const file = fleet.sessionFile(bg.pid);
    expect(file).toMatchObject({ pid: bg.pid, sessionId: bg.sessionId, kind: 'bg', jobId: bg.shortId });
    const procs = fleet.processes();
    expect(procs.find((p) => p.pid === bg.pid)?.role).toBe('session');
    const host = fleet.ptyHostOf(bg.pid);
    expect(host).not.toBeNull();
    expect(procs.find((p) => p.pid === host)).toMatchObject({ role: 'pty-host', shortId: bg.shortId });
    expect(procs.filter((p) => p.role === 'daemon')).toHaveLength(1);
    // the prompt reached the stand-in API once, for this session (a loaded box may take a moment to send it)
    await fleet.waitFor(() => fleet.api.timesSent('index the repository', bg.sessionId) >= 1, 30_000);
    expect(fleet.api.timesSent('index the repository', bg.sessionId)).toBe(1);
  });

  it('an interactive session in a tmux pane shows without id and state', async () => {
    const s = await fleet.startInteractive(undefined, { name: 'pane-one' });
    const row = await fleet.rosterRow(s.pid);
    expect(row).toMatchObject({ pid: s.pid, kind: 'interactive', sessionId: s.sessionId, cwd: s.cwd, name: 'pane-one' });
    expect(row).not.toHaveProperty('id');
    expect(row).not.toHaveProperty('state');
    const file = fleet.sessionFile(s.pid);
    expect(file?.kind).toBe('interactive');
    expect(file?.tmux).toMatch(new RegExp(`^${s.tmuxSession}:@\\d+\\.${s.paneId}$`));
    expect(fleet.processes().find((p) => p.pid === s.pid)?.role).toBe('interactive');
  });

  it('[[state:done]] makes the background job done (the classifier said so)', async () => {
    const bg = await fleet.startBackground('[[state:done]] write the summary');
    const row = await fleet.waitForRow(bg.shortId, (r) => r?.state === 'done', 30_000);
    expect(row?.status).toBe('idle');
    const classified = fleet.api.requests({ kind: 'classifier', sessionId: bg.sessionId });
    expect(classified.length).toBeGreaterThan(0);
    expect(classified[0].answer?.json).toMatchObject({ state: 'done' });
    expect(fleet.jobState(bg.shortId)).toMatchObject({ state: 'done', output: { result: 'stand-in result' } });
  });

  it('[[state:blocked …]] makes it blocked with status idle and the needs text', async () => {
    const bg = await fleet.startBackground('[[state:blocked needs=Which branch should I use?]] rebase it');
    const row = await fleet.waitForRow(bg.shortId, (r) => r?.state === 'blocked', 30_000);
    expect(row?.status).toBe('idle');
    const job = fleet.jobState(bg.shortId);
    expect(job).toMatchObject({ state: 'blocked', tempo: 'blocked', needs: 'Which branch should I use?' });
    expect(job?.needsAsk?.text).toBe('Which branch should I use?');
  });

  it('[[bg:sleep 600]] leaves work in flight', async () => {
    const bg = await fleet.startBackground('[[bg:sleep 600]] start the dev server');
    let job: Record<string, any> | null = null;
    expect(await fleet.waitFor(() => (job = fleet.jobState(bg.shortId))?.inFlight?.tasks > 0, 30_000)).toBe(true);
    expect(job!.inFlight).toMatchObject({ tasks: 1, kinds: ['local_bash'] });
    // the shell runs as a child of the session process, under our HOME
    const sleepers = fleet.processes().filter((p) => p.argv[0] === 'sleep' && p.argv[1] === '600');
    expect(sleepers).toHaveLength(1);
    // a session with a task in flight reads busy after its turn
    expect((await fleet.rosterRow(bg.shortId))?.status).toBe('busy');
  });

  it('a permission prompt makes the row waiting', async () => {
    const bg = await fleet.startBackground('[[bash:touch made-by-test]] make a file', { args: ['--permission-mode', 'manual'] });
    const row = await fleet.waitForRow(bg.shortId, (r) => r?.status === 'waiting', 30_000);
    expect(row).toMatchObject({ waitingFor: 'permission prompt', state: 'blocked' });
    expect(existsSync(join(bg.cwd, 'made-by-test'))).toBe(false);
  });

  it('claude stop ends a background session (its pty host too)', async () => {
    const bg = await fleet.startBackground('[[state:working]] keep at it');
    await fleet.waitForRow(bg.shortId, (r) => r?.status === 'idle', 30_000);
    const host = fleet.ptyHostOf(bg.pid);
    const r = await fleet.stop(bg.shortId);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`stopped ${bg.shortId}`);
    expect(await fleet.waitForExit(bg.pid, 10_000)).toBe(true);
    expect(await fleet.waitForExit(host!, 10_000)).toBe(true);
    const row = await fleet.rosterRow(bg.shortId);
    expect(row).toBeDefined();
    expect(row).not.toHaveProperty('pid');
    expect(row).not.toHaveProperty('status');
    expect(row?.state).toBe('stopped');
  });

  it('/exit typed into the pane ends an interactive session and closes its tmux session', async () => {
    const s = await fleet.startInteractive('[[reply:Hello there.]] say hello');
    // the reply line ("● Hello there."), not the prompt echoed above it ("❯ [[reply:Hello there.]] say hello"),
    // which is on screen before any request is sent: a loaded CI run once typed /exit before the turn began
    await fleet.waitForScreen(s.paneId, /^\s*● Hello there\./m, 30_000);
    await fleet.waitForRow(s.pid, (r) => r?.status === 'idle', 20_000);
    fleet.typeInto(s.paneId, '/exit');
    expect(await fleet.waitForExit(s.pid, 10_000)).toBe(true);
    expect(await fleet.waitFor(() => !fleet.hasTmuxSession(s.tmuxSession), 5_000)).toBe(true);
    expect(await fleet.rosterRow(s.sessionId)).toBeUndefined();
    // /exit is a command, not a prompt: the model never saw it. (Read across every request: the stand-in API
    // keys a request by the session id in its metadata, which a loaded run once saw without it.)
    const seen = fleet.api.userTextsSeen();
    expect(seen).toContain('[[reply:Hello there.]] say hello');
    expect(seen.filter((t) => t.includes('/exit'))).toEqual([]);
  });

  it('a draft in the input box takes /exit as more text: the whole goes to the model', async () => {
    const s = await fleet.startInteractive(undefined);
    fleet.typeDraft(s.paneId, 'half a thought ');
    await fleet.waitForScreen(s.paneId, /half a thought/, 5_000);
    fleet.typeInto(s.paneId, '/exit');
    expect(await fleet.api.waitForRequest((r) => r.kind === 'main' && r.sessionId === s.sessionId, 15_000)).not.toBeNull();
    expect(fleet.api.userTextsSeen(s.sessionId)).toEqual(['half a thought /exit']);
    expect(pidAlive(s.pid)).toBe(true);
  });

  it('claude --resume <sessionId> -p sends the earlier conversation', async () => {
    const bg = await fleet.startBackground('[[state:done]] remember the word PELICAN-7');
    await fleet.waitForRow(bg.shortId, (r) => r?.state === 'done', 30_000);
    // a running background session refuses to be resumed elsewhere
    const refused = await fleet.claude(['--resume', bg.sessionId, '-p', 'too early'], { cwd: bg.cwd });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('running in the background');
    expect((await fleet.stop(bg.shortId)).code).toBe(0);
    expect(await fleet.waitForExit(bg.pid, 10_000)).toBe(true);
    const r = await fleet.claude(['--resume', bg.sessionId, '-p', 'which word was it?'], { cwd: bg.cwd });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Stand-in reply to: which word was it?');
    const resumed = fleet.api.requests((q) => q.kind === 'main' && q.prompt === 'which word was it?');
    expect(resumed).toHaveLength(1);
    expect(resumed[0].sessionId).toBe(bg.sessionId);
    const texts = resumed[0].body.messages.flatMap((m: any) =>
      typeof m.content === 'string' ? [m.content] : m.content.filter((b: any) => b.type === 'text').map((b: any) => b.text),
    );
    expect(texts.some((t: string) => t.includes('remember the word PELICAN-7'))).toBe(true);
    expect(texts.some((t: string) => t.includes('Stand-in reply to: remember the word PELICAN-7'))).toBe(true);
    // sent as a new prompt exactly once (the resume carried it as history only)
    expect(fleet.api.timesSent('remember the word PELICAN-7')).toBe(1);
    expect(fleet.api.timesSent('which word was it?')).toBe(1);
  });

  it('attach by short id and by name, and the agent view, show up as processes with their argv', async () => {
    const bg = await fleet.startBackground('[[state:done]] the attach target', { name: 'attach-target' });
    await fleet.waitForRow(bg.shortId, (r) => r?.state === 'done', 30_000);
    const byId = await fleet.attach(bg.shortId);
    const byName = await fleet.attach('attach-target');
    const view = await fleet.agentView();
    try {
      expect(byId.argv).toEqual([fleet.binary, 'attach', bg.shortId]);
      expect(byName.argv).toEqual([fleet.binary, 'attach', 'attach-target']);
      expect(view.argv).toEqual([fleet.binary, 'agents']);
      await fleet.waitForScreen(byId.paneId, /the attach target/, 15_000);
      await fleet.waitForScreen(byName.paneId, /the attach target/, 15_000);
      await fleet.waitForScreen(view.paneId, /attach-target/, 15_000);
      const procs = fleet.processes();
      const role = (pid: number): string | undefined => procs.find((p) => p.pid === pid)?.role;
      expect(role(byId.pid)).toBe('attach');
      expect(role(byName.pid)).toBe('attach');
      expect(role(view.pid)).toBe('agent-view');
      expect(cmdline(byName.pid)).toEqual(byName.argv);
      const mem = fleet.memory();
      expect(mem.clients.pids.sort()).toEqual([byId.pid, byName.pid, view.pid].sort());
      expect(mem.daemon.pids).toHaveLength(1);
      expect(mem.sessions.pids).toContain(bg.pid);
      expect(mem.sessions.mb).toBeGreaterThan(50);
    } finally {
      await byId.close();
      await byName.close();
      await view.close();
    }
    expect([byId.pid, byName.pid, view.pid].some((p) => pidAlive(p))).toBe(false);
    // a client leaving does not end the session
    expect(pidAlive(bg.pid)).toBe(true);
  });

  it('api.onRequest overrides an answer (here a one-shot `claude -p`)', async () => {
    const off = fleet.api.onRequest((r) =>
      r.kind === 'main' && r.prompt?.includes('override me') ? { text: 'OVERRIDDEN ANSWER' } : undefined,
    );
    try {
      const r = await fleet.claude(['-p', 'please override me'], { cwd: fleet.workdir() });
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe('OVERRIDDEN ANSWER');
    } finally {
      off();
    }
    const seen = fleet.api.requests((q) => q.prompt === 'please override me');
    expect(seen).toHaveLength(1);
    expect(seen[0].headers).not.toHaveProperty('authorization');
    expect(seen[0].headers).not.toHaveProperty('x-api-key');
    expect(seen[0].headers['user-agent']).toMatch(/^claude-cli\/2\.1\.328/);
  });

  it('destroy() ends every process of the fleet and is idempotent', async () => {
    const before = fleet.processes();
    expect(before.length).toBeGreaterThan(3);
    const runtime = fleet.daemonRuntimeDir();
    await fleet.destroy();
    await fleet.destroy();
    expect(before.filter((p) => pidAlive(p.pid))).toEqual([]);
    expect(fleet.processes()).toEqual([]);
    expect(existsSync(fleet.root)).toBe(false);
    expect(existsSync(runtime)).toBe(false);
  });
});
