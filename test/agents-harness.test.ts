// The agent-CLI harness (sim/agents/) proven on the REAL Codex and Gemini CLIs from npm, each against the
// stand-in model API (no network, no login): a session starts in a tmux pane, the stand-in answers its prompt,
// its transcript appears under the session id, a turn in flight shows its busy marker, the quit command typed
// ends the process, and the CLI's own resume brings the conversation back (the stand-in is sent it again).
// One fleet per CLI; destroy() checks that nothing of it is left running. Slow: ~1 min per CLI on 2 cores.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentFleet, SPECS, pidAlive, type AgentCli, type AgentSession } from '../sim/agents/agent-fleet.js';
import { agentCliVersionOf, agentInstallCommand, ensureAgentCli } from '../sim/agents/install.js';

const fleets: AgentFleet[] = [];
afterAll(async () => {
  for (const f of fleets) await f.destroy();
}, 60_000);

it('an unreachable registry fails plainly and names the command to run by hand', async () => {
  const cache = mkdtempSync(join(tmpdir(), 'sunset-agents-noreg-'));
  const saved = { cache: process.env.SUNSET_AGENTS_CACHE, reg: process.env.npm_config_registry };
  process.env.SUNSET_AGENTS_CACHE = cache;
  process.env.npm_config_registry = 'http://127.0.0.1:9/'; // nothing listens on the discard port
  try {
    const err = await ensureAgentCli(SPECS.gemini).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toContain('the npm registry cannot be reached');
    expect(err?.message).toContain(agentInstallCommand(SPECS.gemini));
    expect(existsSync(join(cache, 'gemini', SPECS.gemini.version))).toBe(false);
  } finally {
    if (saved.cache === undefined) delete process.env.SUNSET_AGENTS_CACHE;
    else process.env.SUNSET_AGENTS_CACHE = saved.cache;
    if (saved.reg === undefined) delete process.env.npm_config_registry;
    else process.env.npm_config_registry = saved.reg;
    rmSync(cache, { recursive: true, force: true });
  }
}, 120_000);

describe.each(['codex', 'gemini'] as AgentCli[])('%s (real CLI)', (cli) => {
  const spec = SPECS[cli];
  let fleet: AgentFleet;
  let first: AgentSession;
  let sessionId = '';
  const word = `okapi-${cli}-${Math.random().toString(36).slice(2, 8)}`;

  it(`installs ${spec.pkg}@${spec.version} into the cache and answers --version`, async () => {
    const bin = await ensureAgentCli(spec);
    expect(bin.endsWith(spec.bin)).toBe(true);
    expect((await agentCliVersionOf(bin)).split(/\s+/)).toContain(spec.version);
    fleet = await AgentFleet.create(cli);
    fleets.push(fleet);
  }, 600_000);

  it('a session in a tmux pane answers a prompt through the stand-in API, and its transcript names it', async () => {
    first = await fleet.start();
    expect(pidAlive(first.pid)).toBe(true);
    await fleet.send(first.paneId, `Remember the word ${word}. [[reply:Noted.]]`);
    const req = await fleet.api.waitForRequest((r) => r.kind === 'turn' && (r.prompt ?? '').includes(word), 30_000);
    expect(req?.wire).toBe(spec.wire);
    await fleet.waitForScreen(first.paneId, spec.replyLine('Noted.'), 30_000);
    let t: ReturnType<AgentFleet['transcripts']>[number] | undefined;
    expect(await fleet.waitFor(() => !!(t = fleet.transcripts().find((x) => x.head)), 15_000)).toBe(true);
    sessionId = t!.head!.sessionId;
    expect(sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    if (t!.head!.cwd !== null) expect(t!.head!.cwd).toBe(first.cwd);
    expect(fleet.transcripts()).toHaveLength(1);
    // Codex names the session in every request's session-id header; Gemini's requests carry none
    if (cli === 'codex') expect(req!.sessionId).toBe(sessionId);
  }, 120_000);

  it('a turn in flight shows the busy marker, and it goes when the turn ends', async () => {
    await fleet.waitIdle(first);
    await fleet.send(first.paneId, 'take your time [[slow:5000]]');
    await fleet.waitForScreen(first.paneId, spec.busy, 15_000);
    await fleet.waitForScreen(first.paneId, spec.replyLine('Stand-in reply to: take your time'), 30_000);
    expect(await fleet.waitFor(() => !spec.busy.test(fleet.screen(first.paneId)), 10_000)).toBe(true);
  }, 90_000);

  it(`typing ${spec.quit} into the pane ends the session's process`, async () => {
    await fleet.waitIdle(first);
    await fleet.send(first.paneId, spec.quit);
    expect(await fleet.waitForExit(first.pid, 20_000)).toBe(true);
    expect(await fleet.waitFor(() => !fleet.hasTmuxSession(first.tmuxSession), 5_000)).toBe(true);
  }, 60_000);

  it('the CLI resumes the session by id in its cwd, and the model is sent the earlier conversation', async () => {
    const again = await fleet.resume(sessionId, { cwd: first.cwd });
    await fleet.waitIdle(again);
    await fleet.send(again.paneId, 'What was the word? [[reply:It was in the history.]]');
    const req = await fleet.api.waitForRequest((r) => r.kind === 'turn' && (r.prompt ?? '').includes('What was the word?'), 30_000);
    expect(req).not.toBeNull();
    expect(req!.said.some((x) => x.role === 'human' && x.text.includes(word))).toBe(true);
    await fleet.waitForScreen(again.paneId, spec.replyLine('It was in the history.'), 30_000);
    // the same session, not a new one: every transcript names it (Gemini CLI starts a second file for the same
    // session id when the resume falls in a later minute than the start: its file names carry the minute)
    const ts = fleet.transcripts().filter((x) => x.head);
    expect([...new Set(ts.map((x) => x.head!.sessionId))], ts.map((x) => x.path).join('\n')).toEqual([sessionId]);
    await fleet.waitIdle(again);
    await fleet.send(again.paneId, spec.quit);
    expect(await fleet.waitForExit(again.pid, 20_000)).toBe(true);
  }, 120_000);

  it('destroy() leaves nothing of the fleet running', async () => {
    await fleet.destroy();
    expect(fleet.processes()).toEqual([]);
  }, 60_000);
});
