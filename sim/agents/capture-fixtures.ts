// Capture fixtures from the REAL agent CLIs (sim/agents/fixtures/<cli>/): screens plain and with SGR kept
// (`capture-pane -p` / `-p -e`) idle, with a one-line and a two-line draft, while a turn runs, after it; the
// process tree of a session, idle and during a tool call; the first line of its transcript; what a quit typed
// over a draft does; a second tmux client attached. Facts it prints are in docs/agents/<cli>.md.
//
//   npx tsx sim/agents/capture-fixtures.ts codex|gemini     (~60 s each)
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentFleet, cwdOf, firstLine, openFiles, pidAlive, type AgentCli, type AgentSession } from './agent-fleet.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function capture(cli: AgentCli): Promise<void> {
  const out = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', cli);
  rmSync(out, { recursive: true, force: true });
  for (const d of ['screens', 'processes', 'transcript', 'api']) mkdirSync(join(out, d), { recursive: true });
  const facts: Record<string, unknown> = {};
  const fleet = await AgentFleet.create(cli);
  // paths name this run's temp root; fixtures say <root> instead
  const scrub = (t: string): string => t.split(fleet.root).join('<root>');
  const shot = (s: AgentSession, name: string): string => {
    const plain = fleet.screen(s.paneId);
    writeFileSync(join(out, 'screens', `${name}.txt`), scrub(plain));
    writeFileSync(join(out, 'screens', `${name}.ansi`), scrub(fleet.screen(s.paneId, { ansi: true })));
    return plain;
  };
  const tree = (s: AgentSession, name: string): void => {
    const all = fleet.processes().filter((p) => !p.argv[0]?.endsWith('tmux'));
    const rows = all.map((p) => ({
      pid: p.pid,
      ppid: p.ppid,
      rssMb: Math.round(p.rssKb / 102.4) / 10,
      argv: p.argv.map(scrub),
      cwd: scrub(cwdOf(p.pid) ?? ''),
      openFiles: openFiles(p.pid)
        .filter((f) => !/^\/dev\//.test(f))
        .map(scrub),
    }));
    writeFileSync(join(out, 'processes', `${name}.json`), `${JSON.stringify({ panePid: s.pid, processes: rows }, null, 2)}\n`);
  };
  try {
    const t0 = Date.now();
    const s = await fleet.start();
    facts.readyMs = Date.now() - t0;
    // keep a pane whose process ended, to read how it ended (#{pane_dead_status})
    fleet.tmux(['set-option', '-t', s.tmuxSession, 'remain-on-exit', 'on']);
    const paneEnd = (): string =>
      fleet.tmux(['display-message', '-p', '-t', s.paneId, '#{pane_dead} #{pane_dead_status} #{pane_dead_signal}']).trim();
    await fleet.waitIdle(s);
    shot(s, 'idle-empty');
    tree(s, 'idle-before-first-prompt');
    facts.transcriptsBeforeFirstPrompt = fleet.transcripts().length;

    fleet.typeDraft(s.paneId, 'a one-line draft');
    await fleet.waitForScreen(s.paneId, /a one-line draft/, 5_000);
    shot(s, 'draft-one-line');
    // a newline inside the box: Ctrl+J (LF) is a newline in both composers
    fleet.tmux(['send-keys', '-t', s.paneId, '-H', '0a']);
    fleet.typeDraft(s.paneId, 'and a second line');
    await fleet.waitForScreen(s.paneId, /and a second line/, 5_000);
    shot(s, 'draft-two-lines');
    for (let i = 0; i < 40; i++) fleet.pressKeys(s.paneId, 'BSpace');
    await fleet.waitFor(() => !/a one-line draft|second line/.test(fleet.screen(s.paneId)), 5_000);
    await fleet.waitIdle(s);

    await fleet.send(s.paneId, 'Start a long answer [[slow:7000]]');
    await fleet.waitForScreen(s.paneId, fleet.spec.busy, 15_000);
    shot(s, 'busy');
    // typed while the turn runs
    await fleet.send(s.paneId, 'typed while busy [[reply:answered the queued one]]');
    await sleep(800);
    shot(s, 'busy-with-typed-message');
    await fleet.waitForScreen(s.paneId, /answered the queued one/, 30_000);
    await fleet.waitIdle(s);
    shot(s, 'after-turn');
    const turns = fleet.api.log.filter((r) => r.kind === 'turn');
    facts.typedWhileBusy = turns.map((r) => r.prompt);

    const t = fleet.transcripts()[0];
    facts.transcriptPath = t ? scrub(t.path) : null;
    facts.transcriptHead = t?.head ?? null;
    if (t)
      writeFileSync(
        join(out, 'transcript', 'first-line.json'),
        `${scrub(JSON.stringify(JSON.parse(firstLine(t.path)), null, 2)).slice(0, 20_000)}\n`,
      );
    if (t)
      writeFileSync(
        join(out, 'transcript', 'line-types.json'),
        `${JSON.stringify(
          readFileSync(t.path, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => {
              try {
                const j = JSON.parse(l);
                return j.type ? `${j.type}${j.payload?.type ? `:${j.payload.type}` : ''}` : Object.keys(j).join(',');
              } catch {
                return '?';
              }
            }),
          null,
          1,
        )}\n`,
      );
    const turn = turns[0];
    if (turn)
      writeFileSync(
        join(out, 'api', 'turn-request-headers.json'),
        `${JSON.stringify(
          {
            method: turn.method,
            path: turn.path,
            query: turn.query,
            headers: turn.headers,
            bodyKeys: Object.keys(turn.body ?? {}),
            tools: turn.tools,
          },
          null,
          2,
        )}\n`,
      );
    writeFileSync(
      join(out, 'api', 'request-kinds.json'),
      `${JSON.stringify(
        fleet.api.log.map((r) => `${r.kind} ${r.method} ${r.path}`),
        null,
        1,
      )}\n`,
    );

    // a tool call: the process tree while `sleep 8` runs
    await fleet.send(s.paneId, 'run it [[bash:sleep 8]]');
    await fleet.waitFor(() => fleet.processes().some((p) => p.argv.join(' ') === 'sleep 8'), 20_000);
    shot(s, 'tool-call-running');
    tree(s, 'tool-call-running');
    let lastScreen = '';
    await fleet.waitFor(() => /The command finished\./.test((lastScreen = fleet.screen(s.paneId))) || !pidAlive(s.pid), 30_000);
    facts.afterToolCall = {
      alive: pidAlive(s.pid),
      screenTail: scrub(lastScreen)
        .split('\n')
        .filter((l) => l.trim())
        .slice(-8),
    };
    await fleet.waitIdle(s);

    facts.paneAfterToolCall = paneEnd();
    // a second tmux client attached to the session's pane (a person watching): tmux's session_attached
    const before = fleet.attachedClients(s.tmuxSession);
    // stdin kept open: a `script` whose stdin is at EOF types Ctrl-D into the pane, which quits Codex
    const client = spawn('script', ['-qfc', `tmux -L ${fleet.tmuxSocket} attach -t ${s.tmuxSession}`, '/dev/null'], {
      env: fleet.env,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    await fleet.waitFor(() => fleet.attachedClients(s.tmuxSession) > before, 10_000);
    facts.sessionAttached = { before, during: fleet.attachedClients(s.tmuxSession) };
    fleet.tmux(['detach-client', '-s', s.tmuxSession]);
    await fleet.waitFor(() => fleet.attachedClients(s.tmuxSession) === before, 10_000);
    await fleet.waitFor(() => client.exitCode !== null || client.signalCode !== null, 5_000);
    client.kill('SIGKILL');
    facts.paneAfterAttach = paneEnd();
    let q = s;
    if (!pidAlive(s.pid)) {
      // a session that left while a person's client came and went: keep the screen, go on with a new one
      facts.endedByItself = {
        pane: paneEnd(),
        screen: scrub(fleet.screen(s.paneId))
          .split('\n')
          .filter((l) => l.trim()),
      };
      shot(s, 'ended-by-itself');
      q = await fleet.start();
      await fleet.waitIdle(q);
    }

    // the quit command typed over a draft: appended to it, nothing leaves
    fleet.typeDraft(q.paneId, 'a draft left by a person ');
    await fleet.waitForScreen(q.paneId, /a draft left by a person/, 5_000);
    fleet.typeDraft(q.paneId, fleet.spec.quit);
    await sleep(300);
    fleet.pressKeys(q.paneId, 'Enter');
    const leftOverDraft = await fleet.waitForExit(q.pid, 8_000);
    facts.quitOverDraft = {
      processEnded: leftOverDraft,
      sentToModel: fleet.api.log.some((r) => (r.prompt ?? '').includes('a draft left by a person')),
    };
    if (!leftOverDraft) {
      await fleet.waitIdle(q);
      shot(q, 'after-quit-over-draft');
      const size0 = fleet.transcripts()[0]?.size ?? 0;
      await fleet.send(q.paneId, fleet.spec.quit);
      const q0 = Date.now();
      facts.quit = {
        ended: await fleet.waitForExit(q.pid, 20_000),
        ms: Date.now() - q0,
        transcriptBytesBefore: size0,
        transcriptBytesAfter: fleet.transcripts()[0]?.size ?? 0,
      };
    }
    facts.leftAfterQuit = fleet
      .processes()
      .filter((p) => !p.argv[0]?.endsWith('tmux'))
      .map((p) => scrub(p.argv.join(' ')).slice(0, 200));
    facts.paneProcessAlive = pidAlive(q.pid);
  } finally {
    writeFileSync(join(out, 'facts.json'), `${JSON.stringify(facts, null, 2)}\n`);
    console.log(JSON.stringify(facts, null, 2));
    await fleet.destroy();
  }
}

const cli = process.argv[2] as AgentCli;
if (cli !== 'codex' && cli !== 'gemini') {
  console.error('usage: npx tsx sim/agents/capture-fixtures.ts codex|gemini');
  process.exit(2);
}
await capture(cli);
