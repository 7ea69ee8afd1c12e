// The verdict, reason by reason (DESIGN §4): a table over plain data, no I/O.
import { describe, expect, it } from 'vitest';
import { decide, type Evidence, type Policy, type SessionFacts, type TaskFacts } from '../src/doctrine/verdict.js';

const MIN = 60_000;
const now = Date.parse('2026-11-30T12:00:00Z');
const ago = (ms: number) => new Date(now - ms).toISOString();
const policy: Policy = {
  grace: 15 * MIN,
  silence: 15 * MIN,
  askWait: 10 * MIN,
  retryWait: 10 * MIN,
  exitConfirm: MIN,
  expireIdle: 48 * 60 * MIN,
  maxExitRequests: 3,
};

const doneTask = (t: Partial<TaskFacts> = {}): TaskFacts => ({
  id: 't1',
  state: 'done',
  terminal: true,
  exitRequests: 0,
  releasedAt: ago(60 * MIN),
  ...t,
});
const evidence = (e: Partial<Evidence> = {}): Evidence => ({
  live: true,
  status: 'idle',
  silenceMs: 30 * MIN,
  attached: false,
  inboxPending: 0,
  probeFailures: [],
  task: doneTask(),
  openTasks: [],
  invalidTasks: [],
  ...e,
});
const session = (e: Partial<Evidence> = {}, s: Partial<SessionFacts> = {}): SessionFacts => ({
  id: 'abc12345',
  sessionId: 'uuid-1',
  kind: 'background',
  pid: 4242,
  evidence: evidence(e),
  ...s,
});

describe('decide: verdicts', () => {
  it('a row with no pid is a record, whatever else it says (D9)', () => {
    expect(decide(session({}, { pid: null }), policy, now)).toEqual({ verdict: 'record', reasons: [], next: null, notes: [] });
  });
  it('a pid that has ended is gone', () => {
    expect(decide(session({ live: false }), policy, now).verdict).toBe('gone');
  });
  it('all evidence positive, released long ago, never asked → eligible, step ask', () => {
    expect(decide(session(), policy, now)).toEqual({
      verdict: 'eligible',
      reasons: [],
      next: { step: 'ask' },
      notes: [],
      due: { step: 'ask', waitsFor: [], passes: true },
    });
  });
  it('a pid-less row that is starting (a new claude --bg) is protected, not a record, and no override reaches it', () => {
    expect(decide(session({}, { pid: null, starting: true }), policy, now)).toEqual({
      verdict: 'protected',
      reasons: ['starting'],
      next: null,
      notes: [],
    });
  });
  it('an interactive session carries no id: its key is the sessionId, and it is judged like any other', () => {
    expect(
      decide(session({ pane: { paneId: '%1', dead: false, clients: 0, sessionName: 's' } }, { id: null, kind: 'interactive' }), policy, now)
        .verdict,
    ).toBe('eligible');
  });
  it('a background session with no id cannot be handed to claude stop: id-unsafe', () => {
    expect(decide(session({}, { id: null }), policy, now).reasons).toEqual(['id-unsafe']);
  });
});

describe('decide: each protection on its own', () => {
  const cases: Array<[string, Partial<Evidence>, Partial<SessionFacts>?]> = [
    ['task-not-terminal', { task: { id: 't', state: 'active', terminal: false, exitRequests: 0 }, openTasks: ['t'] }],
    ['task-not-terminal', { task: doneTask(), openTasks: ['other'] }],
    ['task-invalid', { invalidTasks: ['bad.json'] }],
    ['not-released', { task: doneTask({ releasedAt: undefined }) }],
    ['grace-pending', { task: doneTask({ releasedAt: ago(14 * MIN) }) }],
    ['status-busy', { status: 'busy' }],
    ['status-waiting', { status: 'waiting' }],
    ['status-unknown', { status: 'unknown' }],
    ['transcript-recent', { silenceMs: 14 * MIN }],
    ['transcript-unknown', { silenceMs: null }],
    ['client-attached', { attached: true }],
    ['attach-unknown', { attached: null }],
    ['inbox-pending', { inboxPending: 1 }],
    ['inbox-unknown', { inboxPending: null }],
    ['no-pane', { pane: null }, { kind: 'interactive' }],
    [
      'gave-up',
      { task: doneTask({ exitRequests: 3, exitGaveUpAt: ago(MIN), exitAskedAt: ago(50 * MIN), exitRequestedAt: ago(20 * MIN) }) },
    ],
    ['resumed', { task: doneTask({ exitedAt: ago(MIN) }) }],
    ['probe-failed', { probeFailures: ['tmux'] }],
    ['liveness-unknown', { live: null }],
    ['kind-unknown', {}, { kind: 'unknown' }],
    ['id-unsafe', {}, { id: '-rf' }],
    ['id-unsafe', {}, { id: '--all' }],
    ['id-unsafe', {}, { id: 'a\nb' }],
    ['id-unsafe', {}, { id: '' }],
    ['id-unsafe', {}, { id: 'x'.repeat(257) }],
    ['id-unsafe', {}, { sessionId: '../../etc' }],
    ['id-unsafe', {}, { sessionId: '..' }],
    ['id-unsafe', {}, { sessionId: 'a/b' }],
    // Claude Code's own evidence (docs/claude-code.md)
    ['job-blocked', { rosterState: 'blocked' }],
    ['job-blocked', { job: { state: 'blocked', tempo: 'blocked', needs: 'which branch?', inFlight: 0, updatedAt: null } }],
    ['job-in-flight', { job: { state: 'working', tempo: 'active', needs: null, inFlight: 2, updatedAt: null } }],
    ['job-unknown', { job: null }],
    ['job-unknown', { job: { state: 'done', tempo: 'idle', needs: null, inFlight: null, updatedAt: null } }],
    ['pinned', { pinned: true }],
    ['pins-unknown', { pinned: null }],
    ['attach-unknown', { agentViews: 1 }],
  ];
  for (const [reason, e, s] of cases) {
    it(`${reason}`, () => {
      const d = decide(session(e, s), policy, now);
      expect(d.verdict).toBe('protected');
      expect(d.reasons).toEqual([reason]);
      expect(d.next).toBeNull();
    });
  }
  it('says in plain words what a blocked job asks, what a waiting session waits for, and that an agent view is open', () => {
    const blocked = decide(
      session({
        rosterState: 'blocked',
        job: { state: 'blocked', tempo: 'blocked', needs: 'Which branch should I push to?', inFlight: 0, updatedAt: null },
      }),
      policy,
      now,
    );
    expect(blocked.notes).toEqual(['it asks: Which branch should I push to?']);
    expect(decide(session({ status: 'waiting', waitingFor: 'permission prompt' }), policy, now).notes).toEqual([
      'waiting for: permission prompt',
    ]);
    expect(decide(session({ agentViews: 1 }), policy, now).notes[0]).toMatch(/agent view open/);
    // an interactive session is not a background session an agent view can open
    expect(
      decide(
        session({ agentViews: 1, pane: { paneId: '%1', dead: false, clients: 0, sessionName: 's' } }, { id: null, kind: 'interactive' }),
        policy,
        now,
      ).verdict,
    ).toBe('eligible');
  });
  it('says which agent view lists a session: one narrowed by --cwd, one that lists all, one whose --cwd could not be resolved', () => {
    const narrowed = decide(session({ agentViews: 1, agentViewsListing: [{ pid: 11, cwd: '/work/a' }] }), policy, now);
    expect(narrowed).toMatchObject({ verdict: 'protected', reasons: ['attach-unknown'] });
    expect(narrowed.notes).toEqual([
      'a person has the agent view open (claude agents --cwd /work/a, pid 11): it lists this session, which may be on their screen',
    ]);
    const both = decide(
      session({
        agentViews: 2,
        agentViewsListing: [
          { pid: 10, cwd: null },
          { pid: 11, cwd: '/work/a' },
        ],
      }),
      policy,
      now,
    );
    expect(both.notes).toEqual([
      'a person has the agent view open (claude agents, pid 10; claude agents --cwd /work/a, pid 11): any background session may be on their screen',
    ]);
    const unresolved = decide(session({ agentViews: 1, agentViewsListing: [{ pid: 12, cwd: null, cwdUnresolved: 'sub' }] }), policy, now);
    expect(unresolved.notes[0]).toMatch(/claude agents, pid 12, its --cwd sub unresolved\): any background session/);
    // a view that does not list the session adds nothing: the sweep leaves agentViews out
    expect(decide(session({}), policy, now).verdict).toBe('eligible');
  });
  it('awaiting-human protects even when every other piece of evidence says idle (D4)', () => {
    const d = decide(
      session({
        task: { id: 't', state: 'awaiting-human', terminal: false, exitRequests: 0 },
        openTasks: ['t'],
        silenceMs: 400 * 60 * MIN,
      }),
      policy,
      now,
    );
    expect(d).toMatchObject({ verdict: 'protected', reasons: ['task-not-terminal'] });
  });
  it('reasons accumulate: every protection is named', () => {
    const d = decide(session({ status: 'busy', attached: true, inboxPending: 2, silenceMs: 1000 }), policy, now);
    expect(d.reasons.sort()).toEqual(['client-attached', 'inbox-pending', 'status-busy', 'transcript-recent']);
  });
  it('unknown never counts as idle, silent, unattached or drained (D5)', () => {
    const d = decide(
      session({ status: 'unknown', silenceMs: null, attached: null, inboxPending: null, probeFailures: ['inbox'] }),
      policy,
      now,
    );
    expect(d.verdict).toBe('protected');
    expect(d.reasons.sort()).toEqual(['attach-unknown', 'inbox-unknown', 'probe-failed', 'status-unknown', 'transcript-unknown']);
  });
  it('the grace window ends exactly at releasedAt + grace', () => {
    expect(decide(session({ task: doneTask({ releasedAt: ago(15 * MIN) }) }), policy, now).verdict).toBe('eligible');
    expect(decide(session({ task: doneTask({ releasedAt: ago(15 * MIN - 1) }) }), policy, now).reasons).toEqual(['grace-pending']);
  });
  it('ids full of shell characters are still plain argv words: they do not protect on their own', () => {
    expect(decide(session({}, { id: `a b'c"d&e>$(x)`, sessionId: 's3 "$HOME" *' }), policy, now).verdict).toBe('eligible');
  });
  it('an interactive session in a pane with no clients is judged like any other', () => {
    const d = decide(session({ pane: { paneId: '%1', dead: false, clients: 0, sessionName: 's' } }, { kind: 'interactive' }), policy, now);
    expect(d.verdict).toBe('eligible');
  });
});

describe('decide: untasked sessions are judged on the expire window alone', () => {
  const untasked = (e: Partial<Evidence> = {}) => session({ task: null, ...e });
  it('idle-short until expireIdle', () => {
    expect(decide(untasked({ silenceMs: 47 * 60 * MIN }), policy, now)).toMatchObject({ verdict: 'protected', reasons: ['idle-short'] });
  });
  it('step expire after expireIdle, with no client and a drained inbox', () => {
    expect(decide(untasked({ silenceMs: 48 * 60 * MIN }), policy, now)).toEqual({
      verdict: 'eligible',
      reasons: [],
      next: { step: 'expire', n: 1 },
      notes: [],
      due: { step: 'expire', n: 1, waitsFor: [], passes: true },
    });
  });
  it('still needs roster status idle, no client, a drained inbox', () => {
    expect(
      decide(untasked({ silenceMs: 50 * 60 * MIN, status: 'waiting', attached: true, inboxPending: 1 }), policy, now).reasons.sort(),
    ).toEqual(['client-attached', 'inbox-pending', 'status-waiting']);
  });
  it('transcript missing protects an untasked session too', () => {
    expect(decide(untasked({ silenceMs: null }), policy, now).reasons).toEqual(['transcript-unknown']);
  });
  it('its chain: waits between requests, gives up after the third, then gave-up', () => {
    const idle = { silenceMs: 50 * 60 * MIN };
    // request n+1 is timed from when exit job n finished (the exit ledger), never while it still confirms
    expect(decide(untasked({ ...idle, expire: { requests: 1, lastRequestAt: ago(MIN) } }), policy, now).next).toEqual({
      step: 'wait',
      n: 2,
      at: ago(-10 * MIN),
    });
    expect(
      decide(untasked({ ...idle, expire: { requests: 1, lastRequestAt: ago(12 * MIN), lastExitFinishedAt: ago(9 * MIN) } }), policy, now)
        .next,
    ).toEqual({ step: 'wait', n: 2, at: ago(-MIN) });
    expect(
      decide(untasked({ ...idle, expire: { requests: 1, lastRequestAt: ago(12 * MIN), lastExitFinishedAt: ago(11 * MIN) } }), policy, now)
        .next,
    ).toEqual({ step: 'expire', n: 2 });
    expect(
      decide(untasked({ ...idle, expire: { requests: 3, lastRequestAt: ago(12 * MIN), lastExitFinishedAt: ago(11 * MIN) } }), policy, now)
        .next,
    ).toEqual({ step: 'give-up' });
    expect(
      decide(untasked({ ...idle, expire: { requests: 3, lastRequestAt: ago(20 * MIN), gaveUpAt: ago(MIN) } }), policy, now).reasons,
    ).toEqual(['gave-up']);
  });
});

describe('decide().due: when a protected session moves on, and what it waits for', () => {
  it('the grace: its end; a passing protection: re-checked; awaiting a human: held, a person decides', () => {
    expect(decide(session({ task: doneTask({ releasedAt: ago(5 * MIN) }) }), { ...policy, recheck: 5 * MIN }, now).due).toEqual({
      step: 'ask',
      at: ago(-10 * MIN),
      waitsFor: ['grace-pending'],
      passes: true,
    });
    expect(decide(session({ attached: true }), { ...policy, recheck: 5 * MIN }, now).due).toEqual({
      step: 'ask',
      waitsFor: ['client-attached'],
      passes: true,
      recheckMs: 5 * MIN,
    });
    expect(
      decide(session({ task: { id: 't', state: 'awaiting-human', terminal: false, exitRequests: 0 }, openTasks: ['t'] }), policy, now).due,
    ).toEqual({ waitsFor: [], passes: false });
    expect(
      decide(session({ task: doneTask({ exitAskedAt: ago(20 * MIN), exitRequests: 3, exitGaveUpAt: ago(MIN) }) }), policy, now).due!.passes,
    ).toBe(false);
    // untasked, not yet idle for the expire window: when it will be
    expect(decide(session({ task: null, silenceMs: 60 * MIN }), policy, now).due).toMatchObject({
      step: 'expire',
      at: ago(-47 * 60 * MIN),
      waitsFor: ['idle-short'],
      passes: true,
    });
  });
});

describe("decide().next: the chain's step, dated as it will fire", () => {
  const asked = { exitAskedAt: ago(60 * MIN) };
  const next = (t: Partial<TaskFacts>) => decide(session({ task: doneTask(t) }), policy, now).next;
  it('ask → wait askWait → request 1 → exit 1 finishes → wait retryWait → 2 → 3 → give-up', () => {
    expect(next({})).toEqual({ step: 'ask' });
    expect(next({ exitAskedAt: ago(5 * MIN) })).toEqual({ step: 'wait', n: 1, at: ago(-5 * MIN) });
    expect(next({ exitAskedAt: ago(10 * MIN) })).toEqual({ step: 'request', n: 1 });
    // exit job 1 still confirming: the latest request 2 can fire is exitConfirm + retryWait after request 1
    expect(next({ ...asked, exitRequests: 1, exitRequestedAt: ago(3 * MIN) })).toEqual({ step: 'wait', n: 2, at: ago(-8 * MIN) });
    // exit job 1 finished: request 2 is retryWait after that finish — not after the request (DESIGN §5)
    expect(next({ ...asked, exitRequests: 1, exitRequestedAt: ago(12 * MIN), lastExitFinishedAt: ago(9 * MIN) })).toEqual({
      step: 'wait',
      n: 2,
      at: ago(-MIN),
    });
    expect(next({ ...asked, exitRequests: 1, exitRequestedAt: ago(12 * MIN), lastExitFinishedAt: ago(10 * MIN) })).toEqual({
      step: 'request',
      n: 2,
    });
    expect(next({ ...asked, exitRequests: 2, exitRequestedAt: ago(12 * MIN), lastExitFinishedAt: ago(10 * MIN) })).toEqual({
      step: 'request',
      n: 3,
    });
    expect(next({ ...asked, exitRequests: 3, exitRequestedAt: ago(12 * MIN), lastExitFinishedAt: ago(9 * MIN) })).toEqual({
      step: 'wait',
      at: ago(-MIN),
    });
    expect(next({ ...asked, exitRequests: 3, exitRequestedAt: ago(12 * MIN), lastExitFinishedAt: ago(10 * MIN) })).toEqual({
      step: 'give-up',
    });
  });
  it('never proposes a fourth request', () => {
    for (let m = 0; m < 100; m += 7) {
      const n = next({ exitAskedAt: ago(200 * MIN), exitRequests: 3, exitRequestedAt: ago(m * MIN), lastExitFinishedAt: ago(m * MIN) })!;
      expect(n.step === 'request' && (n.n ?? 0) > 3).toBe(false);
      expect(['wait', 'give-up']).toContain(n.step);
    }
  });
});
