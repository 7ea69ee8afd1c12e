// The chain kinds as adapters (src/pipeline/chain-kinds/): every kind's job ids and data stay what they were
// (they are public), a job's data names its chain and back again through the queues' own schemas, the latch
// rule holds for every store of sunset's own, and the pipeline's generic code asks no kind which it is.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { latchFacts } from '../src/doctrine/chain.js';
import { CHAIN_KINDS, exitRefOf, kindOf, refOf, type ChainRef } from '../src/pipeline/chain-kinds/index.js';
import { expireRef } from '../src/pipeline/chain-kinds/expire.js';
import { DryRunLatches } from '../src/pipeline/dry-run.js';
import { exitAskSchema } from '../queues/exit-ask.js';
import { exitRetrySchema } from '../queues/exit-retry.js';
import { sessionExitSchema } from '../queues/session-exit.js';
import { taskTerminalSchema } from '../queues/task-terminal.js';

const task: ChainRef = { kind: 'task', taskId: 'migrate-db' };
const job: ChainRef = { kind: 'job', shortId: 'a1b2c3d4', sessionId: '5f0c-uuid', start: '1733050000000' };
const expire: ChainRef = expireRef('7e1d-uuid', 1733050000123.4);

describe('each kind names its jobs as before', () => {
  it('a task: terminal/, ask/, retry/, exit/ by the task id', () => {
    const k = kindOf(task);
    expect([k.ids.release?.(task), k.ids.ask?.(task), k.ids.retry?.(task, 2), k.ids.exit(task, 'sess', 1)]).toEqual([
      'terminal/migrate-db',
      'ask/migrate-db',
      'retry/migrate-db/2',
      'exit/migrate-db/sess/1',
    ]);
    expect([k.key(task), k.alarmKey(task), k.name(task)]).toEqual(['task/migrate-db', 'task/migrate-db', 'task migrate-db']);
  });
  it('a Claude Code job: job-ask/, job-retry/, job-exit/ by its short id and process start; no release', () => {
    const k = kindOf(job);
    expect([k.ids.release, k.ids.ask?.(job), k.ids.retry?.(job, 4), k.ids.exit(job, '5f0c-uuid', 3)]).toEqual([
      undefined,
      'job-ask/a1b2c3d4/1733050000000',
      'job-retry/a1b2c3d4/1733050000000/4',
      'job-exit/a1b2c3d4/1733050000000/3',
    ]);
    expect([k.key(job), k.alarmKey(job)]).toEqual(['job/a1b2c3d4@1733050000000', 'job/a1b2c3d4@1733050000000']);
  });
  it("an untasked session's expire chain: expire/<session>/<start>/<n>; its steps are the scan's, not chain jobs", () => {
    const k = kindOf(expire);
    expect([k.ids.release, k.ids.ask, k.ids.retry, k.dataOf]).toEqual([undefined, undefined, undefined, undefined]);
    expect(k.ids.exit(expire, '7e1d-uuid', 2)).toBe('expire/7e1d-uuid/1733050000123/2');
    expect([k.key(expire), k.alarmKey(expire)]).toEqual(['expire/7e1d-uuid@1733050000123', 'session/7e1d-uuid@1733050000123']);
  });
});

describe("a job's data names its chain, through the queues' own schemas", () => {
  it('chain jobs: the data each kind writes parses and names the same chain', () => {
    for (const ref of [task, job]) {
      const data = kindOf(ref).dataOf!(ref);
      expect(refOf(exitAskSchema.parse(data))).toEqual(ref);
      expect(refOf(exitRetrySchema.parse({ ...data, n: 4 }))).toEqual(ref);
    }
    expect(refOf(taskTerminalSchema.parse(kindOf(task).dataOf!(task)))).toEqual(task);
    expect(kindOf(task).dataOf!(task)).toEqual({ taskId: 'migrate-db' });
    expect(kindOf(job).dataOf!(job)).toEqual({ job: { shortId: 'a1b2c3d4', sessionId: '5f0c-uuid', start: '1733050000000' } });
  });
  it('exit jobs: each kind keeps its reason and fields; a person’s exit belongs to no chain', () => {
    expect(kindOf(task).exitData(task, 'sess', 1)).toEqual({ reason: 'request', taskId: 'migrate-db', sessionId: 'sess', n: 1 });
    expect(kindOf(job).exitData(job, '5f0c-uuid', 2)).toEqual({
      reason: 'job',
      sessionId: '5f0c-uuid',
      shortId: 'a1b2c3d4',
      start: '1733050000000',
      n: 2,
    });
    expect(kindOf(expire).exitData(expire, '7e1d-uuid', 3)).toEqual({
      reason: 'expire',
      sessionId: '7e1d-uuid',
      expireKey: '7e1d-uuid@1733050000123',
      n: 3,
    });
    for (const [ref, sessionId] of [
      [task, 'sess'],
      [job, '5f0c-uuid'],
      [expire, '7e1d-uuid'],
    ] as const)
      expect(exitRefOf(sessionExitSchema.parse(kindOf(ref).exitData(ref, sessionId, 1)))).toEqual(ref);
    expect(exitRefOf(sessionExitSchema.parse({ reason: 'person', sessionId: 's', by: 'me', why: 'oom', override: false, at: 'x' }))).toBe(
      null,
    );
    // a session whose process start cannot be told: its key says unknown, its exit ids 0 (as the scan names them)
    const unknown = expireRef('s', null);
    expect(exitRefOf(sessionExitSchema.parse(kindOf(unknown).exitData(unknown, 's', 1)))).toEqual(unknown);
  });
  it('a chain job names exactly one chain', () => {
    expect(exitAskSchema.safeParse({}).success).toBe(false);
    expect(exitAskSchema.safeParse({ taskId: 't', job: { shortId: 'a', sessionId: 'b', start: '1' } }).success).toBe(false);
    expect(exitAskSchema.safeParse({ chain: { kind: 'later', key: 'k', sessionId: 's' } }).success).toBe(true);
  });
});

describe('the latch rule for the chain facts sunset keeps (stateDir, a dry run)', () => {
  const t1 = '2026-12-01T10:00:00.000Z';
  const t2 = '2026-12-01T11:00:00.000Z';
  it('a time is set once; requests only grow, at most the ceiling, their time with them', () => {
    const a = latchFacts({ requests: 0 }, { startedAt: t1, requests: 1, lastRequestAt: t1 });
    expect(a).toEqual({
      next: { requests: 1, startedAt: t1, lastRequestAt: t1 },
      applied: { startedAt: t1, requests: 1, lastRequestAt: t1 },
    });
    const b = latchFacts(a.next, { startedAt: t2, requests: 1, lastRequestAt: t2, gaveUpAt: t2 });
    expect(b).toEqual({ next: { ...a.next, gaveUpAt: t2 }, applied: { gaveUpAt: t2 } });
    expect(latchFacts({ requests: 2 }, { requests: 9, lastRequestAt: t2 }).next).toEqual({ requests: 3, lastRequestAt: t2 });
    expect(latchFacts({ requests: 2 }, { requests: 1, lastRequestAt: t2 }).applied).toEqual({});
  });
  it("a dry run latches by the same rule, and a new request forgets the last exit job's finish", () => {
    const d = new DryRunLatches();
    d.latch('job/x', { requests: 1, lastRequestAt: t1 });
    d.latch('job/x', { exitedAt: t1, lastExitFinishedAt: t1 });
    expect(d.latch('job/x', { exitedAt: t2 })).toEqual({});
    expect(d.latch('job/x', { requests: 2, lastRequestAt: t2 })).toEqual({ requests: 2, lastRequestAt: t2 });
    expect(d.get('job/x')).toEqual({ requests: 2, lastRequestAt: t2, exitedAt: t1 });
  });
});

describe('what varies by kind lives in its adapter', () => {
  const ROOT = join(__dirname, '..');
  const generic = [
    'src/pipeline/chains.ts',
    'src/pipeline/acts.ts',
    'src/pipeline/expire.ts',
    'src/pipeline/pins.ts',
    'workers/exit-ask.ts',
    'workers/exit-retry.ts',
    'workers/release.ts',
    'workers/session-exit.ts',
  ];
  for (const f of generic)
    it(`${f} asks no chain which kind it is, and no run whether it is dry`, () => {
      const code = readFileSync(join(ROOT, f), 'utf8').replace(/(^|[^:])\/\/.*$/gm, '$1');
      expect(code).not.toMatch(/\bkind\s*[!=]==\s*'(task|job|expire)'|reason\s*[!=]==\s*'(request|job|expire)'/);
      expect(code).not.toMatch(/deps\.dry\b|deps\.dryRun\b/);
    });
  it('the table holds every kind, each under its own name', () => {
    for (const [name, k] of Object.entries(CHAIN_KINDS)) expect(k.kind).toBe(name);
  });
});
