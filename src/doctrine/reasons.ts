// Every reason a session is protected, once: its words, and what it means for the chain. The verdict adds the
// codes (src/doctrine/verdict.ts); `judge` and `due` read what each one means from here, never from lists of
// their own. A new reason is one line.

interface ReasonRule {
  /** What a person reads beside the code. */
  words: string;
  /** It never passes by itself: a person decides, or no exit path can be taken (`due`'s `passes: false`). */
  permanent?: true;
  /** It ends the chain: a re-check cannot clear it (DESIGN §5). Always permanent. */
  endsChain?: true;
  /** No person's override reaches it: there is no exit path to take, or none that is safe. */
  unreachable?: true;
}

const table = {
  'task-not-terminal': { words: 'its task is still open (active or awaiting a human)', permanent: true, endsChain: true },
  'task-invalid': { words: 'a task file naming it cannot be read safely' },
  'not-released': { words: 'its task is finished but not yet released' },
  'grace-pending': { words: 'the grace window after release has not ended' },
  'status-busy': { words: 'the roster says it is busy' },
  'status-waiting': { words: 'the roster says it is waiting for input' },
  'status-unknown': { words: 'the roster does not say it is idle' },
  'transcript-recent': { words: 'its transcript was written recently' },
  'transcript-unknown': { words: 'its transcript cannot be found' },
  'client-attached': { words: 'a person is attached to it' },
  'attach-unknown': { words: 'whether anyone is attached cannot be told' },
  'inbox-pending': { words: 'its inbox holds unread messages' },
  'inbox-unknown': { words: 'its inbox cannot be read' },
  'idle-short': { words: 'untasked and not yet idle for the expire window' },
  'no-pane': { words: 'interactive, but in no tmux pane: nothing can type /exit into it', permanent: true, unreachable: true },
  'gave-up': { words: 'three exit requests were made: a person decides now', permanent: true, endsChain: true },
  resumed: { words: 'it exited once and a person brought it back', permanent: true, endsChain: true },
  'probe-failed': { words: 'a probe failed, so the evidence is incomplete' },
  'kind-unknown': {
    words: 'the roster does not say whether it is interactive or background',
    permanent: true,
    unreachable: true,
  },
  'liveness-unknown': { words: 'whether its process lives cannot be told', permanent: true, unreachable: true },
  'hook-busy': { words: 'its own hooks say a turn is under way (a prompt or a tool call since the last Stop)' },
  'hook-waiting': { words: 'its own hooks say it is waiting for a person to allow a tool' },
  'hook-disagrees': { words: 'its own hooks and the roster disagree about whether it is working' },
  'hook-background-tasks': { words: 'its last turn ended with background tasks still running' },
  'id-unsafe': {
    words: 'its id would read as an option or is not a plain name: it cannot be handed to the exit command safely',
    permanent: true,
    unreachable: true,
  },
  'job-blocked': { words: 'its job is blocked: its last reply asks a person something, and nobody has answered' },
  'job-in-flight': { words: 'its job still has work in flight (background shells, subagents, monitors or queued prompts)' },
  'job-unknown': { words: "its job's state file (~/.claude/jobs/<id>/state.json) cannot be read" },
  pinned: { words: 'a person pinned it (~/.claude/jobs/pins.json)' },
  'pins-unknown': { words: "Claude Code's pins file (~/.claude/jobs/pins.json) cannot be read" },
  // passes once its process shows on the roster; until then there is no pid to take an exit path by
  starting: { words: 'it was started moments ago and has no process on the roster yet', unreachable: true },
  'job-working': { words: 'its finished job is working again (a person or its model took it up): the job chain waits' },
  // a draft passes when the person sends or clears it; no override reaches it: /exit typed over it would send the
  // person's text to the model as a turn, and the session would stay
  'draft-pending': { words: 'a person left a draft in its input box: nothing is typed over it', unreachable: true },
  'draft-unknown': { words: 'its input box cannot be read, so a draft there cannot be ruled out', unreachable: true },
} as const satisfies Record<string, ReasonRule>;

export type Reason = keyof typeof table;
export const REASON_RULES: Readonly<Record<Reason, ReasonRule>> = table;

/** Each reason's words. */
export const REASONS = Object.fromEntries(Object.entries(table).map(([r, rule]) => [r, rule.words])) as {
  readonly [R in Reason]: (typeof table)[R]['words'];
};

const where = (p: (rule: ReasonRule) => boolean): ReadonlySet<Reason> =>
  new Set((Object.keys(table) as Reason[]).filter((r) => p(REASON_RULES[r])));

/** Protections no person's override reaches: there is no exit path to take, or none that is safe. */
export const UNREACHABLE: ReadonlySet<string> = where((r) => Boolean(r.unreachable));
/** Protections that never pass on their own: a person decides (CHAIN_ENDING), or no exit path can be taken. */
export const PERMANENT: ReadonlySet<string> = where((r) => Boolean(r.permanent));
/** Reasons that a re-check cannot clear: they end a chain (DESIGN §5). */
export const CHAIN_ENDING: ReadonlySet<Reason> = where((r) => Boolean(r.endsChain));
