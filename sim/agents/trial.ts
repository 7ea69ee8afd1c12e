// `npm run real-agents`: sunset on the REAL Codex and Gemini CLIs, for someone with an account of neither. Each CLI
// is installed from npm into its cache folder once (install.ts), else reused; each runs in a fleet of its own
// (agent-fleet.ts: a private HOME and stand-in model API, no network), both fleets on one tmux server. Two sessions
// of each answer a first prompt, one finishing and one held open by its task; sunset runs on them (windows compressed
// to seconds, no Claude Code read) on a redis-server of its own; then what happened to each is printed, and every
// process it started (by pid), its tmux server, its redis-server and its temp folders are ended or removed. Ctrl-C
// stops it and cleans up the same way. What sim/real/trial.ts is for Claude Code.
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config.js';
import { REASONS } from '../../src/doctrine/verdict.js';
import { gatherFleet } from '../../src/evidence/fleet.js';
import { createLogger } from '../../src/log.js';
import { startSunset, type Running } from '../../src/pipeline/up.js';
import { freePortNear, startPrivateRedis, type PrivateRedis } from '../../src/private-redis.js';
import { catchStopSignals } from '../../src/stop-signals.js';
import { AgentFleet, pidAlive, SPECS, type AgentCli } from './agent-fleet.js';
import { agentCliBinary, agentCliDir, agentInstallCommand, ensureAgentCli } from './install.js';
import { endTrial, started } from '../trial-end.js';

const out = (s: string) => process.stdout.write(`${s}\n`);
const H = 3_600_000;
const CLIS: AgentCli[] = ['codex', 'gemini'];

/** A driver's task file in sunset's tasks folder (written atomically), and reading one back. */
function writeTask(dir: string, t: Record<string, unknown> & { id: string }): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `.${t.id}.tmp`), `${JSON.stringify(t, null, 2)}\n`);
  renameSync(join(dir, `.${t.id}.tmp`), join(dir, `${t.id}.json`));
}
const readTask = (dir: string, id: string): Record<string, string | undefined> => JSON.parse(readFileSync(join(dir, `${id}.json`), 'utf8'));

/** Each CLI at its pinned version: reused from its cache folder, else installed there; null (said why) when one cannot be. */
async function install(): Promise<Record<AgentCli, string> | null> {
  const got: Partial<Record<AgentCli, string>> = {};
  for (const cli of CLIS) {
    const spec = SPECS[cli];
    const dir = agentCliDir(spec);
    out(
      existsSync(agentCliBinary(spec))
        ? `${spec.pkg} ${spec.version}: found in ${dir}`
        : `${spec.pkg} ${spec.version}: installing into ${dir} (npm, once)…`,
    );
    try {
      got[cli] = await ensureAgentCli(spec);
    } catch (e) {
      out(`${spec.pkg} ${spec.version} could not be installed:`);
      for (const l of String(e instanceof Error ? e.message : e).split('\n')) if (!l.startsWith('Install it by hand')) out(`  ${l}`);
      out('Install it by hand (no account needed; it is only ever run against a stand-in model API on this machine):');
      out(`  ${agentInstallCommand(spec)}`);
      out('(set SUNSET_AGENTS_CACHE to keep it elsewhere), then run `npm run real-agents` again.');
      return null;
    }
  }
  return got as Record<AgentCli, string>;
}

/** A session in a new pane that answered its first prompt, and the session id its transcript names. */
async function answered(fleet: AgentFleet, prompt: string, reply: string): Promise<{ pid: number; sessionId: string }> {
  const before = new Set(fleet.transcripts().flatMap((t) => (t.head ? [t.head.sessionId] : [])));
  const s = await fleet.start(undefined, { timeoutMs: 90_000 });
  await fleet.send(s.paneId, `${prompt} [[reply:${reply}]]`, 20_000);
  await fleet.waitForScreen(s.paneId, fleet.spec.replyLine(reply), 90_000);
  let sessionId = '';
  const named = () => !!(sessionId = fleet.transcripts().find((t) => t.head && !before.has(t.head.sessionId))?.head?.sessionId ?? '');
  if (!(await fleet.waitFor(named, 30_000))) throw new Error(`${fleet.spec.cli}: no new transcript names the session in pane ${s.paneId}`);
  await fleet.waitIdle(s, 60_000);
  return { pid: s.pid, sessionId };
}

/** One session of the trial, and its task. */
interface Cast {
  label: string;
  cli: AgentCli;
  taskId: string;
  sessionId: string;
  pid: number;
  /** Expected to leave (its task is done); else held open by its task. */
  leaves: boolean;
  doneAt: number;
}

export async function trial(o: { deadlineMs?: number } = {}): Promise<number> {
  // each part is held as the promise of its start: a Ctrl-C while one starts waits for it, then ends it; once the
  // cleanup has begun, nothing new starts (check())
  let installP: Promise<unknown> | null = null;
  let redisP: Promise<PrivateRedis> | null = null;
  let codexP: Promise<AgentFleet> | null = null;
  let geminiP: Promise<AgentFleet> | null = null;
  let runningP: Promise<Running> | null = null;
  let dir: string | null = null;
  let config: Config | null = null;
  let halted = false;
  const check = () => {
    if (halted) throw new Error('stopped');
  };
  let failed = false;
  const stop = catchStopSignals({
    boundMs: 90_000,
    on: (e) => out(e.first ? '\nInterrupted: ending the sessions, sunset and its Redis…' : 'Still cleaning up…'),
  });
  const flow = (async () => {
    out(
      `sunset on the real Codex CLI ${SPECS.codex.version} and Gemini CLI ${SPECS.gemini.version} (stand-in model APIs, no account, no network)`,
    );
    const bins = await (installP = install());
    if (!bins) return void (failed = true);
    check();
    const redis = await (redisP = freePortNear(6470).then((port) => startPrivateRedis(port)));
    check();
    const codex = await (codexP = AgentFleet.create('codex', { binary: bins.codex }));
    check();
    // on the Codex fleet's tmux server: sunset reads one server
    const gemini = await (geminiP = AgentFleet.create('gemini', { binary: bins.gemini, tmuxSocket: codex.tmuxSocket }));
    const d = (dir = mkdtempSync(join(tmpdir(), 'sunset-real-agents-')));
    out(`codex fleet: ${codex.root} (its own HOME and stand-in API; tmux server \`tmux -L ${codex.tmuxSocket}\`)`);
    out(`gemini fleet: ${gemini.root} (its own HOME and stand-in API; on the same tmux server)`);
    out(`sunset's folder: ${d} (tasks, state, sunset.log); Redis: ${redis.url}`);
    out('starting 4 real sessions, each answering a first prompt…');
    const cast: Cast[] = [];
    for (const [fleet, cli] of [
      [codex, 'codex'],
      [gemini, 'gemini'],
    ] as const)
      for (const [leaves, prompt, reply] of [
        [true, 'write the changelog', 'Changelog written.'],
        [false, 'keep refactoring the parser', 'Refactoring.'],
      ] as const) {
        check();
        const s = await answered(fleet, prompt, reply);
        const label = `${cli} (${leaves ? 'finishes' : 'held open'})`;
        out(`  ${label}: session ${s.sessionId}, pid ${s.pid}`);
        cast.push({ label, cli, taskId: `t-${cli}-${leaves ? 'done' : 'held'}`, ...s, leaves, doneAt: 0 });
      }
    // each session's task, as a person's driver writes it: done (released an hour ago), or still active
    const tasks = join(d, 'tasks');
    for (const c of cast) {
      const state = c.leaves ? { state: 'done', releasedAt: new Date(Date.now() - H).toISOString() } : { state: 'active' };
      writeTask(tasks, { id: c.taskId, sessionId: c.sessionId, ...state });
      c.doneAt = Date.now();
    }
    // no Claude Code here (its command names nothing): only the Codex and Gemini CLI sessions are read
    const noClaude = join(d, 'no-claude-code');
    config = parseConfig(
      {
        host: `real-agents-${process.pid}`,
        redisUrl: redis.url,
        stateDir: join(d, 'state'),
        probeTimeout: 20_000,
        log: { level: 'info' },
        fleet: {
          rosterCommand: [noClaude, 'agents', '--json', '--all'],
          claudeCommand: noClaude,
          claudeDir: null,
          projectsDir: join(d, 'projects'),
          tasksDir: tasks,
          inboxDir: join(d, 'inbox'),
          tmuxSocket: codex.tmuxSocket,
          agents: {
            codex: { command: codex.binary, home: join(codex.home, '.codex') },
            gemini: { command: gemini.binary, home: join(gemini.home, '.gemini') },
          },
        },
        windows: { grace: 200, silence: 300, askWait: 2000, retryWait: 2000, exitConfirm: 20_000, recheck: 300, reconcileEvery: 1000 },
      },
      { env: {} },
    );
    out('sunset starts (windows compressed to seconds)…');
    check();
    await (runningP = startSunset(config, {
      roles: ['producers', 'workers'],
      log: createLogger('info', createWriteStream(join(d, 'sunset.log'))),
    }));
    const deadline = Date.now() + (o.deadlineMs ?? 180_000);
    const left = (c: Cast) => Boolean(readTask(tasks, c.taskId).exitedAt);
    while (Date.now() < deadline && !cast.filter((c) => c.leaves).every(left)) await new Promise((r) => setTimeout(r, 250));
    // what happened to each: its task's latches, and for one still running, the verdict and why
    const snap = await gatherFleet(config);
    out('\n── what happened ─────────────────────────────────────────');
    for (const c of cast) {
      const t = readTask(tasks, c.taskId);
      if (t.exitedAt) {
        const s = ((Date.parse(t.exitedAt) - c.doneAt) / 1000).toFixed(1);
        const how = `\`${SPECS[c.cli].quit}\` typed into its pane`;
        out(
          `${c.label.padEnd(20)} left by its own exit path (${how}) ${s} s after its task closed${t.exitAskedAt ? ', asked once first' : ''}`,
        );
        if (!c.leaves) failed = true;
      } else {
        const v = snap.sessions.find((x) => x.sessionId === c.sessionId && x.pid !== null);
        const why = v ? `${v.verdict}: ${v.reasons.map((r) => `${r} (${REASONS[r]})`).join('; ')}` : 'not found by sunset';
        const alive = pidAlive(c.pid);
        out(
          `${c.label.padEnd(20)} ${alive ? 'still running' : 'gone, not by sunset'}, ${t.exitAskedAt ? 'asked' : 'never asked'} — ${why}`,
        );
        if (c.leaves || !alive || t.exitAskedAt) failed = true;
      }
    }
  })();
  // the end: sunset, both fleets (every process by pid, the tmux server, their folders), the redis-server, the folder
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['the install under way', () => started(installP)],
    ['sunset', async () => (await started(runningP))?.close()],
    ['the Gemini CLI sessions and their API', async () => (await started(geminiP))?.destroy()],
    ['the Codex sessions, their API and the tmux server', async () => (await started(codexP))?.destroy()],
    ['its redis-server', async () => (await started(redisP))?.shutdown()],
    ['its folder', async () => dir && rmSync(dir, { recursive: true, force: true })],
  ];
  const end = await endTrial('real-agents', flow, stop, out, steps, () => {
    halted = true;
  });
  if (end.stoppedPartWay) failed = true;
  const notEnded = end.notEnded;
  if (!notEnded.length && redisP)
    out('\nended: every process it started (by pid), its tmux server, its redis-server; its folders removed.');
  if (stop.code !== null) return stop.code;
  return failed || notEnded.length ? 1 : 0;
}

trial().then((code) => process.exit(code));
