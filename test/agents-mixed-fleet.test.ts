// The mixed fleet: the REAL Claude Code, Codex and Gemini CLIs side by side, each interactive in a tmux pane on
// this box, each against its own stand-in model API (sim/real/ and sim/agents/). Each answers its first prompt
// (given on its command line), each session is found under its own CLI's session id, and each leaves by its own
// quit command typed into its pane (by this test: test/real-agents-exit.test.ts has sunset do it) while the other two
// keep running. ~12–17 s on 2 cores.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AgentFleet, pidAlive } from '../sim/agents/agent-fleet.js';
import { RealFleet } from '../sim/real/real-fleet.js';

let claude: RealFleet;
let codex: AgentFleet;
let gemini: AgentFleet;

beforeAll(async () => {
  claude = await RealFleet.create();
  codex = await AgentFleet.create('codex');
  gemini = await AgentFleet.create('gemini');
}, 600_000);

afterAll(async () => {
  for (const f of [claude, codex, gemini]) await f?.destroy();
}, 60_000);

it('Claude Code, Codex and Gemini CLI run side by side, answer, and each leaves by its own quit command', async () => {
  const [c, x, g] = await Promise.all([
    claude.startInteractive('[[reply:Claude here.]] say hi'),
    codex.start('say hi [[reply:Codex here.]]'),
    gemini.start('say hi [[reply:Gemini here.]]'),
  ]);
  await Promise.all([
    claude.waitForScreen(c.paneId, /^\s*● Claude here\./m, 60_000),
    codex.waitForScreen(x.paneId, codex.spec.replyLine('Codex here.'), 60_000),
    gemini.waitForScreen(g.paneId, gemini.spec.replyLine('Gemini here.'), 60_000),
  ]);
  // each API saw its own CLI's wire format, and only its own session
  expect(claude.api.userTextsSeen(c.sessionId)).toContain('[[reply:Claude here.]] say hi');
  expect(codex.api.turns().map((r) => r.wire)).toContain('responses');
  expect(gemini.api.turns().map((r) => r.wire)).toContain('gemini');
  // each session is found under its CLI's own session id
  expect(await codex.waitFor(() => codex.transcripts().some((t) => t.head), 15_000)).toBe(true);
  expect(await gemini.waitFor(() => gemini.transcripts().some((t) => t.head), 15_000)).toBe(true);
  const ids = [c.sessionId, codex.transcripts()[0].head!.sessionId, gemini.transcripts()[0].head!.sessionId];
  expect(new Set(ids).size).toBe(3);
  expect(codex.transcripts()[0].head!.cwd).toBe(x.cwd);

  // Codex leaves first; the other two keep running
  await codex.waitIdle(x);
  await codex.send(x.paneId, '/quit');
  expect(await codex.waitForExit(x.pid, 20_000)).toBe(true);
  expect(pidAlive(c.pid) && pidAlive(g.pid)).toBe(true);

  await gemini.waitIdle(g);
  await gemini.send(g.paneId, '/quit');
  expect(await gemini.waitForExit(g.pid, 20_000)).toBe(true);
  expect(pidAlive(c.pid)).toBe(true);

  await claude.waitForRow(c.pid, (r) => r?.status === 'idle', 20_000);
  claude.typeInto(c.paneId, '/exit');
  expect(await claude.waitForExit(c.pid, 20_000)).toBe(true);
}, 300_000);
