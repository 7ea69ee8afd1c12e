// session-cap, the counting: countCap and its helpers as tables over plain data (no I/O), then
// `sunset cap` on a real test fleet, spawned as a CLI.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capLine, countCap, holdsSlot, hourBucket, leavingOf, leavingPhrase } from '../src/cap/cap.js';
import { AdmitStore, leasesShown, type Lease } from '../src/cap/admit.js';
import { Redis } from 'ioredis';
import type { SessionView } from '../src/evidence/fleet.js';
import type { Evidence, TaskFacts } from '../src/doctrine/verdict.js';
import { runCli } from './support/cli.js';
import { uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';

const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function view(o: {
  id?: string;
  pid?: number | null;
  live?: boolean | null;
  task?: Partial<TaskFacts> | null;
  open?: string[];
  invalid?: string[];
  expire?: Evidence['expire'];
  taskState?: string;
}): SessionView {
  const id = o.id ?? 'row';
  const task =
    o.task === undefined || o.task === null ? null : ({ id: 't', state: 'done', terminal: true, exitRequests: 0, ...o.task } as TaskFacts);
  const evidence: Evidence = {
    live: o.live === undefined ? true : o.live,
    status: 'idle',
    silenceMs: 0,
    attached: false,
    inboxPending: 0,
    probeFailures: [],
    task,
    openTasks: o.open ?? [],
    invalidTasks: o.invalid ?? [],
    ...(o.expire !== undefined ? { expire: o.expire } : {}),
  };
  return {
    id,
    sessionId: `${id}-uuid`,
    label: id,
    name: null,
    notes: [],
    kind: 'background',
    pid: o.pid === undefined ? 100 : o.pid,
    evidence,
    verdict: 'protected',
    reasons: [],
    next: null,
    row: {} as any,
    live: o.pid === null ? false : o.live === undefined ? true : o.live,
    taskId: task?.id ?? null,
    taskState: o.taskState ?? task?.state ?? null,
    rssBytes: 1000,
    procStartMs: null,
  };
}

describe('countCap: who holds a slot (D9, D5)', () => {
  const rows: Array<[string, Parameters<typeof view>[0], 'live' | 'unknown' | 'record' | 'gone']> = [
    ['a live pid', { pid: 10, live: true }, 'live'],
    ['liveness unknown counts as live', { pid: 11, live: null }, 'unknown'],
    ['no pid: a record, never counted', { pid: null, live: false }, 'record'],
    ['a pid that ended: gone', { pid: 12, live: false }, 'gone'],
  ];
  for (const [name, o, want] of rows) {
    it(name, () => {
      const c = countCap({ sessions: [view(o)] }, 35);
      expect({ live: c.live, liveUnknown: c.liveUnknown, records: c.records, gone: c.gone }).toEqual({
        live: want === 'live' || want === 'unknown' ? 1 : 0,
        liveUnknown: want === 'unknown' ? 1 : 0,
        records: want === 'record' ? 1 : 0,
        gone: want === 'gone' ? 1 : 0,
      });
      expect(holdsSlot(view(o))).toBe(want === 'live' || want === 'unknown');
    });
  }
  it('96 rows of which 28 carry a live pid count 28 (the ADR-0010 measurement)', () => {
    const sessions = [
      ...Array.from({ length: 28 }, (_, i) => view({ id: `l${i}`, pid: 1000 + i })),
      ...Array.from({ length: 68 }, (_, i) => view({ id: `r${i}`, pid: null })),
    ];
    const c = countCap({ sessions }, 35);
    expect(c).toMatchObject({ ceiling: 35, live: 28, records: 68 });
  });
});

describe('leavingOf: finished sessions on their way out', () => {
  const cases: Array<[string, Parameters<typeof view>[0], null | { via: string; step: string; requests: number }]> = [
    ['terminal, released, not asked yet: not yet on its way', { task: { releasedAt: ago(H) } }, null],
    ['terminal and asked', { task: { exitAskedAt: ago(H) } }, { via: 'task', step: 'asked', requests: 0 }],
    [
      'terminal and requested twice',
      { task: { exitAskedAt: ago(H), exitRequests: 2, exitRequestedAt: ago(1000) } },
      { via: 'task', step: 'requested', requests: 2 },
    ],
    ['exited (then resumed): not leaving', { task: { exitAskedAt: ago(H), exitRequests: 1, exitedAt: ago(10) } }, null],
    ['given up: not leaving, a person decides', { task: { exitAskedAt: ago(H), exitRequests: 3, exitGaveUpAt: ago(10) } }, null],
    ['an open task: not leaving', { task: { state: 'active', terminal: false, exitAskedAt: ago(H) } }, null],
    ['awaiting-human named beside a terminal task: not leaving', { task: { exitAskedAt: ago(H) }, open: ['lane'] }, null],
    [
      'untasked, expire requested once',
      { expire: { requests: 1, lastRequestAt: ago(10) } },
      { via: 'expire', step: 'requested', requests: 1 },
    ],
    ['untasked, expire gave up', { expire: { requests: 3, gaveUpAt: ago(10) } }, null],
    ['untasked, nothing asked', {}, null],
  ];
  for (const [name, o, want] of cases) {
    it(name, () => {
      const l = leavingOf(view(o));
      if (want === null) expect(l).toBeNull();
      else expect(l).toMatchObject(want);
    });
  }
  it('only live rows are counted as leaving or as lanes holding slots', () => {
    const c = countCap(
      {
        sessions: [
          view({ id: 'a', task: { exitAskedAt: ago(H) } }),
          view({ id: 'gone', pid: 5, live: false, task: { exitAskedAt: ago(H) } }),
          view({ id: 'lane', task: { id: 'lane', state: 'awaiting-human', terminal: false } }),
          view({ id: 'active', task: { id: 'act', state: 'active', terminal: false } }),
          view({ id: 'deadlane', pid: null, task: { id: 'lane2', state: 'awaiting-human', terminal: false } }),
        ],
      },
      3,
    );
    expect(c.live).toBe(3);
    expect(c.leaving.map((x) => x.id)).toEqual(['a']);
    expect(c.awaitingHuman).toEqual([{ id: 'lane', label: 'lane', sessionId: 'lane-uuid', taskId: 'lane', rssBytes: 1000 }]);
  });
});

describe('the refusal line and the alarm bucket', () => {
  it('says the count, the ceiling and how many are on their way out', () => {
    expect(capLine(36, 35, 4)).toBe('cap reached: 36/35 — not starting; 4 finished sessions are being asked to exit');
    expect(capLine(35, 35, 1)).toBe('cap reached: 35/35 — not starting; 1 finished session is being asked to exit');
    expect(capLine(34, 35, 0, { queued: 1, doing: 'waiting for a slot' })).toBe(
      'cap reached: 34/35 + 1 queued — waiting for a slot; 0 finished sessions are being asked to exit',
    );
    expect(leavingPhrase(2)).toBe('2 finished sessions are being asked to exit');
  });
  it('buckets by the hour, so cap-reached is at most one an hour', () => {
    expect(hourBucket(Date.parse('2026-11-30T12:00:00Z'))).toBe(hourBucket(Date.parse('2026-11-30T12:59:59.999Z')));
    expect(hourBucket(Date.parse('2026-11-30T12:59:59Z'))).not.toBe(hourBucket(Date.parse('2026-11-30T13:00:00Z')));
  });
});

describe('leasesShown: the roster shows an admitted session', () => {
  const lease = (id: string, pid: number | null, startMs: number | null): Lease => ({ id, expiresAt: 0, at: 0, pid, startMs });
  // a little process tree: 1 ← 50 (admit) ← 60 (the command, started 600) ← 70 (the session, a child)
  const tree: Record<number, { ppid: number; startMs: number }> = {
    50: { ppid: 1, startMs: 500 },
    60: { ppid: 50, startMs: 600 },
    70: { ppid: 60, startMs: 700 },
    80: { ppid: 1, startMs: 800 },
  };
  const ancestry = (pid: number) => {
    const out = [];
    for (let p = pid; tree[p]; p = tree[p].ppid) out.push({ pid: p, startMs: tree[p].startMs });
    return out;
  };
  const cases: Array<[string, Lease[], number[], string[]]> = [
    ['the command is the session', [lease('L', 60, 600)], [60], ['L']],
    ['the session is a descendant of the command', [lease('L', 60, 600)], [70], ['L']],
    ['not on the roster yet', [lease('L', 60, 600)], [80], []],
    ['no pid bound yet (just leased): counted', [lease('L', null, null)], [60, 70], []],
    ['a reused pid (another start time) never matches', [lease('L', 60, 599)], [70], []],
    ['each lease on its own', [lease('A', 60, 600), lease('B', 80, 800)], [80], ['B']],
  ];
  for (const [name, leases, pids, want] of cases) it(name, () => expect([...leasesShown(leases, pids, ancestry)].sort()).toEqual(want));
});

// ---------------------------------------------------------------- the lease and queue scripts, on the shared Redis

describe('AdmitStore: the check-and-lease and the queue, on Redis (time passed in, so no waiting)', () => {
  let store: AdmitStore;
  beforeEach(() => {
    store = new AdmitStore(new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'), uniqueHost());
  });
  afterEach(async () => {
    await store.redis.del(...Object.values(store.keys));
    await store.close();
  });
  const t0 = 1_800_000_000_000;
  const take = (now: number, live: number, o: { ticket?: string; shown?: string[]; ceiling?: number } = {}) =>
    store.take({ now, live, ceiling: o.ceiling ?? 3, leaseMs: 60_000, ticket: o.ticket ?? null, shown: o.shown ?? [] });

  it('leases count as live until they expire; a shown lease is not counted twice', async () => {
    const a = await take(t0, 1);
    expect(a).toMatchObject({ granted: true, counted: 2 });
    const b = await take(t0 + 1, 1);
    expect(b).toMatchObject({ granted: true, counted: 3 });
    expect(await take(t0 + 2, 1)).toMatchObject({ granted: false, counted: 3 }); // 1 live + 2 leases
    // a snapshot that shows a's session counts it as a row (live 2), not again as a lease
    expect(await take(t0 + 3, 2, { shown: [a.leaseId] })).toMatchObject({ granted: false, counted: 3 });
    // a's and b's leases run out after admitLease
    expect(await take(t0 + 60_002, 1)).toMatchObject({ granted: true, counted: 2 });
    expect((await store.leases(t0 + 60_002)).map((l) => l.id)).toHaveLength(1);
  });

  it('the queue: the head alone takes a slot; a start without --wait does not jump it; a silent waiter drops out', async () => {
    await store.join('w1', null, t0, 5000);
    await store.join('w2', null, t0 + 1, 5000);
    expect(await store.position('w1', t0 + 2, null)).toBe(0);
    expect(await store.position('w2', t0 + 2, null)).toBe(1);
    expect(await take(t0 + 3, 1, { ticket: 'w2' })).toMatchObject({ granted: false, ahead: 1 }); // free slots, but w1 first
    expect(await take(t0 + 3, 1)).toMatchObject({ granted: false, ahead: 2 }); // 1 + 2 queued ≥ 3
    expect(await take(t0 + 4, 1, { ticket: 'w1' })).toMatchObject({ granted: true, counted: 2 });
    expect(await store.position('w1', t0 + 5, null)).toBeNull(); // admitted: out of the queue
    expect(await store.position('w2', t0 + 5, 5000)).toBe(0);
    // w2 stops beating (it died): past its heartbeat it is dropped, and the queue is empty again
    expect(await store.position('w2', t0 + 20_000, null)).toBeNull();
    expect(await take(t0 + 20_001, 1, { ticket: 'w2' })).toMatchObject({ granted: false, lost: true });
    // a lost ticket re-joins at its own place
    await store.join('w3', null, t0 + 20_002, 5000);
    await store.join('w2', 2, t0 + 20_003, 5000);
    expect(await store.position('w2', t0 + 20_004, null)).toBe(0);
  });
});

// ---------------------------------------------------------------- `sunset cap` on a test fleet

describe('sunset cap', () => {
  const ctx = useFleet();
  const cap = (args: string[], over: Record<string, unknown> = {}) =>
    runCli(['cap', '--config', ctx.fleet.writeConfig({ host: uniqueHost(), cap: 4, ...over }), ...args]);

  it('counts only rows with a live pid; lists the finished ones on their way out and the lanes holding slots', async () => {
    const asked = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({
      id: 'fin',
      state: 'done',
      sessionId: asked.sessionId,
      releasedAt: ago(H),
      exitAskedAt: ago(H / 2),
      exitRequests: 1,
      exitRequestedAt: ago(H / 4),
    });
    const lane = await ctx.fleet.spawnBackground({ transcriptAgeMs: 300 * H });
    ctx.fleet.writeTask({ id: 'lane', state: 'awaiting-human', sessionId: lane.sessionId });
    const busy = await ctx.fleet.spawnBackground({ mode: 'busy' });
    const gone = await ctx.fleet.spawnBackground();
    await ctx.fleet.stop(gone); // left: its row is now a record
    ctx.fleet.addRecords(40);

    const j = await cap(['--json']);
    expect(j.code).toBe(0);
    const c = JSON.parse(j.stdout);
    expect(c).toMatchObject({ ceiling: 4, live: 3, liveUnknown: 0, admitting: 0, counted: 3, free: 1, reached: false, records: 41 });
    expect(c.leaving).toMatchObject([{ id: asked.id, taskId: 'fin', via: 'task', step: 'requested', requests: 1 }]);
    expect(c.awaitingHuman).toMatchObject([{ id: lane.id, taskId: 'lane' }]);
    expect(c.awaitingHuman[0].rssBytes).toBeGreaterThan(1024 * 1024);

    const t = await cap([]);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/^cap: 3\/4 — 1 free \(3 live sessions\)$/m);
    expect(t.stdout).toMatch(/on their way out: 1 finished session is being asked to exit\n\s+\S+\s+task fin: requested 1×/);
    expect(t.stdout).toMatch(/lanes awaiting a human holding slots: 1/);
    expect(t.stdout).not.toContain(busy.id); // live, counted, but neither leaving nor a lane

    const at = await cap([], { cap: 3 });
    expect(at.stdout).toMatch(/^cap: 3\/3 — AT THE CEILING/m);
  });

  it('a failed roster exits 1, with the error and no count', async () => {
    await ctx.fleet.spawnBackground();
    ctx.fleet.setRosterFault('fail');
    const t = await cap([]);
    expect(t.code).toBe(1);
    expect(t.stderr).toMatch(/roster probe failed/);
    const j = await cap(['--json']);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ live: null, counted: null, reached: null, error: expect.stringMatching(/roster/) });
  });
});
