// Regenerate sim/real/fixtures/ from a run of the REAL Claude Code CLI:  npx tsx sim/real/capture-fixtures.ts
// Every file is what the CLI wrote or printed, parsed and re-serialised as pretty JSON (argv: the NUL-split
// /proc/<pid>/cmdline), with secret values (rvAuth, ptyAuth, nonce, peerToken, credentials) "REDACTED".
// pins.json is copied byte for byte (its exact format is the point). Takes ~40 s; leaves nothing running.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RealFleet, cmdline, redact, type RosterRow } from './real-fleet.js';

const OUT = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function put(rel: string, value: unknown): void {
  const file = join(OUT, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(redact(value), null, 2)}\n`);
  console.log('wrote', rel);
}

function putRaw(rel: string, text: string): void {
  const file = join(OUT, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log('wrote', rel);
}

function jsonl(file: string): unknown[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

const KEEP = new Set(['README.md', 'socket', 'reaper', 'pins', 'screens/input-box']);

async function main(): Promise<void> {
  // this script rewrites what it captures; the README and the folders other measurements wrote (socket/, reaper/,
  // pins/, screens/input-box/ — see docs/real-cli-notes.md) are kept
  mkdirSync(OUT, { recursive: true });
  for (const n of readdirSync(OUT)) {
    if (KEEP.has(n)) continue;
    if (n === 'screens') {
      for (const s of readdirSync(join(OUT, n))) if (!KEEP.has(`screens/${s}`)) rmSync(join(OUT, n, s), { recursive: true, force: true });
      continue;
    }
    rmSync(join(OUT, n), { recursive: true, force: true });
  }
  const f = await RealFleet.create();
  const notes: Record<string, unknown> = { version: f.version, capturedAt: new Date().toISOString(), root: f.root };
  try {
    // --- a row seen right after `claude --bg` returns: no pid yet
    const cwdStart = f.workdir('starting');
    const r0 = await f.claude(['--bg', '--name', 'just-started', '[[state:done]] just started'], { cwd: cwdStart });
    const early = await f.roster();
    put('roster/starting-row-no-pid.json', early);
    putRaw('cli/bg-output.txt', r0.stdout);
    const startedId = /([0-9a-f]{8})/.exec(r0.stdout)![1];
    const startedRow = await f.waitForRow(startedId, (r) => typeof r?.pid === 'number' && r.state === 'done');

    // --- background sessions in every state (three at once, so one is a fresh spawn, not a claimed spare)
    const [working, done, blocked] = await Promise.all([
      f.startBackground('[[state:working]] refactor the parser', { name: 'refactor-parser' }),
      f.startBackground('[[state:done]] write the changelog'),
      f.startBackground('[[state:blocked needs=Should I squash the commits?]] prepare the release'),
    ]);
    const inflight = await f.startBackground('[[bg:sleep 600]] start the dev server');
    const waiting = await f.startBackground('[[bash:touch never-made]] create a file', { args: ['--permission-mode', 'manual'] });
    await f.waitForRow(working.shortId, (r) => r?.status === 'idle' && r.state === 'working');
    await f.waitForRow(done.shortId, (r) => r?.state === 'done');
    await f.waitForRow(blocked.shortId, (r) => r?.state === 'blocked');
    await f.waitFor(() => (f.jobState(inflight.shortId)?.inFlight?.tasks ?? 0) > 0, 30_000);
    await f.waitForRow(waiting.shortId, (r) => r?.status === 'waiting');
    const busy = await f.startBackground('[[slow:60000]] [[state:done]] write a long essay', { name: 'long-essay' });
    await f.waitForRow(busy.shortId, (r) => r?.status === 'busy');
    const busyRow = await f.rosterRow(busy.shortId);
    put('roster/row-background-busy.json', busyRow);
    put('jobs/state-busy.json', f.jobState(busy.shortId));
    put('sessions/background-busy.json', f.sessionFile(busy.pid));

    // --- records: the busy job stopped (-> stopped), the done one stopped (stays done)
    const stopOut = await f.stop(busy.shortId);
    putRaw('cli/stop-output.txt', stopOut.stdout);
    await f.stop(startedId);
    await f.waitForExit(busy.pid, 10_000);
    await f.waitForExit(startedRow!.pid!, 10_000);
    const unknown = await f.stop('00000000');
    putRaw('cli/stop-unknown.txt', `exit ${unknown.code}\n${unknown.stderr}`);
    const stopMe = busy;
    const doneStop = { shortId: startedId };

    // --- interactive, in tmux
    const inter = await f.startInteractive('[[reply:Ready.]] hello', { name: 'pane-session' });
    await f.waitForScreen(inter.paneId, /^\s*● Ready\./m); // the reply, not the prompt echoed above it
    const interDerived = await f.startInteractive(undefined); // no --name: the name is derived
    await f.waitForRow(inter.pid, (r) => r?.status === 'idle');

    // --- the roster with all of them
    const roster = await f.roster();
    put('roster/all.json', roster);
    const byId = (id: string): RosterRow | undefined => roster.find((r) => r.id === id);
    put('roster/row-background-working.json', byId(working.shortId));
    put('roster/row-background-done.json', byId(done.shortId));
    put('roster/row-background-blocked.json', byId(blocked.shortId));
    put('roster/row-background-waiting.json', byId(waiting.shortId));
    put('roster/row-background-inflight.json', byId(inflight.shortId));
    put(
      'roster/row-interactive.json',
      roster.find((r) => r.pid === inter.pid),
    );
    put(
      'roster/row-interactive-derived-name.json',
      roster.find((r) => r.pid === interDerived.pid),
    );
    put('roster/record-stopped.json', byId(stopMe.shortId));
    put('roster/record-done-after-stop.json', byId(doneStop.shortId));
    const rosterNoAll = await f.claude(['agents', '--json']);
    put('roster/without-all.json', JSON.parse(rosterNoAll.stdout));

    // --- sessions/<pid>.json
    put('sessions/background.json', f.sessionFile(working.pid));
    put('sessions/background-waiting.json', f.sessionFile(waiting.pid));
    put('sessions/interactive-tmux.json', f.sessionFile(inter.pid));
    put('sessions/interactive-derived-name.json', f.sessionFile(interDerived.pid));

    // --- jobs/<id>/state.json (+ timeline)
    const jobs: Array<[string, string]> = [
      ['working', working.shortId],
      ['done', done.shortId],
      ['blocked', blocked.shortId],
      ['inflight', inflight.shortId],
      ['waiting-permission', waiting.shortId],
      ['stopped', stopMe.shortId],
      ['done-after-stop', doneStop.shortId],
    ];
    for (const [label, id] of jobs) {
      put(`jobs/state-${label}.json`, f.jobState(id));
      put(`jobs/timeline-${label}.json`, f.jobTimeline(id));
    }

    // --- argv of every kind of process
    const procs = f.processes();
    const argvOf = (pid: number): string[] | null => cmdline(pid);
    const daemon = procs.find((p) => p.role === 'daemon')!;
    put('argv/daemon.json', argvOf(daemon.pid));
    const sessions = procs.filter((p) => p.role === 'session');
    const fresh = sessions.find((p) => !p.argv[0].startsWith('claude '));
    const claimed = sessions.find((p) => p.argv[0] === 'claude bg-spare');
    if (fresh) {
      put('argv/session-fresh.json', argvOf(fresh.pid));
      put('argv/pty-host-fresh.json', argvOf(fresh.ppid));
    }
    if (claimed) {
      put('argv/session-claimed-spare.json', argvOf(claimed.pid));
      put('argv/pty-host-claimed-spare.json', argvOf(claimed.ppid));
    }
    notes.sessionKinds = { fresh: !!fresh, claimedSpare: !!claimed };
    const spare = procs.find((p) => p.role === 'spare');
    if (spare) {
      put('argv/spare.json', argvOf(spare.pid));
      put('argv/spare-pty-host.json', argvOf(spare.ppid));
    }
    put('argv/interactive.json', argvOf(interDerived.pid));
    put('argv/interactive-with-name-and-prompt.json', argvOf(inter.pid));
    const shell = procs.find((p) => p.argv[0] === '/bin/bash' && p.ppid === inflight.pid);
    if (shell) put('argv/bash-tool-shell.json', argvOf(shell.pid));
    const sleeper = procs.find((p) => p.argv[0] === 'sleep');
    if (sleeper) put('argv/bash-tool-child.json', argvOf(sleeper.pid));
    const tmuxServer = procs.find((p) => p.role === 'tmux');
    if (tmuxServer) put('argv/tmux-server.json', argvOf(tmuxServer.pid));

    // --- clients
    const attachId = await f.attach(working.shortId);
    const attachName = await f.attach('refactor-parser');
    await f.waitForScreen(attachId.paneId, /refactor the parser/);
    const journalDir = join(f.claudeDir, 'daemon', 'attach-journal');
    const journals = existsSync(journalDir)
      ? readdirSync(journalDir).map((n) => JSON.parse(readFileSync(join(journalDir, n), 'utf8')))
      : [];
    put('daemon/attach-journal.json', journals);
    put('argv/attach-short-id.json', argvOf(attachId.pid));
    put('argv/attach-name.json', argvOf(attachName.pid));
    const view = await f.agentView();
    await f.waitForScreen(view.paneId, /refactor-parser/);
    await f.waitFor(() => f.processes().some((p) => p.role === 'view-session'), 10_000);
    put('argv/agent-view.json', argvOf(view.pid));
    const withClients = f.processes();
    const viewSession = withClients.find((p) => p.role === 'view-session');
    if (viewSession) {
      await f.waitFor(() => f.sessionFile(viewSession.pid) !== null, 10_000);
      put('argv/agent-view-session.json', argvOf(viewSession.pid));
      put('sessions/agent-view-claimed-session.json', f.sessionFile(viewSession.pid));
    }
    putRaw('screens/agent-view.txt', f.capturePane(view.paneId));
    putRaw('screens/attach.txt', f.capturePane(attachId.paneId));
    putRaw('screens/interactive.txt', f.capturePane(inter.paneId));

    // --- daemon files
    put('daemon/roster.json', f.daemonRoster());
    put('daemon/daemon.status.json', JSON.parse(readFileSync(join(f.claudeDir, 'daemon.status.json'), 'utf8')));
    put('daemon/daemon.lock.json', JSON.parse(readFileSync(join(f.claudeDir, 'daemon.lock'), 'utf8')));
    putRaw('daemon/daemon.log', readFileSync(join(f.claudeDir, 'daemon.log'), 'utf8'));
    put('daemon/runtime-dir-listing.json', readdirSync(f.daemonRuntimeDir(), { recursive: true }).sort());

    // --- the process tree, memory
    put(
      'processes/tree.json',
      withClients.map((p) => ({
        pid: p.pid,
        ppid: p.ppid,
        role: p.role,
        shortId: p.shortId,
        sessionId: p.sessionId,
        rssMb: Math.round(p.rssKb / 1024),
        argv: p.argv,
      })),
    );
    put('processes/memory.json', f.memory());
    await attachId.close();
    await attachName.close();
    await view.close();

    // --- pins: toggled by ctrl+t in the agent view (the CLI writes the file); bytes kept as they are
    putRaw('jobs/pins-empty.json', readFileSync(join(f.claudeDir, 'jobs', 'pins.json'), 'utf8'));
    await f.togglePinInAgentView(done.shortId);
    await f.togglePinInAgentView(working.shortId);
    putRaw('jobs/pins.json', readFileSync(join(f.claudeDir, 'jobs', 'pins.json'), 'utf8'));
    put('jobs/pinned-job-dir-listing.json', readdirSync(join(f.claudeDir, 'jobs', done.shortId)).sort());

    // --- what the stand-in API was asked (kinds, one body of each small kind)
    const reqs = f.api.requests();
    put(
      'api/request-kinds.json',
      reqs.map((r) => ({
        seq: r.seq,
        kind: r.kind,
        sessionId: r.sessionId,
        path: r.path,
        query: r.query,
        prompt: r.prompt,
        answer: r.answer,
      })),
    );
    const one = (k: string): unknown => reqs.find((r) => r.kind === k)?.body;
    put('api/classifier-request.json', one('classifier'));
    put('api/label-request.json', one('label'));
    const main = reqs.find((r) => r.kind === 'main');
    if (main) put('api/main-request-headers.json', main.headers);
    put('notes.json', notes);
    // transcripts are big; one line per entry type of one
    const tr = jsonl(f.transcriptPath(done.sessionId, done.cwd)) as Array<Record<string, unknown>>;
    put(
      'projects/transcript-entry-types.json',
      tr.map((e) => ({ type: e.type, subtype: e.subtype, keys: Object.keys(e).sort() })),
    );
    await sleep(10);
  } finally {
    await f.destroy();
  }
}

/**
 * A session the daemon spawns afresh (not a claimed spare): happens when a dispatch beats the daemon's first
 * spare (a race at daemon start). Try a few new fleets until one shows it.
 */
async function captureFresh(): Promise<boolean> {
  for (let attempt = 1; attempt <= 6; attempt++) {
    const f = await RealFleet.create();
    try {
      const bg = await f.startBackground('[[state:working]] a fresh one', { name: 'fresh-spawn' });
      const argv = cmdline(bg.pid) ?? [];
      if (argv[0] && !argv[0].startsWith('claude ')) {
        put('argv/session-fresh.json', argv);
        put('argv/pty-host-fresh.json', cmdline(f.ptyHostOf(bg.pid) ?? -1));
        put('daemon/roster-with-fresh-spawn.json', f.daemonRoster());
        putRaw('daemon/daemon-fresh-spawn.log', readFileSync(join(f.claudeDir, 'daemon.log'), 'utf8'));
        console.log(`fresh spawn seen on attempt ${attempt}`);
        return true;
      }
    } finally {
      await f.destroy();
    }
  }
  return false;
}

main()
  .then(async () => {
    if (!existsSync(join(OUT, 'argv', 'session-fresh.json')) && !(await captureFresh())) console.log('no fresh spawn seen in 6 tries');
  })
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
