// The agent-CLI seam in the sweep, with a stand-in CLI registered in the table (the real Codex and Gemini CLIs are
// tested in test/agent-codex.test.ts, test/agent-gemini.test.ts and test/real-agents-exit.test.ts): its sessions
// join the roster as interactive rows under its name, with their own transcript's silence, their pane, their draft
// and busy marker read by its own rule; a box with no Claude Code still reads them; fleet.agents false turns it off.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCli, FoundSession } from '../src/agents/agent-cli.js';
import { AGENT_CLIS } from '../src/agents/clis.js';
import { parseConfig, type Config } from '../src/config.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { buildReport } from '../src/report/report.js';
import { countCap } from '../src/cap/cap.js';

const socket = `sunset-agent-sweep-${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'sunset-agent-sweep-'));
const transcript = join(dir, 'rollout.jsonl');
const rcFile = join(dir, 'stand-in-agent.rc');
let panePid = 0;
let paneId = '';

const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });

/** The stand-in CLI: its session is the pane's process (a bash started with rcFile); its screen says what it is doing. */
const standIn: AgentCli = {
  name: 'standin',
  defaults: { command: 'sh', home: dir },
  async discover(procs, cfg) {
    const sessions: FoundSession[] = [];
    for (const p of procs.procs.values()) {
      if (p.argv[0] !== 'bash' || !p.argv.includes(rcFile)) continue;
      sessions.push({
        agent: 'standin',
        pid: p.pid,
        sessionId: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000',
        cwd: cfg.home,
        startedAt: new Date(p.startMs).toISOString(),
        transcript: { path: transcript, mtimeMs: Date.now() - 3_600_000 },
        turnInFlight: false,
        toolPids: [],
      });
    }
    return { sessions, problems: ['standin: one process could not be tied to a session'] };
  },
  draftOnScreen: (screen) => {
    const box = /^BOX:(.*)$/m.exec(screen);
    return box ? box[1].trim() !== '' : null;
  },
  busyOnScreen: (screen) => (/^BOX:/m.test(screen) ? /^WORKING$/m.test(screen) : null),
  quit: '/quit',
  resumeCommand: (cfg, id) => [cfg.command, 'resume', id],
};

function config(overrides: Record<string, unknown> = {}): Config {
  return parseConfig(
    {
      stateDir: join(dir, 'state'),
      probeTimeout: 5000,
      fleet: {
        rosterCommand: [join(dir, 'no-such-claude'), 'agents', '--json', '--all'],
        claudeCommand: join(dir, 'no-such-claude'),
        claudeDir: null,
        tasksDir: join(dir, 'tasks'),
        inboxDir: join(dir, 'inbox'),
        projectsDir: join(dir, 'projects'),
        tmuxSocket: socket,
        agents: { standin: { command: 'sh', home: dir } },
        ...overrides,
      },
    },
    { env: {} },
  );
}

/** Draw a screen in the pane: clear it, print the lines. */
async function draw(text: string): Promise<void> {
  tmux(
    'send-keys',
    '-t',
    paneId,
    '-l',
    `clear; printf '%s\\n' ${text
      .split('\n')
      .map((l) => `'${l}'`)
      .join(' ')}`,
  );
  tmux('send-keys', '-t', paneId, 'Enter');
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (tmux('capture-pane', '-p', '-t', paneId).stdout.startsWith(`${text}\n`)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the pane did not show ${text}`);
}

beforeAll(() => {
  AGENT_CLIS.standin = standIn;
  writeFileSync(transcript, '{}\n');
  writeFileSync(rcFile, "PS1='$ '\n");
  const hourAgo = (Date.now() - 3_600_000) / 1000;
  utimesSync(transcript, hourAgo, hourAgo);
  const r = tmux(
    'new-session',
    '-d',
    '-P',
    '-F',
    '#{pane_id} #{pane_pid}',
    '-x',
    '120',
    '-y',
    '20',
    '--',
    'bash',
    '--rcfile',
    rcFile,
    '-i',
  );
  [paneId, panePid] = ((s) => [s[0], Number(s[1])] as [string, number])(r.stdout.trim().split(' '));
  expect(paneId).toMatch(/^%\d+$/);
});

afterAll(() => {
  delete AGENT_CLIS.standin;
  tmux('kill-server');
  rmSync(dir, { recursive: true, force: true });
});

describe('an agent CLI beside Claude Code, in the sweep', () => {
  it('its session is an interactive row under its name, with its transcript, pane and empty box; no Claude Code is no failure', async () => {
    await draw('BOX:');
    const snap = await gatherFleet(config());
    expect(snap.roster).toEqual({ ok: true });
    expect(snap.problems.join('\n')).toMatch(/Claude Code is not installed .*only the other agent CLIs' sessions are read/);
    expect(snap.problems).toContain('standin: one process could not be tied to a session');
    expect(snap.sessions).toHaveLength(1);
    const v = snap.sessions[0];
    expect(v).toMatchObject({ agent: 'standin', kind: 'interactive', pid: panePid, id: null, live: true });
    expect(v.evidence.transcript).toBe(transcript);
    expect(v.evidence.silenceMs).toBeGreaterThan(3_000_000);
    expect(v.evidence.pane?.paneId).toBe(paneId);
    expect(v.evidence.draft).toBe(false);
    expect(v.evidence.status).toBe('idle');
    expect(v.reasons).not.toContain('status-busy');
    expect(buildReport(snap).memory.byAgent.standin.sessions).toBe(1);
    // it holds a slot under the one ceiling, as every session does
    expect(countCap(snap, 35).live).toBe(1);
  });

  it('its draft and its busy marker are read by its own rule, and each protects', async () => {
    await draw('BOX: half a thought');
    let v = (await gatherFleet(config())).sessions[0];
    expect(v.evidence.draft).toBe(true);
    expect(v.reasons).toContain('draft-pending');

    await draw('WORKING\nBOX:');
    v = (await gatherFleet(config())).sessions[0];
    expect(v.evidence.draft).toBe(false);
    expect(v.evidence.status).toBe('busy');
    expect(v.reasons).toContain('status-busy');
  });

  it('fleet.agents false turns it off: then a box with no Claude Code has a failed roster, as before', async () => {
    const snap = await gatherFleet(config({ agents: { standin: false } }));
    expect(snap.roster.ok).toBe(false);
    expect(snap.sessions).toEqual([]);
  });
});
