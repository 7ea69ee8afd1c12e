// sunset on a mixed fleet of REAL agent CLIs (sim/real/ and sim/agents/): three sessions each of Claude Code, Codex
// and Gemini CLI side by side on one tmux server, each CLI against its own stand-in model API. sunset finds the Codex
// and Gemini sessions under their own session ids and agent names; once a Driver's task is done for one session of
// each CLI it asks it once and lets it leave by its own exit path (`/exit`, `/quit`, `/quit`); the sessions whose
// tasks are open are never touched; an untasked Codex session idle past expireIdle leaves by the expire chain; and
// `sunset resume` brings each finished one back. This test owns its HOME(s), daemon, tmux socket and Redis, and ends
// every process it started. Slow: ~3–4 min on 2 cores.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentFleet, pidAlive, type AgentSession } from '../sim/agents/agent-fleet.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { listExits } from '../src/store/ledger.js';
import { realConfig, readTask, useRealFleet, writeTask } from './support/real.js';
import { startTestSunset } from './support/sunset.js';
import { runCli } from './support/cli.js';

const H = 3_600_000;
const ctx = useRealFleet();
let codex: AgentFleet;
let gemini: AgentFleet;

beforeAll(async () => {
  // on the Claude Code fleet's tmux server: sunset reads one server
  codex = await AgentFleet.create('codex', { tmuxSocket: ctx.fleet.tmuxSocket });
  gemini = await AgentFleet.create('gemini', { tmuxSocket: ctx.fleet.tmuxSocket });
}, 600_000);

afterAll(async () => {
  await ctx.sunset?.close();
  ctx.sunset = null;
  for (const f of [codex, gemini]) await f?.destroy();
}, 120_000);

/** A session that answered its first prompt, and the session id its transcript names. */
async function answered(fleet: AgentFleet, word: string): Promise<{ s: AgentSession; sessionId: string }> {
  const before = new Set(fleet.transcripts().flatMap((t) => (t.head ? [t.head.sessionId] : [])));
  const s = await fleet.start();
  await fleet.send(s.paneId, `say ${word} [[reply:${word} here.]]`);
  await fleet.waitForScreen(s.paneId, fleet.spec.replyLine(`${word} here.`), 60_000);
  let sessionId = '';
  const found = await fleet.waitFor(() => {
    const t = fleet.transcripts().find((x) => x.head && !before.has(x.head.sessionId));
    if (t) sessionId = t.head!.sessionId;
    return !!t;
  }, 20_000);
  expect(found).toBe(true);
  await fleet.waitIdle(s);
  return { s, sessionId };
}

describe('sunset on a mixed fleet of real Claude Code, Codex and Gemini CLI sessions', () => {
  it('3 of each: the finished one of each is asked once and leaves by its own exit path; held ones untouched; each comes back', async () => {
    const fleet = ctx.fleet;
    const cfg = realConfig(fleet, ctx.redis.url, {
      // an untasked session idle this long gets the expire chain
      windows: { askWait: 1_000, retryWait: 5_000, expireIdle: 8_000 },
      fleet: {
        agents: {
          codex: { command: codex.binary, home: join(codex.home, '.codex') },
          gemini: { command: gemini.binary, home: join(gemini.home, '.gemini') },
        },
      },
    });
    // Claude Code: one interactive session that finishes, one interactive and one background held by open tasks
    const c = await fleet.startInteractive('[[reply:Claude here.]] say hi');
    await fleet.waitForScreen(c.paneId, /Claude here\./, 60_000);
    const cHeld = await fleet.startInteractive('[[reply:Still here.]] say hi');
    const cBg = await fleet.startBackground('[[reply:Working on it.]] keep going');
    // Codex and Gemini CLI: one that finishes, two held by open tasks; and an untasked Codex session
    const x = await answered(codex, 'okapi');
    const xHeld = [await answered(codex, 'ibex'), await answered(codex, 'kudu')];
    const untasked = await answered(codex, 'tapir');
    const g = await answered(gemini, 'quokka');
    const gHeld = [await answered(gemini, 'numbat'), await answered(gemini, 'wombat')];

    // the sweep shows each agent CLI's sessions under their own ids and names, with their own transcripts
    const snap = await gatherFleet(cfg, { roster: 'cli' });
    const byId = new Map(snap.sessions.map((v) => [v.sessionId, v]));
    for (const [a, agent] of [
      [x, 'codex'],
      [g, 'gemini'],
      ...xHeld.map((h) => [h, 'codex'] as const),
      ...gHeld.map((h) => [h, 'gemini'] as const),
    ] as const) {
      const v = byId.get(a.sessionId);
      expect(
        v,
        `${agent} ${a.sessionId} in ${snap.sessions.map((s) => `${s.agent ?? 'claude'}:${s.sessionId}`).join(', ')}; ${snap.problems.join('; ')}`,
      ).toBeDefined();
      expect(v!.agent).toBe(agent);
      expect(v!.kind).toBe('interactive');
      expect(v!.pid).toBe(a.s.pid);
      expect(v!.evidence.pane?.paneId).toBe(a.s.paneId);
      expect(v!.evidence.draft).toBe(false);
      expect(v!.evidence.transcript).toBeTruthy();
    }
    for (const cs of [c, cHeld, cBg]) expect(byId.get(cs.sessionId)?.agent).toBeUndefined();

    const past = new Date(Date.now() - H).toISOString();
    writeTask(fleet, { id: 't-claude', state: 'done', sessionId: c.sessionId, releasedAt: past });
    writeTask(fleet, { id: 't-codex', state: 'done', sessionId: x.sessionId, releasedAt: past });
    writeTask(fleet, { id: 't-gemini', state: 'done', sessionId: g.sessionId, releasedAt: past });
    const held = [
      { id: 'h-claude', sessionId: cHeld.sessionId, pid: cHeld.pid },
      { id: 'h-claude-bg', sessionId: cBg.sessionId, pid: cBg.pid },
      ...xHeld.map((h, i) => ({ id: `h-codex-${i}`, sessionId: h.sessionId, pid: h.s.pid })),
      ...gHeld.map((h, i) => ({ id: `h-gemini-${i}`, sessionId: h.sessionId, pid: h.s.pid })),
    ];
    for (const h of held) writeTask(fleet, { id: h.id, state: 'running', sessionId: h.sessionId });

    ctx.sunset = await startTestSunset(cfg);
    const done = await fleet.waitFor(() => ['t-claude', 't-codex', 't-gemini'].every((t) => !!readTask(fleet, t).exitedAt), 180_000, 250);
    expect(done, JSON.stringify(ctx.sunset.events.slice(-20))).toBe(true);
    expect(await fleet.waitForExit(c.pid, 10_000)).toBe(true);
    expect(await codex.waitForExit(x.s.pid, 10_000)).toBe(true);
    expect(await gemini.waitForExit(g.s.pid, 10_000)).toBe(true);
    // the untasked one, idle past expireIdle: the expire chain, by the same exit path
    expect(await codex.waitForExit(untasked.s.pid, 60_000), JSON.stringify(ctx.sunset.events.slice(-20))).toBe(true);

    // each finished one was asked once: its model got the message (Claude Code's through its socket, the others typed
    // into their pane); the expire chain requests without an ask (DESIGN's expire has no message)
    const ask = 'Please wrap up and write your close-out now';
    expect(fleet.api.userTextsSeen(c.sessionId).filter((t) => t.includes(ask))).toHaveLength(1);
    expect(codex.api.requestsFor(ask).map((r) => r.sessionId)).toEqual([x.sessionId]);
    expect(gemini.api.requestsFor(ask)).toHaveLength(1);
    // and left by its own exit path, never a signal
    const exits = listExits(cfg.stateDir).filter((r) => r.outcome === 'exited');
    const rows = exits.map((r) => [r.sessionId, r.method, r.reason, (r as unknown as Record<string, unknown>).agent ?? null]);
    expect(rows.sort()).toEqual(
      [
        [c.sessionId, 'typed-exit', 'request', null],
        [x.sessionId, 'typed-exit', 'request', 'codex'],
        [g.sessionId, 'typed-exit', 'request', 'gemini'],
        [untasked.sessionId, 'typed-exit', 'expire', 'codex'],
      ].sort(),
    );

    // the held ones: running, never asked
    for (const h of held) expect(pidAlive(h.pid), h.id).toBe(true);
    expect(fleet.api.userTextsSeen(cHeld.sessionId).some((t) => t.includes(ask))).toBe(false);
    expect(fleet.api.userTextsSeen(cBg.sessionId).some((t) => t.includes(ask))).toBe(false);
    await ctx.sunset.close();
    ctx.sunset = null;

    // sunset exited offers each one's own CLI's resume (a moved home with it), and sunset resume runs it in a tmux
    // session of its own, where sunset finds the same session live again
    const cfgFile = join(fleet.root, 'sunset-agents.json');
    writeFileSync(cfgFile, JSON.stringify(cfg));
    const listed = JSON.parse((await runCli(['exited', '--json', '--config', cfgFile])).stdout);
    const entryOf = (sid: string) => listed.entries.find((e: { sessionId: string }) => e.sessionId === sid);
    expect(entryOf(x.sessionId)).toMatchObject({
      agent: 'codex',
      resumeFrom: 'transcript',
      resume: ['env', `CODEX_HOME=${join(codex.home, '.codex')}`, codex.binary, 'resume', x.sessionId],
    });
    expect(entryOf(g.sessionId)).toMatchObject({
      agent: 'gemini',
      resumeFrom: 'transcript',
      resume: ['env', `GEMINI_CLI_HOME=${gemini.home}`, gemini.binary, '--resume', g.sessionId],
    });
    expect(entryOf(c.sessionId)).toMatchObject({ resumeFrom: 'transcript', resume: [cfg.fleet.claudeCommand, '--resume', c.sessionId] });
    for (const [task, sid] of [
      ['t-claude', c.sessionId],
      ['t-codex', x.sessionId],
      ['t-gemini', g.sessionId],
    ]) {
      const r = await runCli(['resume', task, '--config', cfgFile], { timeoutMs: 60_000 });
      expect(r.code, `${task}: ${r.stderr}`).toBe(0);
      const back = await fleet.waitFor(
        async () => (await gatherFleet(cfg, { roster: 'cli' })).sessions.some((v) => v.sessionId === sid && v.live),
        45_000,
        500,
      );
      expect(back, `${task} (${sid}) is running again`).toBe(true);
    }
  }, 600_000);
});
