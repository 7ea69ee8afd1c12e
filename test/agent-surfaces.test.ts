// A Codex session beside a Claude Code one, seen everywhere sunset shows sessions (issue 31): `sunset verdict` (the
// agent's name in its text and `agent` in its JSON), `report`'s memory by agent, `cap` counting both toward the one
// ceiling, the fleet page, and /metrics by agent. The Codex session is the test fleet's stand-in TUI
// (sim/fleet/codex.mjs), read by sunset's real Codex adapter; the real CLI's side is test/real-agents-exit.test.ts.
import { describe, expect, it } from 'vitest';
import { codexScript } from '../sim/fleet/fleet.js';
import { runCli } from './support/cli.js';
import { until, useFleet } from './support/use-fleet.js';
import { startWebSunset, type WebSunset } from './support/web.js';
import { metric } from './support/metrics.js';

const ctx = useFleet({ hookTimeout: 90_000 });

describe('a Codex session beside Claude Code', () => {
  it('is named by its agent in verdict, report, cap, the fleet page and /metrics, and counted toward the one ceiling', async () => {
    const fleet = ctx.fleet;
    const claude = await fleet.spawnBackground();
    const cx = await fleet.spawnCodex({ prompt: 'Tidy the README' });
    // both held open by their tasks: nothing is asked or ended while the test reads them
    fleet.writeTask({ id: 'surf-claude', state: 'active', sessionId: claude.sessionId });
    fleet.writeTask({ id: 'surf-codex', state: 'active', sessionId: cx.sessionId });
    const agents = { codex: { command: codexScript(), home: fleet.codexHome }, gemini: false };
    const s: WebSunset = await startWebSunset(fleet, ['producers', 'workers', 'web'], { fleet: { agents }, cap: 5 });
    ctx.sunset = s;
    const configFile = fleet.writeConfig({ host: s.config.host, fleet: { agents }, cap: 5 });
    const get = async (path: string) => (await fetch(new URL(path, s.web.url))).text();

    const v = await runCli(['verdict', '--json', '--config', configFile], { timeoutMs: 60_000 });
    expect(v.code, v.stderr).toBe(0);
    const rows: Array<Record<string, any>> = JSON.parse(v.stdout).sessions;
    const codexRow = rows.find((r) => r.sessionId === cx.sessionId);
    const claudeRow = rows.find((r) => r.sessionId === claude.sessionId);
    expect(codexRow).toMatchObject({ agent: 'codex', kind: 'interactive', pid: cx.pid, verdict: 'protected', taskId: 'surf-codex' });
    expect(codexRow?.reasons).toContain('task-not-terminal');
    expect(claudeRow).toMatchObject({ kind: 'background', verdict: 'protected' });
    expect(claudeRow?.agent ?? 'claude-code').toBe('claude-code');

    // the text: the agent's name where a Claude Code session shows its kind
    const text = await runCli(['verdict', '--config', configFile], { timeoutMs: 60_000 });
    expect(text.code, text.stderr).toBe(0);
    const line = text.stdout.split('\n').find((l) => l.includes(`pid ${cx.pid} `));
    expect(line, text.stdout).toMatch(/^\S+ +codex +pid \d+ +protected/);
    expect(text.stdout.split('\n').find((l) => l.includes(`pid ${claude.pid} `))).toMatch(/^\S+ +background +pid/);

    const r = await runCli(['report', '--json', '--config', configFile], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const byAgent = JSON.parse(r.stdout).memory.byAgent;
    expect(byAgent.codex).toMatchObject({ sessions: 1 });
    expect(byAgent.codex.bytes).toBeGreaterThan(0);
    expect(byAgent['claude-code'].sessions).toBe(1);

    const c = await runCli(['cap', '--json', '--config', configFile], { timeoutMs: 60_000 });
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ ceiling: 5, live: 2, free: 3 });

    const page = await get('/');
    expect(page).toContain(`data-session="${cx.sessionId}"`);
    expect(page).toContain('codex · interactive');

    let m = '';
    await until('/metrics counts the Codex session', async () => {
      m = await get('/metrics');
      return metric(m, 'sunset_agent_sessions{agent="codex"}') === 1;
    });
    expect(metric(m, 'sunset_agent_sessions{agent="claude-code"}')).toBe(1);
    expect(metric(m, 'sunset_agent_rss_bytes{agent="codex"}')).toBeGreaterThan(0);
  }, 120_000);
});
