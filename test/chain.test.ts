// The doctrine of the chain (src/doctrine/chain.ts) and of acting (src/doctrine/judge.ts): tables over plain
// data, every edge DESIGN §5 settles. Every chain kind walks the same steps; every act is judged by one function.
import { describe, expect, it } from 'vitest';
import { chainStep, leaving, stepWords, timeline, type ChainFacts, type ChainPolicy } from '../src/doctrine/chain.js';
import { judge, type JudgeInput } from '../src/doctrine/judge.js';
import type { SessionView } from '../src/evidence/fleet.js';

const S = 1000;
const MIN = 60 * S;
const T0 = Date.parse('2026-12-01T10:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const p: ChainPolicy = { grace: 15 * MIN, askWait: 10 * MIN, retryWait: 10 * MIN, exitConfirm: MIN, maxExitRequests: 3 };

describe('chainStep: the next step of every chain kind, and when it is due', () => {
  const cases: Array<[string, ChainFacts, ReturnType<typeof chainStep>]> = [
    ['a task not yet released is released first', { kind: 'task', requests: 0 }, { step: 'release' }],
    ['released: the ask, grace after release', { kind: 'task', startedAt: at(0), requests: 0 }, { step: 'ask', at: T0 + 15 * MIN }],
    [
      'asked: request 1, askWait after the ask',
      { kind: 'task', startedAt: at(0), askedAt: at(15 * MIN), requests: 0 },
      { step: 'request', n: 1, at: T0 + 25 * MIN },
    ],
    [
      'request 1 made, its exit job confirming: nothing is due until it finishes',
      { kind: 'task', startedAt: at(0), askedAt: at(15 * MIN), requests: 1, lastRequestAt: at(25 * MIN) },
      { step: 'confirm', n: 1, by: T0 + 26 * MIN },
    ],
    [
      'exit job 1 finished: request 2, retryWait after that finish (not after the request)',
      {
        kind: 'task',
        startedAt: at(0),
        askedAt: at(15 * MIN),
        requests: 1,
        lastRequestAt: at(25 * MIN),
        lastExitFinishedAt: at(25 * MIN + 40 * S),
      },
      { step: 'request', n: 2, at: T0 + 35 * MIN + 40 * S },
    ],
    [
      'exit job 3 finished: the give-up, retryWait later — never a fourth request',
      { kind: 'task', startedAt: at(0), askedAt: at(1), requests: 3, lastRequestAt: at(50 * MIN), lastExitFinishedAt: at(51 * MIN) },
      { step: 'give-up', at: T0 + 61 * MIN },
    ],
    [
      'more requests latched than allowed reads as the last one',
      { kind: 'task', startedAt: at(0), askedAt: at(1), requests: 5, lastRequestAt: at(0), lastExitFinishedAt: at(0) },
      { step: 'give-up', at: T0 + 10 * MIN },
    ],
    [
      'exited ends the chain',
      { kind: 'task', startedAt: at(0), askedAt: at(1), requests: 1, exitedAt: at(2) },
      { step: 'end', why: 'exited' },
    ],
    [
      'gave up ends the chain',
      { kind: 'task', startedAt: at(0), askedAt: at(1), requests: 3, gaveUpAt: at(2) },
      { step: 'end', why: 'gave-up' },
    ],
    ['expire: no release, no ask — request 1 at once', { kind: 'expire', requests: 0 }, { step: 'request', n: 1, at: 0 }],
    [
      'expire: request 2 after exit job 1 finished',
      { kind: 'expire', requests: 1, lastRequestAt: at(0), lastExitFinishedAt: at(MIN) },
      { step: 'request', n: 2, at: T0 + 11 * MIN },
    ],
    [
      'a Claude Code job: the ask, grace after the job settled',
      { kind: 'job', startedAt: at(0), requests: 0 },
      { step: 'ask', at: T0 + 15 * MIN },
    ],
  ];
  for (const [name, f, want] of cases) it(name, () => expect(chainStep(f, p)).toEqual(want));
  it('maxExitRequests 1: the give-up follows the first request', () => {
    expect(
      chainStep(
        { kind: 'task', startedAt: at(0), askedAt: at(1), requests: 1, lastRequestAt: at(0), lastExitFinishedAt: at(0) },
        { ...p, maxExitRequests: 1 },
      ),
    ).toEqual({ step: 'give-up', at: T0 + 10 * MIN });
  });
});

describe("the chain in people's words: cap's on-their-way-out, the web's step and timeline", () => {
  it('leaving: asked or requested and still open', () => {
    expect(leaving({ kind: 'task', startedAt: at(0), requests: 0 })).toBeNull();
    expect(leaving({ kind: 'task', startedAt: at(0), askedAt: at(1), requests: 0 })).toEqual({ step: 'asked', requests: 0, since: at(1) });
    expect(leaving({ kind: 'expire', requests: 2, lastRequestAt: at(5) })).toEqual({ step: 'requested', requests: 2, since: at(5) });
    expect(leaving({ kind: 'task', startedAt: at(0), askedAt: at(1), requests: 3, gaveUpAt: at(9) })).toBeNull();
  });
  it('stepWords and timeline', () => {
    expect(stepWords({ kind: 'task', requests: 0 }, 3)).toBe('not yet released');
    expect(stepWords({ kind: 'task', startedAt: at(0), requests: 0 }, 3)).toBe('released');
    expect(stepWords({ kind: 'task', startedAt: at(0), askedAt: at(1), requests: 2 }, 3)).toBe('request 2 of 3');
    expect(stepWords({ kind: 'expire', requests: 1 }, 3)).toBe('expire request 1 of 3');
    const tl = timeline({ kind: 'task', startedAt: at(0), askedAt: at(1), requests: 1, lastRequestAt: at(2) }, 3, (n) =>
      n === 1 ? at(2) : undefined,
    );
    expect(tl.map((x) => [x.label, x.done])).toEqual([
      ['released', true],
      ['asked', true],
      ['request 1', true],
      ['request 2', false],
      ['request 3', false],
      ['exited', false],
    ]);
    expect(timeline({ kind: 'expire', requests: 3, gaveUpAt: at(9) }, 3).map((x) => x.label)).toEqual([
      'request 1',
      'request 2',
      'request 3',
      'gave up',
    ]);
  });
});

const view = (o: Partial<SessionView> & { evidence?: Partial<SessionView['evidence']> } = {}): SessionView =>
  ({
    id: 'abc',
    sessionId: 's1',
    kind: 'background',
    pid: 1,
    verdict: 'eligible',
    reasons: [],
    next: { step: 'ask' },
    notes: [],
    taskId: 't1',
    taskState: 'done',
    live: true,
    label: 'abc',
    name: null,
    rssBytes: null,
    procStartMs: 0,
    row: {} as never,
    ...o,
    evidence: { openTasks: [], invalidTasks: [], ...(o.evidence ?? {}) },
  }) as SessionView;
const base: Omit<JudgeInput, 'act' | 'view'> = { rosterOk: true, taskId: 't1', now: T0, recheck: 5 * MIN };

describe('judge: may this job act now? act, defer(at) or end(why)', () => {
  const cases: Array<[string, JudgeInput, { kind: string; why?: string; at?: number; gone?: boolean }]> = [
    ['eligible: act', { ...base, act: 'ask', view: view() }, { kind: 'act' }],
    [
      'a roster that failed: defer to recheck (missing evidence protects, and passes)',
      { ...base, act: 'request', view: null, rosterOk: false },
      { kind: 'defer', at: T0 + 5 * MIN },
    ],
    [
      'absent from a roster that answered: the session has gone',
      { ...base, act: 'ask', view: null },
      { kind: 'end', why: 'absent from the roster', gone: true },
    ],
    [
      'a record: gone',
      { ...base, act: 'request', view: view({ verdict: 'record', pid: null }) },
      { kind: 'end', why: 'record', gone: true },
    ],
    ['a process that ended: gone', { ...base, act: 'exit', view: view({ verdict: 'gone' }) }, { kind: 'end', why: 'gone', gone: true }],
    [
      'a later task on the same session supersedes this chain',
      { ...base, act: 'request', view: view({ taskId: 't2' }) },
      { kind: 'end', why: 'superseded by task t2' },
    ],
    [
      'task-not-terminal ends the chain',
      { ...base, act: 'ask', view: view({ verdict: 'protected', reasons: ['task-not-terminal'] }) },
      { kind: 'end', why: 'task-not-terminal' },
    ],
    [
      'a passing protection defers to recheck',
      { ...base, act: 'request', view: view({ verdict: 'protected', reasons: ['client-attached'] }) },
      { kind: 'defer', at: T0 + 5 * MIN, why: 'client-attached' },
    ],
    [
      'grace-pending alone defers to the grace end',
      { ...base, act: 'ask', view: view({ verdict: 'protected', reasons: ['grace-pending'] }), graceEnd: T0 + 30 * S },
      { kind: 'defer', at: T0 + 30 * S },
    ],
    [
      'expire: any protection ends this scan’s request (the next scan looks again)',
      { ...base, taskId: undefined, act: 'expire', view: view({ taskId: null, verdict: 'protected', reasons: ['idle-short'] }) },
      { kind: 'end', why: 'idle-short' },
    ],
    [
      'expire: a task now names the session',
      { ...base, taskId: undefined, act: 'expire', view: view({ taskId: 't9' }) },
      { kind: 'end', why: 'a task now names this session' },
    ],
    [
      'an expire exit job waits out a passing protection (a request counts once delivered)',
      {
        ...base,
        taskId: undefined,
        act: 'exit',
        untasked: true,
        view: view({ taskId: null, verdict: 'protected', reasons: ['status-busy'] }),
      },
      { kind: 'defer', at: T0 + 5 * MIN },
    ],
    [
      "a person's exit of a protected session: refused without an override",
      { ...base, taskId: undefined, act: 'person', view: view({ verdict: 'protected', reasons: ['task-not-terminal'] }) },
      { kind: 'end', why: 'task-not-terminal' },
    ],
    [
      "a person's override covers every protection…",
      {
        ...base,
        taskId: undefined,
        act: 'person',
        override: true,
        view: view({ verdict: 'protected', reasons: ['task-not-terminal', 'client-attached'] }),
      },
      { kind: 'act' },
    ],
    [
      '…but the unreachable ones',
      {
        ...base,
        taskId: undefined,
        act: 'person',
        override: true,
        view: view({ verdict: 'protected', reasons: ['no-pane', 'client-attached'] }),
      },
      { kind: 'end', why: 'no-pane' },
    ],
  ];
  for (const [name, input, want] of cases) it(name, () => expect(judge(input)).toMatchObject(want));
});
