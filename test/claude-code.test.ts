// What sunset reads of the real Claude Code CLI, against what the real CLI 2.1.328 wrote (sim/real/fixtures,
// captured by sim/real/capture-fixtures.ts): the roster's rows, a job's state.json, the pins file, the argv of
// every kind of process it runs. Pure: no process is started here (test/real-*.test.ts run the real CLI).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRoster, labelOf } from '../src/evidence/roster.js';
import {
  fleetOverhead,
  inFlightCount,
  parseJobState,
  parsePins,
  parseVersion,
  sessionPids,
  versionNote,
} from '../src/evidence/claude-code.js';
import type { ProcTable } from '../src/evidence/proc.js';
import { attachedTo, claudeArgs, claudeNames, findClients } from '../src/evidence/clients.js';
import { resolveSession } from '../src/doctrine/identity.js';

const fx = (p: string) => readFileSync(new URL(`../sim/real/fixtures/${p}`, import.meta.url), 'utf8');
const json = (p: string) => JSON.parse(fx(p));
const NAMES = claudeNames('claude', ['claude', 'attach']);

describe('the real roster (claude agents --json --all, 2.1.328)', () => {
  const r = parseRoster(fx('roster/all.json'));
  if (!r.ok) throw new Error(r.error);
  it('parses every row, interactive ones (no id, no state) included', () => {
    expect(r.problems).toEqual([]);
    expect(r.rows.length).toBe(json('roster/all.json').length);
    const inter = r.rows.filter((x) => x.kind === 'interactive');
    expect(inter.length).toBeGreaterThan(0);
    for (const x of inter) {
      expect(x.id).toBeNull();
      expect(x.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(x.state).toBeNull();
      expect(labelOf(x)).toBe(x.sessionId.slice(0, 8));
    }
  });
  it('reads startedAt as epoch ms, waitingFor, names; records have no pid', () => {
    const waiting = parseRoster(`[${fx('roster/row-background-waiting.json')}]`);
    expect(waiting.ok && waiting.rows[0]).toMatchObject({
      status: 'waiting',
      waitingFor: 'permission prompt',
      state: 'blocked',
      name: 'create a file',
    });
    const row = json('roster/row-background-working.json');
    const parsed = parseRoster(JSON.stringify([row]));
    expect(parsed.ok && parsed.rows[0].startedAt).toBe(new Date(row.startedAt).toISOString());
    const rec = parseRoster(`[${fx('roster/record-stopped.json')}]`);
    expect(rec.ok && rec.rows[0]).toMatchObject({ pid: null, state: 'stopped', status: 'unknown' });
  });
  it('every row can be named by short id, sessionId, prefix or name', () => {
    const rows = r.rows.map((x) => ({ ...x, running: x.pid !== null }));
    const bg = rows.find((x) => x.id && x.pid && x.name)!;
    for (const q of [bg.id!, bg.sessionId, bg.id!.slice(0, 6), bg.name!]) {
      const f = resolveSession(rows, q, (x) => x.running);
      expect(f.kind === 'one' && f.row.sessionId, q).toBe(bg.sessionId);
    }
    const it1 = rows.find((x) => x.kind === 'interactive')!;
    const f = resolveSession(rows, it1.sessionId.slice(0, 8), (x) => x.running);
    expect(f.kind === 'one' && f.row.sessionId).toBe(it1.sessionId);
  });
});

describe("a job's state.json", () => {
  it('blocked: the question it asks; done: nothing in flight; a background shell: in flight', () => {
    expect(parseJobState(fx('jobs/state-blocked.json'))).toMatchObject({
      state: 'blocked',
      tempo: 'blocked',
      needs: 'Should I squash the commits?',
      inFlight: 0,
    });
    expect(parseJobState(fx('jobs/state-done.json'))).toMatchObject({
      state: 'done',
      inFlight: 0,
      cwd: '/tmp/sunset-real-Fee8vO/work/w2-59e5',
    });
    expect(parseJobState(fx('jobs/state-done.json'))!.originCwd).toBeUndefined();
    expect(parseJobState('{"cwd":"/r/.claude/worktrees/x","originCwd":"/r","worktreePath":"/r/.claude/worktrees/x"}')).toMatchObject({
      cwd: '/r/.claude/worktrees/x',
      originCwd: '/r',
    });
    expect(parseJobState(fx('jobs/state-inflight.json'))).toMatchObject({ state: 'working', inFlight: 1 });
    expect(parseJobState(fx('jobs/state-waiting-permission.json'))).toMatchObject({
      tempo: 'blocked',
      needs: 'approve Bash: touch never-made',
    });
  });
  it('a job that has just started writes no inFlight: unknown, which protects', () => {
    expect(parseJobState(fx('jobs/state-busy.json'))!.inFlight).toBeNull();
  });
  it('odd shapes are unknown, never zero', () => {
    expect(parseJobState('not json')).toBeNull();
    expect(parseJobState('[]')).toBeNull();
    for (const v of [null, [], 'x', { tasks: '1' }, { kinds: [] }, { tasks: -1 }]) expect(inFlightCount(v), JSON.stringify(v)).toBeNull();
    expect(inFlightCount({ tasks: 0, queued: 2, kinds: ['x'], drainableMonitors: 0 })).toBe(2);
  });
});

describe('the pins file', () => {
  it('a JSON array of short ids; anything else is unknown', () => {
    const p = parsePins(fx('jobs/pins.json'));
    expect(p.ok && [...p.pins]).toEqual(json('jobs/pins.json'));
    expect(parsePins(fx('jobs/pins-empty.json'))).toEqual({ ok: true, pins: new Set() });
    for (const bad of ['{', '{}', '[1]', 'null']) expect(parsePins(bad).ok, bad).toBe(false);
  });
  it('the version line', () => {
    expect(parseVersion('2.1.328 (Claude Code)\n')).toBe('2.1.328');
  });
});

/** A process table from the real tree the fixtures recorded (pid, ppid, argv). */
function tableOf(list: Array<{ pid: number; ppid: number; argv: string[] }>): ProcTable {
  const procs = new Map(list.map((p) => [p.pid, { pid: p.pid, ppid: p.ppid, state: 'S', startMs: 0, argv: p.argv }]));
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  return { procs, children };
}

describe("the real CLI's processes", () => {
  const tree = json('processes/tree.json') as Array<{
    pid: number;
    ppid: number;
    role: string;
    argv: string[];
    rssMb: number;
    shortId?: string;
  }>;
  const table = tableOf(tree);
  it('retitled helpers ("claude bg-pty-host", "claude bg-spare") are Claude Code processes', () => {
    expect(claudeArgs(json('argv/pty-host-fresh.json'), NAMES)?.[0]).toBe('bg-pty-host');
    expect(claudeArgs(json('argv/session-claimed-spare.json'), NAMES)?.[0]).toBe('bg-spare');
    expect(claudeArgs(json('argv/daemon.json'), NAMES)?.slice(0, 2)).toEqual(['daemon', 'run']);
    expect(claudeArgs(['/usr/bin/python3', 'x.py'], NAMES)).toBeNull();
  });
  it('people: attach by short id and by name, and the agent view', () => {
    const t = tableOf([
      { pid: 1, ppid: 0, argv: json('argv/attach-short-id.json') },
      { pid: 2, ppid: 0, argv: json('argv/attach-name.json') },
      { pid: 3, ppid: 0, argv: json('argv/agent-view.json') },
      { pid: 4, ppid: 0, argv: json('argv/daemon.json') },
    ]);
    const c = findClients(t, NAMES, ['claude', 'attach']);
    expect(c.agentViews).toEqual([3]);
    expect(attachedTo(c.attach, { id: '39d62508', sessionId: '39d62508-caec-487c-aed3-aee4a16133c3', name: 'refactor-parser' })).toEqual([
      1, 2,
    ]);
    expect(attachedTo(c.attach, { id: 'b4b7ad6e', sessionId: 'b4b7ad6e-x', name: 'write the changelog' })).toEqual([]);
  });
  it("a background session's memory is its tree and its pty host; the daemon and spares are overhead", () => {
    const sessions = tree.filter((p) => p.role === 'session');
    const bg = sessions.find((p) => p.shortId)!;
    const pids = sessionPids(table, bg.pid, 'background', NAMES);
    const host = tree.find((p) => p.pid === bg.ppid)!;
    expect(host.role).toBe('pty-host');
    expect(pids).toContain(host.pid);
    const counted = new Set<number>();
    for (const s of sessions) for (const p of sessionPids(table, s.pid, s.shortId ? 'background' : 'interactive', NAMES)) counted.add(p);
    const mb = new Map(tree.map((p) => [p.pid, p.rssMb]));
    const o = fleetOverhead(table, counted, NAMES, { ownPid: -1, rss: (ps) => ps.reduce((a, p) => a + (mb.get(p) ?? 0), 0) });
    expect(o.byKind.daemon.processes).toBe(1);
    expect(o.byKind.spare.processes).toBeGreaterThanOrEqual(1);
    // every process of the real tree is counted once: in a session, or as overhead
    const total = tree.filter((p) => p.role !== 'tmux').reduce((a, p) => a + p.rssMb, 0); // the tmux server is not Claude Code's
    const inSessions = [...counted].reduce((a, p) => a + (mb.get(p) ?? 0), 0);
    expect(inSessions + o.bytes).toBe(total);
  });
});

describe("the CLI's version note", () => {
  it('a CLI that is not there is not noted (its absence is said where it matters); one that fails to answer is', async () => {
    expect(await versionNote('/nonexistent/claude', 5000)).toBeNull();
    expect(await versionNote('false', 5000)).toMatch(/^could not tell which Claude Code this is \(false --version: /);
  });
});
