// `sunset demo`: a newcomer's first look. A simulated fleet (the test fleet's stand-in agents, a private
// tmux server), windows compressed to seconds, the real pipeline narrated as it decides, then a summary.
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { dropHostKeys } from './redis.js';
import { parseConfig } from './config.js';
import { createLogger } from './log.js';
import { startSunset, type Running } from './pipeline/up.js';
import { run } from './run.js';
import { freePortNear, startPrivateRedis, type PrivateRedis } from './private-redis.js';
import { listExits } from './store/ledger.js';
import { Alarms } from './store/alarms.js';
import { readAudit } from './store/audit.js';
import { buildReport, formatBytes } from './report/report.js';
import { REASONS, type Reason } from './doctrine/verdict.js';
import type { PipelineDeps } from './pipeline/deps.js';

type Fleet = import('../sim/fleet/fleet.js').TestFleet;
type Agent = import('../sim/fleet/fleet.js').Agent;

export interface DemoOptions {
  env: NodeJS.ProcessEnv;
  out: (s: string) => void;
  /** Where a failure is said (default: out). */
  err?: (s: string) => void;
  keep: boolean;
  maxMs?: number;
  startWeb?: (deps: PipelineDeps) => Promise<{ close(): Promise<void>; url: string }>;
  webPort?: number;
  /** With keep: resolves when the kept demo should end (default: SIGINT or SIGTERM). */
  keepUntil?: Promise<void>;
}

/** Is `port` free on the web's loopback address? Checked before the demo builds or starts anything. */
export async function portFree(port: number, host = '127.0.0.1'): Promise<{ free: true } | { free: false; code: string }> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', (err: NodeJS.ErrnoException) => resolve({ free: false, code: err.code ?? err.message }));
    s.listen(port, host, () => s.close(() => resolve({ free: true })));
  });
}

/** How to run this CLI again from another terminal: the compiled one by node, the source one by tsx. */
function cliWords(): string {
  const file = fileURLToPath(new URL('./cli.js', import.meta.url)).replace(/\.js$/, import.meta.url.endsWith('.ts') ? '.ts' : '.js');
  const q = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);
  return file.endsWith('.ts') ? `npx tsx ${q(file)}` : `node ${q(file)}`;
}

const H = 3_600_000;

/** Redis: REDIS_URL, else 127.0.0.1:6379, else a private redis-server on a free port. */
async function findRedis(env: NodeJS.ProcessEnv, out: (s: string) => void): Promise<{ url: string; own: PrivateRedis | null }> {
  if (env.REDIS_URL) return { url: env.REDIS_URL, own: null };
  const url = 'redis://127.0.0.1:6379';
  if (await ping(url)) return { url, own: null };
  out('No Redis at 127.0.0.1:6379 — starting a private redis-server for the demo…');
  const own = await startPrivateRedis(await freePortNear(6390));
  return { url: own.url, own };
}

async function ping(url: string): Promise<boolean> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: 1000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

export async function runDemo(o: DemoOptions): Promise<number> {
  const out = o.out;
  const err = o.err ?? out;
  // the port first: a busy one must fail before the demo has built, started or exited anything
  if (o.webPort !== undefined && o.webPort !== 0) {
    if (!Number.isInteger(o.webPort) || o.webPort < 1 || o.webPort > 65535) {
      err(`sunset demo: --port takes a port number (1–65535), not ${JSON.stringify(String(o.webPort))}`);
      return 2;
    }
    const p = await portFree(o.webPort);
    if (!p.free) {
      err(`sunset demo: port ${o.webPort} on 127.0.0.1 is not free (${p.code}): choose another --port, or leave it out for a free one. Nothing was started.`);
      return 2;
    }
  }
  const tmux = await run(['tmux', '-V'], { timeoutMs: 5000 });
  if (!tmux.ok) {
    out('sunset demo needs tmux (for the interactive sessions): install it, e.g. `apt-get install tmux`.');
    return 1;
  }
  const { TestFleet } = await import('../sim/fleet/fleet.js');
  const redis = await findRedis(o.env, out).catch((err: Error) => {
    out(`sunset demo needs Redis: set REDIS_URL, run one on 127.0.0.1:6379, or install redis-server (${err.message}).`);
    return null;
  });
  if (!redis) return 1;

  const fleet = await TestFleet.create();
  let running: Running | null = null;
  let host: string | null = null;
  const timers: NodeJS.Timeout[] = [];
  try {
    out(`\nsunset demo — a simulated fleet in ${fleet.root}\n`);
    const cast = await buildFleet(fleet, timers);
    const overrides = demoOverrides(redis.url, o.webPort);
    host = overrides.host;
    // the config of this fleet, as a file: with --keep, the CLI is pointed at it (printed below)
    const configFile = fleet.writeConfig(overrides);
    const config = parseConfig(fleet.config(overrides), { env: {} });
    const narrator = new Narrator(out, cast);
    out(`Redis: ${redis.url}${redis.own ? ' (private, for this demo)' : ''}; queues session-exit@${config.host} and friends.`);
    out(`Windows compressed: grace 2s, ask → request 2s, between requests 2s, expire after 30m idle (transcripts here are 1h old).\n`);
    for (const line of castLines(cast)) out(line);
    running = await startSunset(config, { log: createLogger('debug', narrator.stream()), roles: o.startWeb ? ['producers', 'workers', 'web'] : ['producers', 'workers'], startWeb: o.startWeb });
    if (running.web) {
      out(`Bull Board: ${running.web.url}queues   fleet page: ${running.web.url}   decisions: ${running.web.url}decisions`);
      out(o.keep ? `(they stay open while the demo is kept: until Ctrl-C)` : `(these pages close with the demo, in about a minute; \`sunset demo --keep\` keeps them open)`);
    }

    // The busy session finishes its turn after a while: it is exited only once the evidence clears.
    timers.push(
      setTimeout(() => {
        out(`  ·    busy: finishes its turn (roster status idle, transcript goes quiet)`);
        fleet.setStatus(cast.busy, 'idle');
        fleet.ageTranscript(cast.busy, H);
      }, 9000),
    );

    const done = () => {
      const t = (id: string) => fleet.readTask(id);
      const finished = ['demo-done', 'demo-abandoned', 'demo-parked', 'demo-busy', 'demo-inter'].every((id) => t(id).exitedAt);
      return finished && Boolean(t('demo-stubborn').exitGaveUpAt) && !fleet.isAlive(cast.untasked);
    };
    const deadline = Date.now() + (o.maxMs ?? 110_000);
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const finishedInTime = done();
    await summary(out, running, fleet, cast, finishedInTime);
    if (o.keep) {
      const cli = cliWords();
      out(`\n--keep: sunset is still running on the demo fleet. Ctrl-C to stop and clean up.`);
      out(`Its config is ${configFile}; from another terminal, point the CLI at it:`);
      out(`  ${cli} verdict --config ${configFile}`);
      out(`(and report, alarms, exited, exit ID … with the same --config; the agents' tmux server is \`tmux ${config.fleet.tmuxSocket?.includes('/') ? '-S' : '-L'} ${config.fleet.tmuxSocket}\`, the queues are host ${config.host} on ${redis.url})`);
      await (o.keepUntil ??
        new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        }));
    } else if (running.web) out(`\nThe demo has ended: its pages, its queues and its fleet are gone (\`sunset demo --keep\` keeps them).`);
    return 0;
  } catch (e: any) {
    // part-way: say it plainly, then clean up everything it started (below), whatever state it is in
    err(`sunset demo: stopped part-way: ${e?.message ?? String(e)}. Cleaning up what it started (its sessions, its queues in Redis).`);
    return 1;
  } finally {
    for (const t of timers) clearTimeout(t);
    if (running) await running.close().catch(() => undefined);
    // the demo's queues carry a demo-only host name: remove every key of it from a shared Redis
    if (host) await dropHostKeys(redis.url, host);
    await fleet.destroy();
    await redis.own?.shutdown();
  }
}

interface Cast {
  finished: Agent[];
  busy: Agent;
  attached: Agent;
  awaiting: Agent[];
  active: Agent;
  stubborn: Agent;
  interactive: Agent;
  untasked: Agent;
  names: Map<string, string>;
}

async function buildFleet(fleet: Fleet, timers: NodeJS.Timeout[]): Promise<Cast> {
  const names = new Map<string, string>();
  const spawn = async (label: string, f: () => Promise<Agent>) => {
    const a = await f();
    names.set(a.id, label);
    names.set(a.sessionId, label);
    return a;
  };
  const bg = (label: string, mode: 'idle' | 'busy' | 'stubborn' = 'idle') => spawn(label, () => fleet.spawnBackground({ mode, transcriptAgeMs: H }));
  const finished = [await bg('finished #1'), await bg('finished #2'), await bg('finished #3')];
  const busy = await spawn('busy', () => fleet.spawnBackground({ mode: 'busy' }));
  const attached = await bg('attached');
  await fleet.attach(attached);
  const awaiting = [await bg('awaiting-human #1'), await bg('awaiting-human #2')];
  const active = await bg('active');
  const stubborn = await bg('stubborn', 'stubborn');
  const interactive = await spawn('interactive', () => fleet.spawnInteractive({ transcriptAgeMs: H }));
  const untasked = await bg('untasked (idle 1h)');
  for (let i = 0; i < RECORDS; i++) fleet.addRecord();

  const states = ['done', 'abandoned', 'parked'];
  finished.forEach((a, i) => fleet.writeTask({ id: `demo-${states[i]}`, state: 'active', sessionId: a.sessionId, title: `finished task ${i + 1}` }));
  fleet.writeTask({ id: 'demo-busy', state: 'active', sessionId: busy.sessionId });
  fleet.writeTask({ id: 'demo-attached', state: 'active', sessionId: attached.sessionId });
  awaiting.forEach((a, i) => fleet.writeTask({ id: `demo-await-${i + 1}`, state: 'awaiting-human', sessionId: a.sessionId, stateChangedAt: new Date(Date.now() - (46 + 200 * i) * H).toISOString() }));
  fleet.writeTask({ id: 'demo-active', state: 'active', sessionId: active.sessionId });
  fleet.writeTask({ id: 'demo-stubborn', state: 'active', sessionId: stubborn.sessionId });
  fleet.writeTask({ id: 'demo-inter', state: 'active', sessionId: interactive.sessionId });
  // The Driver closes its tasks a moment after sunset starts: the watcher sees them turn terminal.
  // (Kept with the others: a demo that stops before it fires must not write into a fleet already gone.)
  timers.push(
    setTimeout(() => {
      for (const [id, state] of Object.entries(CLOSES_AS)) fleet.writeTask({ ...fleet.readTask(id), id, state });
    }, 1500),
  );
  return { finished, busy, attached, awaiting, active, stubborn, interactive, untasked, names };
}

/** The roster records without a pid the demo's fleet starts with. */
const RECORDS = 3;

/** The state each of the demo's tasks closes in (the Driver's closing, 1.5 s in). */
const CLOSES_AS: Record<string, string> = { 'demo-done': 'done', 'demo-abandoned': 'abandoned', 'demo-parked': 'parked', 'demo-busy': 'done', 'demo-attached': 'done', 'demo-stubborn': 'done', 'demo-inter': 'done' };

/** Who is who, before anything happens: the names the narration uses, and each one's task. */
function castLines(cast: Cast): string[] {
  return [
    `The fleet: ${new Set(cast.names.values()).size} sessions (stand-in agents) and ${RECORDS} roster records without a pid (rows of sessions that ended: never acted on).`,
    `  finished #1–#3       background, idle 1h; tasks demo-done, demo-abandoned, demo-parked close as done, abandoned and`,
    `                       parked — a task's three terminal states: any of them ends its session's work`,
    `  busy                 background, mid-turn when its task (demo-busy) closes: waited for`,
    `  attached             background, a person attached to it: protected while they are (task demo-attached)`,
    `  awaiting-human #1,#2 tasks waiting on a person (46 h and 246 h): protected, reported, never acted on`,
    `  active               its task (demo-active) still open: protected`,
    `  stubborn             ignores every request to leave (task demo-stubborn): asked once, requested 3 times, then a person`,
    `  interactive          in a tmux pane (task demo-inter): leaves by \`/exit\` typed into its pane`,
    `  untasked (idle 1h)   no task; idle past the expire window (30m here)`,
    `The Driver closes the tasks 1.5 s in. Each timed line below is one of sunset's decisions, from its log.\n`,
  ];
}

function demoOverrides(redisUrl: string, webPort = 0) {
  return {
    host: `demo-${Math.random().toString(36).slice(2, 8)}`,
    redisUrl,
    probeTimeout: '5s',
    exitRate: { max: 2, per: '1s' },
    web: { port: webPort },
    windows: {
      grace: '2s',
      silence: '1s',
      askWait: '2s',
      retryWait: '2s',
      exitConfirm: '3s',
      recheck: '1s',
      reconcileEvery: '3s',
      expireEvery: '4s',
      expireIdle: '30m',
    },
  };
}

/** Turns the pipeline's structured log into sentences a newcomer can follow. */
class Narrator {
  private start = Date.now();
  private seen = new Set<string>();
  constructor(
    private readonly out: (s: string) => void,
    private readonly cast: Cast,
  ) {}
  stream() {
    return new Writable({
      write: (chunk, _e, cb) => {
        for (const line of String(chunk).split('\n')) {
          if (!line.trim()) continue;
          try {
            this.say(JSON.parse(line));
          } catch {
            /* not ours */
          }
        }
        cb();
      },
    });
  }
  private who(e: Record<string, any>) {
    return this.cast.names.get(e.sessionId) ?? this.cast.names.get(e.id) ?? e.id ?? e.sessionId ?? '?';
  }
  private say(e: Record<string, any>) {
    const t = `${((Date.now() - this.start) / 1000).toFixed(1).padStart(5)}s`;
    const w = this.who(e);
    const once = (key: string, text: string) => {
      if (this.seen.has(key)) return;
      this.seen.add(key);
      this.out(`${t}  ${text}`);
    };
    switch (e.event) {
      case 'task:released':
        return once(`rel/${e.taskId}`, `task ${e.taskId} is ${CLOSES_AS[e.taskId] ?? 'finished'} → released its loop (never the session); the grace window starts for its session, ${w}`);
      case 'ask:deferred':
        return once(`def/${e.taskId}/${e.why}`, `${w}: not yet — ${String(e.why).split(',').map((r) => REASONS[r as Reason] ?? r).join('; ')}`);
      case 'chain:ended':
        return once(`end/${e.taskId}`, `${w}: chain ends (${e.why})`);
      case 'exit:asked':
        return once(`ask/${e.taskId}`, `${w}: asked once to wrap up (${e.via === 'socket' ? 'a message over its messaging socket' : e.via === 'pane' ? 'a message typed into its pane' : 'a message in its inbox'})`);
      case 'exit:requested':
        return once(`req/${e.taskId}/${e.n}`, `${w}: exit request ${e.n} of 3 (on the rate-limited exit queue)`);
      case 'expire:requested':
        return once(`exp/${e.sessionId}/${e.n}`, `${w}: untasked and idle past the expire window → exit request ${e.n} of 3`);
      case 'exit:exited':
        return once(`ok/${e.jobId}`, `${w}: left by its own exit path (${e.method}); conversation resumable`);
      case 'exit:still-running':
        return once(`no/${e.jobId}`, `${w}: still running after the request — sunset waits, never forces`);
      case 'exit:spared':
        return once(`sp/${e.jobId}`, `${w}: re-checked just before acting and spared (${(e.reasons ?? []).join(', ')})`);
      case 'exit:gave-up':
        return once(`gu/${e.taskId}`, `${w}: three requests ignored → gave up; a person decides now`);
      case 'alarm:raised':
        return once(`al/${e.key}`, `ALARM ${e.kind}: ${e.message}`);
    }
  }
}

async function summary(out: (s: string) => void, running: Running, fleet: Fleet, cast: Cast, finishedInTime: boolean) {
  const deps = running.deps;
  const exits = listExits(deps.config.stateDir);
  const exited = exits.filter((x) => x.outcome === 'exited');
  const freed = exited.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  // every ask, however it was delivered (its socket, its inbox, its pane), from the audit
  const asked = new Set(readAudit(deps.config.stateDir).filter((e) => e.event === 'exit:asked').map((e) => e.sessionId ?? e.taskId)).size;
  const snap = await deps.fleet(0);
  const report = buildReport(snap);
  out(`\n── summary ${finishedInTime ? '' : '(stopped at the time limit) '}──────────────────────────────────────`);
  out(`asked: ${asked} sessions, once each`);
  out(`exited by their own path: ${exited.length} (${exited.map((x) => cast.names.get(x.sessionId) ?? x.sessionId).join(', ')})`);
  out(`memory given back: ${formatBytes(freed)}`);
  out(`protected now:`);
  for (const s of snap.sessions.filter((x) => x.verdict === 'protected')) {
    out(`  ${(cast.names.get(s.sessionId) ?? s.label).padEnd(20)} ${s.reasons.map((r) => `${r} (${REASONS[r]})`).join('; ')}`);
  }
  out(`roster records without a pid (never acted on): ${snap.sessions.filter((x) => x.verdict === 'record').length} — ${RECORDS} from the start, the rest are sessions that left`);
  const alarms = new Alarms(deps.config).open();
  out(`alarms: ${alarms.length}${alarms.map((a) => `\n  ${a.id}  ${a.kind}: ${a.message}`).join('')}${alarms.length ? `\n  (a person closes one with \`sunset alarms ack ID\`, or on the decisions page)` : ''}`);
  const ah = report.awaitingHuman;
  const held = ah.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  out(`lanes awaiting a human: ${ah.length}, holding ${formatBytes(held)} — reported for a person, never acted on`);
  out(`signals received by any agent: ${fleet.signals().length}`);
  out(`\nNext: \`npm test\`; \`sunset verdict --json\` on your own fleet; docs/ for the rest.`);
}
