// `npm run real-fleet`: sunset on the REAL Claude Code CLI, for someone with no Claude Code account. A few real
// sessions (sim/real/real-fleet.ts: the real `claude` binary, a private HOME, daemon and tmux server, the stand-in
// Messages API, no network), some finishing and one held open; sunset runs on them (windows compressed to
// seconds) on a redis-server of its own; then what happened to each is printed, and every process it started
// (by pid), its tmux server, its redis-server and its temp folder are ended or removed. Ctrl-C stops it and
// cleans up the same way.
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startSunset, type Running } from '../../src/pipeline/up.js';
import { freePortNear, startPrivateRedis, type PrivateRedis } from '../../src/private-redis.js';
import { dropHostKeys } from '../../src/redis.js';
import { catchStopSignals } from '../../src/stop-signals.js';
import { gatherFleet } from '../../src/evidence/fleet.js';
import { REASONS } from '../../src/doctrine/verdict.js';
import { claudeWrapper } from './claude-wrapper.js';
import { CLAUDE_CODE_VERSION, claudeCodeBinary, installCommand } from './install.js';
import { RealFleet } from './real-fleet.js';
import { endTrial, started } from '../trial-end.js';

const out = (s: string) => process.stdout.write(`${s}\n`);
const H = 3_600_000;

/** A driver's task file in the fleet's tasks folder (written atomically), and reading one back. */
function writeTask(fleet: RealFleet, t: Record<string, unknown> & { id: string }): void {
  const dir = join(fleet.root, 'tasks');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `.${t.id}.tmp`), `${JSON.stringify(t, null, 2)}\n`);
  renameSync(join(dir, `.${t.id}.tmp`), join(dir, `${t.id}.json`));
}
function readTask(fleet: RealFleet, id: string): Record<string, string | undefined> {
  return JSON.parse(readFileSync(join(fleet.root, 'tasks', `${id}.json`), 'utf8'));
}

/** One session of the trial: what it is told to do, and what its task says. */
interface Cast {
  label: string;
  taskId: string;
  sessionId: string;
  kind: 'background' | 'interactive';
  /** Expected to leave (its task is done and nothing holds it). */
  leaves: boolean;
  doneAt: number;
}

export async function trial(o: { deadlineMs?: number } = {}): Promise<number> {
  const binary = claudeCodeBinary();
  if (!existsSync(binary)) {
    out(`The real Claude Code CLI ${CLAUDE_CODE_VERSION} is not installed where sunset's real-client tests keep it (${binary}).`);
    out(`Install it (no account needed; it is only ever run against a stand-in Messages API on this machine):`);
    out(`  ${installCommand()}`);
    out(`(set SUNSET_CLAUDE_CODE_CACHE to keep it elsewhere), then run \`npm run real-fleet\` again.`);
    return 1;
  }
  // each part is held as the promise of its start: a Ctrl-C while one starts waits for it, then ends it; once
  // the cleanup has begun, nothing new starts (check())
  let fleetP: Promise<RealFleet> | null = null;
  let redisP: Promise<PrivateRedis> | null = null;
  let runningP: Promise<Running> | null = null;
  let config: Config | null = null;
  let halted = false;
  const check = () => {
    if (halted) throw new Error('stopped');
  };
  let failed = false;
  // bounded, but long enough for a real fleet's start under way to finish and be ended
  const stop = catchStopSignals({
    boundMs: 90_000,
    on: (e) => out(e.first ? '\nInterrupted: ending the sessions, sunset and its Redis…' : 'Still cleaning up…'),
  });
  const flow = (async () => {
    out(`sunset on the real Claude Code CLI ${CLAUDE_CODE_VERSION} (stand-in Messages API, no account, no network)`);
    const redis = await (redisP = freePortNear(6470).then((port) => startPrivateRedis(port)));
    check();
    const fleet = await (fleetP = RealFleet.create({ binary }));
    out(`fleet: ${fleet.root} (its own HOME, daemon and tmux server \`tmux -L ${fleet.tmuxSocket}\`); Redis: ${redis.url}`);
    out('starting 4 real sessions…');
    const f = fleet;
    const start = <T>(p: () => Promise<T>) => {
      check();
      return p();
    };
    const cast: Cast[] = [];
    const add = (label: string, taskId: string, s: { sessionId: string }, kind: Cast['kind'], leaves: boolean) =>
      cast.push({ label, taskId, sessionId: s.sessionId, kind, leaves, doneAt: 0 });
    const changelog = await start(() => f.startBackground('[[state:done]] write the changelog', { name: 'changelog' }));
    add('changelog (background, finishes)', 't-changelog', changelog, 'background', true);
    const version = await start(() => f.startBackground('[[state:done]] bump the version', { name: 'bump-version' }));
    add('bump-version (background, finishes)', 't-version', version, 'background', true);
    const release = await start(() =>
      f.startBackground('[[state:blocked needs=Should I squash the commits?]] prepare the release', {
        name: 'release',
      }),
    );
    add('release (background, asks a question)', 't-release', release, 'background', false);
    const rename = await start(() => f.startInteractive('[[reply:Renamed.]] [[state:done]] rename the module', { name: 'rename' }));
    add('rename (interactive, finishes)', 't-rename', rename, 'interactive', true);
    for (const s of [changelog, version]) await f.waitForRow(s.shortId, (r) => r?.state === 'done' && r.status === 'idle', 90_000);
    await f.waitForRow(release.shortId, (r) => r?.state === 'blocked', 90_000);
    // each session's task, as a person's driver writes it: done (released an hour ago) for all four — the
    // release job's own state (blocked on a question) is what holds it open
    for (const c of cast) {
      writeTask(f, { id: c.taskId, state: 'done', sessionId: c.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
      c.doneAt = Date.now();
    }
    const claude = claudeWrapper(f);
    config = parseConfig(
      {
        host: `real-trial-${process.pid}`,
        redisUrl: redis.url,
        stateDir: join(f.root, 'sunset-state'),
        probeTimeout: 20_000,
        log: { level: 'info' },
        fleet: {
          rosterCommand: [claude, 'agents', '--json', '--all'],
          claudeCommand: claude,
          claudeDir: f.claudeDir,
          projectsDir: join(f.claudeDir, 'projects'),
          tasksDir: join(f.root, 'tasks'),
          inboxDir: join(f.root, 'inbox'),
          tmuxSocket: f.tmuxSocket,
        },
        windows: { grace: 200, silence: 300, askWait: 2000, retryWait: 2000, exitConfirm: 20_000, recheck: 300, reconcileEvery: 1000 },
      },
      { env: {} },
    );
    out('sunset starts (windows compressed to seconds; its log: sunset.log in the fleet folder)…');
    check();
    await (runningP = startSunset(config, {
      roles: ['producers', 'workers'],
      log: createLogger('info', createWriteStream(join(f.root, 'sunset.log'))),
    }));
    const t0 = Date.now();
    const deadline = t0 + (o.deadlineMs ?? 150_000);
    const left = (c: Cast) => Boolean(readTask(f, c.taskId).exitedAt);
    while (Date.now() < deadline && !cast.filter((c) => c.leaves).every(left)) await new Promise((r) => setTimeout(r, 250));
    // what happened to each: its task's latches, and for one still running, the verdict and why
    const snap = await gatherFleet(config);
    out('\n── what happened ─────────────────────────────────────────');
    for (const c of cast) {
      const t = readTask(f, c.taskId);
      const how = c.kind === 'background' ? '`claude stop`' : '`/exit` typed into its pane';
      if (t.exitedAt) {
        const s = ((Date.parse(t.exitedAt) - c.doneAt) / 1000).toFixed(1);
        out(
          `${c.label.padEnd(40)} left by its own exit path (${how}) ${s} s after its task closed${t.exitAskedAt ? ', asked once first' : ''}`,
        );
      } else {
        const v = snap.sessions.find((x) => x.sessionId === c.sessionId && x.pid !== null);
        const why = v ? v.reasons.map((r) => `${r} (${REASONS[r]})`).join('; ') : 'not on the roster';
        out(`${c.label.padEnd(40)} still running, ${v?.verdict ?? 'unknown'}: ${why}${t.exitAskedAt ? '' : ' — never asked'}`);
        if (c.leaves) failed = true;
      }
    }
  })();
  // the end: sunset, the fleet (every process by pid, its tmux server, its folder), its keys, its redis-server
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['sunset', async () => (await started(runningP))?.close()],
    ['the sessions, their daemon and tmux server', async () => (await started(fleetP))?.destroy()],
    [
      'its keys',
      async () => {
        const r = await started(redisP);
        if (r && config) await dropHostKeys(r.url, config.host);
      },
    ],
    ['its redis-server', async () => (await started(redisP))?.shutdown()],
  ];
  const end = await endTrial('real-fleet', flow, stop, out, steps, () => {
    halted = true;
  });
  if (end.stoppedPartWay) failed = true;
  const notEnded = end.notEnded;
  if (!notEnded.length) out('\nended: every process it started (by pid), its tmux server, its redis-server; its folder removed.');
  if (stop.code !== null) return stop.code;
  return failed || notEnded.length ? 1 : 0;
}

trial().then((code) => process.exit(code));
