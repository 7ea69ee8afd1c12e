// `sunset demo`: a newcomer's first look. A simulated fleet (the test fleet's stand-in agents, a private
// tmux server), windows compressed to seconds, the real pipeline narrated as it decides, then a summary.
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { parseConfig } from './config.js';
import { createLogger } from './log.js';
import { startSunset, type Running } from './pipeline/up.js';
import { DemoParts, STOPPED_LINE } from './demo-parts.js';
import { Narrator } from './demo-narrator.js';
import type { StopSignals } from './stop-signals.js';
import { run } from './run.js';
import { freePortNear, startPrivateRedis, type PrivateRedis } from './private-redis.js';
import { listExits } from './store/ledger.js';
import { Alarms } from './store/alarms.js';
import { readAudit } from './store/audit.js';
import { buildReport, formatBytes } from './report/report.js';
import { REASONS } from './doctrine/verdict.js';
import type { PipelineDeps } from './pipeline/deps.js';
import { errorMessage } from './errors.js';
import { buildFleet, castLines, closeTasks, demoOverrides, H, RECORDS, type Cast } from './demo-cast.js';

type Fleet = import('../sim/fleet/fleet.js').TestFleet;

export interface DemoOptions {
  env: NodeJS.ProcessEnv;
  out: (s: string) => void;
  /** Where a failure is said (default: out). */
  err?: (s: string) => void;
  keep: boolean;
  maxMs?: number;
  startWeb?: (deps: PipelineDeps) => Promise<{ close(): Promise<void>; url: string }>;
  webPort?: number;
  /** With keep: resolves when the kept demo should end (default: the first of `stop`). */
  keepUntil?: Promise<void>;
  /** Ctrl-C and SIGTERM (src/stop-signals.ts): the demo stops where it is and removes what it started. */
  stop?: StopSignals;
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
  // everything it starts is held in `parts`, and removed from there however the demo ends (src/demo-parts.ts);
  // once that has begun, what the abandoned flow or sunset's closing would still narrate is not said
  const parts = new DemoParts();
  const out = (s: string) => void (parts.halted || o.out(s));
  const err = o.err ?? o.out;
  // the port first: a busy one must fail before the demo has built, started or exited anything
  if (o.webPort !== undefined && o.webPort !== 0) {
    if (!Number.isInteger(o.webPort) || o.webPort < 1 || o.webPort > 65535) {
      err(`sunset demo: --port takes a port number (1–65535), not ${JSON.stringify(String(o.webPort))}`);
      return 2;
    }
    const p = await portFree(o.webPort);
    if (!p.free) {
      err(
        `sunset demo: port ${o.webPort} on 127.0.0.1 is not free (${p.code}): choose another --port, or leave it out for a free one. Nothing was started.`,
      );
      return 2;
    }
  }
  const tmux = await run(['tmux', '-V'], { timeoutMs: 5000 });
  if (!tmux.ok) {
    out('sunset demo needs tmux (for the interactive sessions): install it, e.g. `apt-get install tmux`.');
    return 1;
  }
  // a Ctrl-C during the checks above: nothing started yet
  if (o.stop?.code != null) return o.stop.code;
  const { TestFleet, codexScript } = await import('../sim/fleet/fleet.js');
  let host: string | null = null;
  let failed = false;
  const flow = (async (): Promise<number> => {
    const redis = await (parts.redis = findRedis(o.env, out).catch((err: Error) => {
      out(`sunset demo needs Redis: set REDIS_URL, run one on 127.0.0.1:6379, or install redis-server (${err.message}).`);
      return null;
    }));
    if (!redis) return 1;
    parts.check();
    const fleet = await (parts.fleet = TestFleet.create());
    out(`\nsunset demo — a simulated fleet in ${fleet.root}\n`);
    const cast = await buildFleet(fleet, parts);
    const overrides = demoOverrides(redis.url, o.webPort, { command: codexScript(), home: fleet.codexHome });
    host = overrides.host;
    // the config of this fleet, as a file: with --keep, the CLI is pointed at it (printed below)
    const configFile = fleet.writeConfig(overrides);
    const config = parseConfig(fleet.config(overrides), { env: {} });
    const narrator = new Narrator(out, cast.names);
    out(`Redis: ${redis.url}${redis.own ? ' (private, for this demo)' : ''}; queues session-exit@${config.host} and friends.`);
    out('');
    for (const line of castLines(cast)) out(line);
    parts.check();
    parts.keys = { url: redis.url, host: config.host };
    const running = await (parts.sunset = startSunset(config, {
      log: createLogger('debug', narrator.stream()),
      roles: o.startWeb ? ['producers', 'workers', 'web'] : ['producers', 'workers'],
      startWeb: o.startWeb,
    }));
    narrator.startClock();
    // the Driver closes its tasks a moment after sunset starts (a timer of the parts: never after the fleet is gone)
    parts.timers.push(setTimeout(() => closeTasks(fleet), 1500));
    if (running.web) {
      out(`Bull Board: ${running.web.url}queues   fleet page: ${running.web.url}   decisions: ${running.web.url}decisions`);
      out(
        o.keep
          ? `(they stay open while the demo is kept: until Ctrl-C)`
          : `(these pages close with the demo, in about a minute; \`sunset demo --keep\` keeps them open)`,
      );
    }

    // The busy session finishes its turn after a while: it is exited only once the evidence clears.
    parts.timers.push(
      setTimeout(() => {
        out(`  ·    busy: finishes its turn (roster status idle, transcript goes quiet)`);
        fleet.setStatus(cast.busy, 'idle');
        fleet.ageTranscript(cast.busy, H);
      }, 9000),
    );

    const done = () => {
      const t = (id: string) => fleet.readTask(id);
      const finished = ['demo-done', 'demo-abandoned', 'demo-parked', 'demo-busy', 'demo-inter', 'demo-codex'].every(
        (id) => t(id).exitedAt,
      );
      return finished && Boolean(t('demo-stubborn').exitGaveUpAt) && !fleet.isAlive(cast.untasked);
    };
    const deadline = Date.now() + (o.maxMs ?? 110_000);
    while (!done() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      parts.check();
    }
    const finishedInTime = done();
    await summary(out, running, fleet, cast, finishedInTime);
    if (o.keep) {
      const cli = cliWords();
      out(`\n--keep: sunset is still running on the demo fleet. Ctrl-C to stop and clean up.`);
      out(`Its config is ${configFile}; from another terminal, point the CLI at it:`);
      out(`  ${cli} verdict --config ${configFile}`);
      out(
        `(and report, alarms, exited, exit ID … with the same --config; the agents' tmux server is \`tmux ${config.fleet.tmuxSocket?.includes('/') ? '-S' : '-L'} ${config.fleet.tmuxSocket}\`, the queues are host ${config.host} on ${redis.url})`,
      );
      await (o.keepUntil ??
        o.stop?.signalled ??
        new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        }));
    } else if (running.web) out(`\nThe demo has ended: its pages, its queues and its fleet are gone (\`sunset demo --keep\` keeps them).`);
    return 0;
  })();
  // after a Ctrl-C the flow is left where it is (what it still does fails at check(), or on a fleet that is gone)
  flow.catch(() => undefined);
  let code: number;
  try {
    code = await Promise.race([flow, o.stop?.signalled ?? new Promise<never>(() => undefined)]);
  } catch (e) {
    // part-way: say it plainly, then clean up everything it started (below), whatever state it is in
    failed = true;
    err(`sunset demo: stopped part-way: ${errorMessage(e)}. Cleaning up what it started (its sessions, its queues in Redis).`);
    code = 1;
  }
  o.stop?.cleaning(); // a Ctrl-C from here on finds it cleaning up, and is told so
  const left = await parts.remove();
  if (left.length) err(`sunset demo: could not remove in time: ${left.join('; ')}${host ? ` (its queues are host ${host})` : ''}.`);
  if (o.stop?.code != null) {
    if (!left.length) o.out(STOPPED_LINE);
    return o.stop.code;
  }
  return failed || !left.length ? code : 1;
}

async function summary(out: (s: string) => void, running: Running, fleet: Fleet, cast: Cast, finishedInTime: boolean) {
  const deps = running.deps;
  const exits = listExits(deps.config.stateDir);
  const exited = exits.filter((x) => x.outcome === 'exited');
  const freed = exited.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  // every ask, however it was delivered (its socket, its inbox, its pane), from the audit
  const asked = new Set(
    readAudit(deps.config.stateDir)
      .filter((e) => e.event === 'exit:asked')
      .map((e) => e.sessionId ?? e.taskId),
  ).size;
  const snap = await deps.fleet(0);
  const report = buildReport(snap);
  const records = snap.sessions.filter((x) => x.verdict === 'record').length;
  out(`\n── summary ${finishedInTime ? '' : '(stopped at the time limit) '}──────────────────────────────────────`);
  out(`asked to wrap up: ${asked} sessions, once each (an untasked session is not asked: expire goes straight to exit requests)`);
  out(`exited by their own path: ${exited.length} (${exited.map((x) => cast.names.get(x.sessionId) ?? x.sessionId).join(', ')})`);
  out(`memory given back: ${formatBytes(freed)}`);
  out(`protected now:`);
  for (const s of snap.sessions.filter((x) => x.verdict === 'protected')) {
    out(`  ${(cast.names.get(s.sessionId) ?? s.label).padEnd(20)} ${s.reasons.map((r) => `${r}: ${REASONS[r]}`).join('; ')}`);
  }
  out(
    `roster records without a pid (never acted on): ${records} — ${RECORDS} from the start, ${records - RECORDS} left by the background sessions that exited (an interactive one that leaves keeps no row)`,
  );
  const alarms = new Alarms(deps.config).open();
  out(
    `alarms: ${alarms.length}${alarms.map((a) => `\n  ${a.id}  ${a.kind}: ${a.message}`).join('')}${alarms.length ? `\n  (a person closes one with \`sunset alarms ack ID\`, or on the decisions page)` : ''}`,
  );
  const ah = report.awaitingHuman;
  const held = ah.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  out(`lanes awaiting a human: ${ah.length}, holding ${formatBytes(held)} — reported for a person, never acted on`);
  out(`signals received by any agent: ${fleet.signals().length}`);
  out(
    `\nNext: \`sunset verdict --json\` on your own fleet (read-only); ${fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../docs/' : '../../docs/', import.meta.url))} for the rest.`,
  );
}
