// The exit-path seam from the far side: the verdict reads what a session's path needs (a pane, a safe id) from the
// path, not from its kind, and an agent CLI put in the table is served by a path made from it, with nothing else
// edited. Plain data and the tables; no I/O.
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentCli } from '../src/agents/agent-cli.js';
import { AGENT_CLIS } from '../src/agents/clis.js';
import { EXIT_PATHS, exitPathOf } from '../src/agents/index.js';
import { decide, type Evidence, type Policy, type SessionFacts } from '../src/doctrine/verdict.js';

const MIN = 60_000;
const now = Date.parse('2026-12-04T12:00:00Z');
const policy: Policy = {
  grace: 15 * MIN,
  silence: 15 * MIN,
  askWait: 10 * MIN,
  retryWait: 10 * MIN,
  exitConfirm: MIN,
  expireIdle: 48 * 60 * MIN,
  maxExitRequests: 3,
};
const evidence = (e: Partial<Evidence> = {}): Evidence => ({
  live: true,
  status: 'idle',
  silenceMs: 30 * MIN,
  attached: false,
  inboxPending: 0,
  probeFailures: [],
  task: { id: 't1', state: 'done', terminal: true, exitRequests: 0, releasedAt: new Date(now - 60 * MIN).toISOString() },
  openTasks: [],
  invalidTasks: [],
  ...e,
});
const facts = (s: Partial<SessionFacts>, e: Partial<Evidence> = {}): SessionFacts => ({
  id: null,
  sessionId: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001',
  kind: 'interactive',
  pid: 4242,
  evidence: evidence(e),
  ...s,
});
const pane = { paneId: '%3', dead: false, clients: 0, sessionName: 's' };

describe("the verdict reads the exit path's needs", () => {
  it('a path that types into a pane: no pane or an unreadable box protects; one that does not type needs neither', () => {
    const typing = { needsPane: true, passesId: false };
    expect(decide(facts({ exit: typing }, { pane: null }), policy, now).reasons).toEqual(['no-pane']);
    expect(decide(facts({ exit: typing }, { pane, draft: null }), policy, now).reasons).toEqual(['draft-unknown']);
    expect(decide(facts({ exit: typing }, { pane, draft: false }), policy, now).verdict).toBe('eligible');
    // the same interactive row on a path that types nothing (none today: the rule is the path's, not the kind's)
    const calling = { needsPane: false, passesId: false };
    expect(decide(facts({ exit: calling }, { pane: null }), policy, now).verdict).toBe('eligible');
  });

  it('a path that hands the id to a program refuses an id that reads as an option; one that does not never reads it', () => {
    const passing = { needsPane: false, passesId: true };
    const bad = { id: '--all', kind: 'background' as const };
    expect(decide(facts({ ...bad, exit: passing }), policy, now).reasons).toContain('id-unsafe');
    expect(decide(facts({ ...bad, exit: { needsPane: false, passesId: false } }), policy, now).reasons).not.toContain('id-unsafe');
  });

  it("no path (null) protects as kind-unknown; facts that do not say are Claude Code's, by kind", () => {
    expect(decide(facts({ exit: null }, { pane, draft: false }), policy, now).reasons).toEqual(['kind-unknown']);
    expect(decide(facts({}, { pane: null }), policy, now).reasons).toEqual(['no-pane']);
    expect(decide(facts({ kind: 'background', id: 'abc12345' }, { pane: null }), policy, now).verdict).toBe('eligible');
    expect(decide(facts({ kind: 'unknown' }), policy, now).reasons).toContain('kind-unknown');
  });
});

describe('an agent CLI in the table is served with nothing else edited', () => {
  const added: string[] = [];
  afterEach(() => {
    for (const name of added.splice(0)) delete AGENT_CLIS[name];
  });

  it('its interactive sessions get a path made from it: its quit, its resume, its box; background ones none', () => {
    const cli: AgentCli = {
      name: 'seam-cli',
      defaults: { command: 'seam-cli', home: '/nonexistent/.seam-cli' },
      discover: async () => ({ sessions: [], problems: [] }),
      inputBox: (screen) => {
        const m = /^> (.*)$/m.exec(screen);
        return m ? { found: true, empty: m[1].trim() === '', draft: m[1].trim() } : { found: false, empty: false, draft: '' };
      },
      draftOnScreen: (screen) => (/^> /m.test(screen) ? !/^> *$/m.test(screen) : null),
      busyOnScreen: () => false,
      quit: '/bye',
      resumeCommand: (cfg, id) => [cfg.command, '--continue', id],
    };
    AGENT_CLIS[cli.name] = cli;
    added.push(cli.name);
    const path = exitPathOf({ kind: 'interactive', agent: 'seam-cli' });
    expect(path).not.toBeNull();
    expect(path).toBe(exitPathOf({ kind: 'interactive', agent: 'seam-cli' })); // made once
    expect(exitPathOf({ kind: 'background', agent: 'seam-cli' })).toBeNull();
    expect(path).toMatchObject({ agent: 'seam-cli', kind: 'interactive', how: '/bye typed into its pane', method: 'typed-exit' });
    expect({ needsPane: path!.needsPane, passesId: path!.passesId, keepsTranscript: path!.keepsTranscript }).toEqual({
      needsPane: true,
      passesId: false,
      keepsTranscript: false,
    });
    const config = { fleet: { agents: { 'seam-cli': { command: '/opt/seam/bin/seam-cli', home: '/srv/seam' } } } };
    expect(path!.resumeCommand(config as never, 'sid-1')).toEqual(['/opt/seam/bin/seam-cli', '--continue', 'sid-1']);
    expect(path!.draftOnScreen!('> half a thought')).toBe(true);
    expect(path!.draftOnScreen!('> ')).toBe(false);
    expect(path!.draftOnScreen!('a dialog')).toBeNull();
  });

  it('every CLI of the table has its interactive path in EXIT_PATHS under <name>-interactive', () => {
    for (const cli of Object.values(AGENT_CLIS)) expect(EXIT_PATHS[`${cli.name}-interactive`]?.agent, cli.name).toBe(cli.name);
    // Claude Code's own two are kept transcripts; no other CLI's is
    for (const p of Object.values(EXIT_PATHS)) expect(p.keepsTranscript, p.name).toBe(p.agent === 'claude-code');
  });
});
