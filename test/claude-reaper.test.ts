// Claude Code's own reaper, seen from outside (src/evidence/claude-reaper.ts): the rule read from the 2.1.328
// binary and checked by running it (docs/real-cli-notes.md), as a table.
import { describe, expect, it } from 'vitest';
import { claudeReaperEta } from '../src/evidence/claude-reaper.js';
import type { JobFacts } from '../src/doctrine/verdict.js';

const at = '2026-12-01T10:00:00.000Z';
const job = (j: Partial<JobFacts> = {}): JobFacts => ({
  state: 'done',
  tempo: 'idle',
  needs: null,
  inFlight: 0,
  tasks: 0,
  queued: 0,
  kinds: [],
  updatedAt: at,
  ...j,
});
const free = { pinned: false, attached: false };

describe("when Claude Code's own reaper would retire a background session", () => {
  const cases: Array<[string, JobFacts | null, Parameters<typeof claudeReaperEta>[1], string | null]> = [
    ['settled done: an hour after it settled', job(), free, '2026-12-01T11:00:00.000Z'],
    ['under low memory: 60 s', job(), { ...free, lowMemory: true }, '2026-12-01T10:01:00.000Z'],
    [
      'idle but working (the classifier said working): settled too',
      job({ state: 'working', tempo: 'idle' }),
      free,
      '2026-12-01T11:00:00.000Z',
    ],
    ['a person attached: never while so', job(), { ...free, attached: true }, null],
    ['pinned (sunset pins lanes a person is waiting on): never', job(), { ...free, pinned: true }, null],
    ['a prompt queued: never', job({ queued: 1 }), free, null],
    ['work in flight while working: never', job({ state: 'working', tempo: 'idle', tasks: 1, kinds: ['local_bash'] }), free, null],
    [
      'a background shell left by a finished job: retired anyway',
      job({ tasks: 1, kinds: ['local_bash'] }),
      free,
      '2026-12-01T11:00:00.000Z',
    ],
    ['a turn running: not settled', job({ state: 'working', tempo: 'active' }), free, null],
    ['no state file: never', null, free, null],
  ];
  for (const [name, j, o, want] of cases) it(name, () => expect(claudeReaperEta(j, o).at).toBe(want));
});

describe('who ended a done job sunset did not end', () => {
  const deps = { config: { stateDir: '/nonexistent/sunset-state' } } as any;
  const task = { id: 't', sessionId: 's', exitRequests: 0 } as any;
  const record = (pinned: boolean | undefined) => ({ verdict: 'record', row: { state: 'done' }, evidence: { pinned } }) as any;
  it("a pinned one was not Claude Code's reaper (it skips pinned jobs); an unpinned one may have been either", async () => {
    const { whoEnded } = await import('../src/pipeline/deps.js');
    expect(whoEnded(deps, task, record(true)).how).toMatch(
      /a person's `claude stop` or a crash: Claude Code's own reaper skips a pinned job/,
    );
    expect(whoEnded(deps, task, record(false)).how).toMatch(/a person's `claude stop`, or Claude Code's own reaper/);
    expect(whoEnded(deps, task, record(true)).by).toBe('other');
  });
});
