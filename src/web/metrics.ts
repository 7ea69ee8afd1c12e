// Prometheus /metrics on sunset's own Registry, computed at scrape from the shared fleet snapshot, the
// queues, the alarms file and the audit log (read incrementally: only the lines added since last time).
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Queue } from 'bullmq';
import type { PipelineDeps } from '../pipeline/deps.js';
import { LANES } from '../report/report.js';
import { withTimeout } from './board.js';
import { AuditCounter } from '../store/audit.js';
import { memoryNow, reportNow } from './model.js';
import { unreadableAlarm } from '../pipeline/unreadable-watch.js';

const CLAUDE_FILES = ['job-state', 'session-file', 'daemon-roster'] as const;

/** Audit events → the counter and label they add to. */
const EVENTS: Record<string, { metric: 'asks' | 'requests' | 'exits' | 'giveUps'; label?: string }> = {
  'exit:asked': { metric: 'asks' },
  'exit:requested': { metric: 'requests', label: 'task' },
  'expire:requested': { metric: 'requests', label: 'expire' },
  'exit:person-request': { metric: 'requests', label: 'person' },
  'exit:exited': { metric: 'exits' },
  'exit:gave-up': { metric: 'giveUps', label: 'task' },
  'expire:gave-up': { metric: 'giveUps', label: 'expire' },
};
const PROBES = ['roster', 'tmux', 'proc', 'tasks', 'projects', 'inbox'];
const VERDICTS = ['eligible', 'protected', 'gone', 'record'];
const DEPTH_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'failed'] as const;

export function createMetrics(deps: PipelineDeps, queues: () => Promise<Queue[]>) {
  const registry = new Registry();
  // the event-loop lag histogram samples once a second, not every 10 ms (prom-client's default): an idle
  // sunset's loop would otherwise wake 100 times a second for it (docs/benchmarks.md, idle CPU)
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  const r = [registry];
  const g = {
    rosterOk: new Gauge({ name: 'sunset_roster_ok', help: '1 when the last roster probe answered, else 0', registers: r }),
    live: new Gauge({ name: 'sunset_live_sessions', help: 'Roster rows with a live process', registers: r }),
    records: new Gauge({ name: 'sunset_records', help: 'Roster rows with no pid (records: never asked, exited or counted)', registers: r }),
    sessions: new Gauge({ name: 'sunset_sessions', help: 'Roster rows by verdict', labelNames: ['verdict'], registers: r }),
    rss: new Gauge({ name: 'sunset_rss_bytes', help: 'Process-tree RSS of live sessions, by lane', labelNames: ['lane'], registers: r }),
    laneSessions: new Gauge({ name: 'sunset_lane_sessions', help: 'Live sessions by lane', labelNames: ['lane'], registers: r }),
    agentSessions: new Gauge({
      name: 'sunset_agent_sessions',
      help: 'Live sessions by the agent CLI that runs them (claude-code, codex, gemini)',
      labelNames: ['agent'],
      registers: r,
    }),
    agentRss: new Gauge({
      name: 'sunset_agent_rss_bytes',
      help: 'Process-tree RSS of live sessions, by the agent CLI that runs them',
      labelNames: ['agent'],
      registers: r,
    }),
    overhead: new Gauge({
      name: 'sunset_fleet_overhead_bytes',
      help: "RSS Claude Code holds beside its sessions: the daemon, warm spares, people's clients, other",
      labelNames: ['kind'],
      registers: r,
    }),
    agentViews: new Gauge({
      name: 'sunset_agent_views',
      help: 'Open agent views (claude agents): while one is open every background session it lists (all, or those under its --cwd) is attach-unknown',
      registers: r,
    }),
    eligibleRss: new Gauge({
      name: 'sunset_eligible_rss_bytes',
      help: 'Process-tree RSS the sessions eligible now would give back by leaving',
      registers: r,
    }),
    pressure: new Gauge({
      name: 'sunset_memory_pressure',
      help: '1 when MemAvailable is under memoryFloorMB (exits then go largest RSS first), else 0',
      registers: r,
    }),
    awaitingOldest: new Gauge({
      name: 'sunset_awaiting_human_oldest_seconds',
      help: 'How long the oldest lane awaiting a human has waited',
      registers: r,
    }),
    probes: new Gauge({
      name: 'sunset_probe_failures',
      help: 'Probes that failed in the last sweep (inbox: sessions whose inbox could not be read)',
      labelNames: ['probe'],
      registers: r,
    }),
    depth: new Gauge({ name: 'sunset_queue_jobs', help: 'Jobs in each queue, by state', labelNames: ['queue', 'state'], registers: r }),
    alarms: new Gauge({ name: 'sunset_alarms', help: 'Alarms raised, ever, by kind', labelNames: ['kind'], registers: r }),
    redisUp: new Gauge({ name: 'sunset_redis_up', help: '1 while Redis answers sunset up, 0 while it is away', registers: r }),
    unreadable: new Gauge({
      name: 'sunset_claude_code_unreadable',
      help: "1 while the claude-code-unreadable alarm is raised and Claude Code's files have not read again, else 0",
      registers: r,
    }),
    unreadableSessions: new Gauge({
      name: 'sunset_claude_code_unreadable_sessions',
      help: 'Live background sessions whose Claude Code files (job state, session file, daemon roster) did not read as sunset knows them in the last sweep, by file',
      labelNames: ['file'],
      registers: r,
    }),
    alarmsOpen: new Gauge({
      name: 'sunset_alarms_open',
      help: 'Alarms no person has acknowledged yet, by kind',
      labelNames: ['kind'],
      registers: r,
    }),
  };
  const c = {
    asks: new Counter({ name: 'sunset_asks_total', help: 'Exit asks delivered (audit "exit:asked")', registers: r }),
    requests: new Counter({
      name: 'sunset_exit_requests_total',
      help: 'Exit requests made: task chains ("exit:requested"), expire ("expire:requested"), people ("exit:person-request")',
      labelNames: ['source'],
      registers: r,
    }),
    exits: new Counter({
      name: 'sunset_exits_total',
      help: 'Sessions confirmed to have left by their own exit path (audit "exit:exited")',
      registers: r,
    }),
    giveUps: new Counter({
      name: 'sunset_give_ups_total',
      help: 'Chains that stopped asking after the last request (audit "exit:gave-up", "expire:gave-up")',
      labelNames: ['source'],
      registers: r,
    }),
    capRefusals: new Counter({ name: 'sunset_cap_refusals_total', help: 'Starts refused at the cap (cap-reached alarms)', registers: r }),
  };
  const audit = new AuditCounter(join(deps.config.stateDir, 'audit.jsonl'));

  async function collect(): Promise<string> {
    const snap = await deps.fleet(2000);
    const report = reportNow(snap, memoryNow(deps.config));
    g.rosterOk.set(snap.roster.ok ? 1 : 0);
    g.live.set(report.roster.live);
    g.records.set(report.roster.records);
    for (const v of VERDICTS) g.sessions.set({ verdict: v }, report.verdicts[v] ?? 0);
    for (const l of LANES) {
      g.rss.set({ lane: l }, report.memory.byLane[l].bytes);
      g.laneSessions.set({ lane: l }, report.memory.byLane[l].sessions);
    }
    g.agentSessions.reset();
    g.agentRss.reset();
    for (const [agent, m] of Object.entries(report.memory.byAgent)) {
      g.agentSessions.set({ agent }, m.sessions);
      g.agentRss.set({ agent }, m.bytes);
    }
    g.eligibleRss.set(report.memory.eligible.bytes);
    const o = report.memory.overhead;
    for (const k of ['daemon', 'spare', 'clients', 'other'] as const) g.overhead.set({ kind: k }, o ? o.byKind[k].bytes : 0);
    g.agentViews.set(report.agentViews);
    g.pressure.set(report.memory.pressure ? 1 : 0);
    g.awaitingOldest.set(Math.round((report.awaitingHuman[0]?.waitedMs ?? 0) / 1000));
    const probes = new Map<string, number>(PROBES.map((p) => [p, 0]));
    for (const k of Object.keys(snap.probeErrors)) probes.set(k, 1);
    for (const s of snap.sessions) if (s.evidence.probeFailures.includes('inbox')) probes.set('inbox', (probes.get('inbox') ?? 0) + 1);
    for (const [p, n] of probes) g.probes.set({ probe: p }, n);

    const alarms = deps.alarms.list();
    g.alarms.reset();
    g.redisUp.set(deps.redis.up ? 1 : 0);
    const open = deps.alarms.open();
    g.alarmsOpen.reset();
    const unreadable = snap.claudeFiles?.unreadable ?? null;
    g.unreadable.set(unreadableAlarm(deps.config.stateDir) ? 1 : 0);
    for (const file of CLAUDE_FILES)
      g.unreadableSessions.set({ file }, new Set(unreadable?.files.filter((x) => x.file === file).flatMap((x) => x.sessions)).size);
    for (const kind of ['session-will-not-exit', 'cap-reached', 'claude-code-unreadable']) {
      g.alarms.set({ kind }, alarms.filter((a) => a.kind === kind).length);
      g.alarmsOpen.set({ kind }, open.filter((a) => a.kind === kind).length);
    }
    setCounter(c.capRefusals, alarms.filter((a) => a.kind === 'cap-reached').length);

    const counts = audit.read();
    const n = (e: string) => counts.get(e) ?? 0;
    setCounter(c.asks, n('exit:asked'));
    setCounter(c.exits, n('exit:exited'));
    for (const [event, def] of Object.entries(EVENTS)) if (def.label) setCounter(c[def.metric], n(event), { source: def.label });

    g.depth.reset();
    try {
      const list = await queues();
      await withTimeout(
        Promise.all(
          list.map(async (q) => {
            const jc = await q.getJobCounts(...DEPTH_STATES);
            for (const st of DEPTH_STATES) g.depth.set({ queue: q.name, state: st }, jc[st] ?? 0);
          }),
        ),
        3000,
        'queue counts',
      );
    } catch {
      // Redis unreachable: the depths are absent rather than wrong
    }
    return registry.metrics();
  }

  // one scrape at a time: each resets and refills the gauges it owns
  let queue: Promise<unknown> = Promise.resolve();
  const serial = (): Promise<string> => {
    const next = queue.then(collect, collect);
    queue = next.catch(() => undefined);
    return next;
  };
  return { registry, collect: serial, contentType: registry.contentType };
}

/** Counters only go up; these mirror totals kept on disk, so they are set by reset + inc. */
function setCounter(counter: Counter<string>, value: number, labels?: Record<string, string>) {
  if (labels) {
    counter.remove(labels);
    counter.inc(labels, value);
  } else {
    counter.reset();
    counter.inc(value);
  }
}
