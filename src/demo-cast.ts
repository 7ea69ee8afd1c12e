// The demo's scenario: who is in its fleet (each session made to show one verdict), their tasks, and the
// windows compressed to seconds. Apart from demo.ts, which runs it, narrates it and cleans up after it.
import type { DemoParts } from './demo-parts.js';

type Fleet = import('../sim/fleet/fleet.js').TestFleet;
type Agent = import('../sim/fleet/fleet.js').Agent;
type CodexAgent = import('../sim/fleet/fleet.js').CodexAgent;

/** An hour, in ms: how old the stand-ins' transcripts are made, and the unit of the waiting tasks' ages. */
export const H = 3_600_000;

/** The state each of the demo's tasks closes in (the Driver's closing, 1.5 s in). */
export const CLOSES_AS: Record<string, string> = {
  'demo-done': 'done',
  'demo-abandoned': 'abandoned',
  'demo-parked': 'parked',
  'demo-busy': 'done',
  'demo-attached': 'done',
  'demo-stubborn': 'done',
  'demo-inter': 'done',
  'demo-codex': 'done',
};

export interface Cast {
  finished: Agent[];
  busy: Agent;
  attached: Agent;
  awaiting: Agent[];
  active: Agent;
  stubborn: Agent;
  interactive: Agent;
  /** A stand-in Codex TUI session (sim/fleet/codex.mjs), read by sunset's real Codex adapter. */
  codex: CodexAgent;
  untasked: Agent;
  names: Map<string, string>;
}

export async function buildFleet(fleet: Fleet, parts: DemoParts): Promise<Cast> {
  const names = new Map<string, string>();
  const spawn = async (label: string, f: () => Promise<Agent>) => {
    parts.check();
    const a = await f();
    names.set(a.id, label);
    names.set(a.sessionId, label);
    return a;
  };
  const bg = (label: string, mode: 'idle' | 'busy' | 'stubborn' = 'idle') =>
    spawn(label, () => fleet.spawnBackground({ mode, transcriptAgeMs: H }));
  const finished = [await bg('finished #1'), await bg('finished #2'), await bg('finished #3')];
  const busy = await spawn('busy', () => fleet.spawnBackground({ mode: 'busy' }));
  const attached = await bg('attached');
  parts.check();
  await fleet.attach(attached);
  const awaiting = [await bg('awaiting-human #1'), await bg('awaiting-human #2')];
  const active = await bg('active');
  const stubborn = await bg('stubborn', 'stubborn');
  const interactive = await spawn('interactive', () => fleet.spawnInteractive({ transcriptAgeMs: H }));
  parts.check();
  const codex = await fleet.spawnCodex({ prompt: 'Fix the flaky date test' });
  names.set(codex.id, 'codex');
  names.set(codex.sessionId, 'codex');
  const untasked = await bg('untasked (idle 1h)');
  for (let i = 0; i < RECORDS; i++) fleet.addRecord();

  const states = ['done', 'abandoned', 'parked'];
  for (const [i, a] of finished.entries())
    fleet.writeTask({ id: `demo-${states[i]}`, state: 'active', sessionId: a.sessionId, title: `finished task ${i + 1}` });
  fleet.writeTask({ id: 'demo-busy', state: 'active', sessionId: busy.sessionId });
  fleet.writeTask({ id: 'demo-attached', state: 'active', sessionId: attached.sessionId });
  for (const [i, a] of awaiting.entries())
    fleet.writeTask({
      id: `demo-await-${i + 1}`,
      state: 'awaiting-human',
      sessionId: a.sessionId,
      stateChangedAt: new Date(Date.now() - (46 + 200 * i) * H).toISOString(),
    });
  fleet.writeTask({ id: 'demo-active', state: 'active', sessionId: active.sessionId });
  fleet.writeTask({ id: 'demo-stubborn', state: 'active', sessionId: stubborn.sessionId });
  fleet.writeTask({ id: 'demo-inter', state: 'active', sessionId: interactive.sessionId });
  fleet.writeTask({ id: 'demo-codex', state: 'active', sessionId: codex.sessionId, title: 'a Codex session' });
  return { finished, busy, attached, awaiting, active, stubborn, interactive, codex, untasked, names };
}

/** The Driver closes its tasks (as done, abandoned, parked): the watcher sees them turn terminal. */
export function closeTasks(fleet: Fleet): void {
  for (const [id, state] of Object.entries(CLOSES_AS)) fleet.writeTask({ ...fleet.readTask(id), id, state });
}

/** The roster records without a pid the demo's fleet starts with. */
export const RECORDS = 3;

/** Who is who, before anything happens: the names the narration uses, and each one's task. */
export function castLines(cast: Cast): string[] {
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
    `  codex                a Codex CLI session in a tmux pane (task demo-codex; a stand-in of its TUI, read by sunset's`,
    `                       real Codex adapter): leaves by \`/quit\` typed into its pane`,
    `  untasked (idle 1h)   no task; idle past the expire window (30m here)`,
    `The Driver (whatever runs your agents' tasks and writes their task files) closes the tasks 1.5 s after sunset starts.`,
    `Each timed line below is one of sunset's decisions, from its log, timed from sunset's start. The windows are`,
    `compressed to seconds (the defaults are minutes): grace 2 s (a closed task's session is left alone), then one ask`,
    `to wrap up, 2 s later the first exit request, 2 s between requests, up to 3 s to see each one leave — plus the`,
    `time each check and this machine take, so the lines come a few seconds later than those sums.\n`,
  ];
}

/** The config the demo runs with: a host of its own, the windows compressed to seconds, Codex read from the
 * stand-in's home (`codex`: its command and home), Gemini CLI not read. */
export function demoOverrides(redisUrl: string, webPort = 0, codex?: { command: string; home: string }) {
  return {
    host: `demo-${Math.random().toString(36).slice(2, 8)}`,
    redisUrl,
    ...(codex ? { fleet: { agents: { codex, gemini: false } } } : {}),
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
