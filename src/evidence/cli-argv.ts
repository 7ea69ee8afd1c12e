// What a Claude Code process's argv says it is, read as the real CLI reads it (2.1.328, read in its code and run;
// docs/claude-code.md "People watching"): a client attached to a session (`claude attach <x>`), an agent view
// (`claude agents`, `claude --model opus agents`), or a plain `claude`, which opens the agent view where the
// person's global config says `defaultToAgentsView`. The CLI reads its argv more than one way (its fast paths
// before its full parser); where readings differ, every one counts, since a client missed is a session asked
// or stopped under a person's eyes (unknown protects). Pure.

/**
 * Root options that take a value, the word after one being its value: the CLI's own table, the one its verb index
 * reads (hidden options too; every option of `claude --help` that takes a `<value>` is in it).
 */
const VALUED = new Set([
  '--prefill',
  '--prefill-b64',
  '--deep-link-repo',
  '--deep-link-last-fetch',
  '--deep-link-cwd-b64',
  '--handle-uri',
  '--settings',
  '--managed-settings',
  '--initialize-fields',
  '--setting-sources',
  '--client-data-url',
  '--watch-artifact',
  '--watch-artifact-no-autoreact',
  '--team-name',
  '--agent-id',
  '--agent-name',
  '--agent-color',
  '--parent-session-id',
  '--lead-verify-key',
  '--agent-type',
  '--model',
  '--agent',
  '--routine',
  '--effort',
  '--fast-mode',
  '--permission-mode',
  '--inherit-permission-mode',
  '--proactivity',
  '--debug-file',
  '--system-prompt',
  '--system-prompt-file',
  '--append-system-prompt',
  '--append-system-prompt-file',
  '--system-prompt-snapshot',
  '--append-subagent-system-prompt',
  '--append-subagent-system-prompt-file',
  '--plan-mode-instructions',
  '--permission-prompt-tool',
  '--permission-prompts',
  '--json-schema',
  '--fallback-model',
  '--advisor',
  '--agents',
  '--name',
  '-n',
  '--add-dir',
  '--mcp-config',
  '--plugin-dir',
  '--plugin-dir-no-mcp',
  '--plugin-url',
  '--remote-control-session-name-prefix',
  '--exec',
  '-m',
  '--sdk-url',
  '--thinking',
  '--thinking-display',
  '--max-thinking-tokens',
  '--max-turns',
  '--max-budget-usd',
  '--task-budget',
  '--autocompact',
  '--rewind-files',
  '--resume-session-at',
  '--resume-drops-turn',
  '--workload',
  '--output-format',
  '--input-format',
  '--teammate-mode',
  '--messaging-socket-path',
  '--session-id',
  '--environment',
  '--pool',
  '--ref',
  '--on-branch',
  '--correlation-id',
  '--metadata',
  '--forward-home-settings',
  '--project-config-root',
  '--attach-serve',
  '--runner-declares',
  '--session-began-as-copy',
  // and those that take one or more (VARIADIC)
  '--allowedTools',
  '--allowed-tools',
  '--disallowedTools',
  '--disallowed-tools',
  '--tools',
  '--betas',
  '--file',
  '--channels',
  '--dangerously-load-development-channels',
]);

/** Of those, the ones that take every following word up to one that looks like an option (`--add-dir a b`). */
const VARIADIC = new Set([
  '--allowedTools',
  '--allowed-tools',
  '--disallowedTools',
  '--disallowed-tools',
  '--tools',
  '--add-dir',
  '--mcp-config',
  '--betas',
  '--file',
  '--channels',
  '--dangerously-load-development-channels',
]);

/** Root options whose value is optional: the next word is theirs unless it looks like an option (`--resume [id]`). */
const OPTIONAL = new Set([
  '-d',
  '--debug',
  '-r',
  '--resume',
  '--from-pr',
  '-w',
  '--worktree',
  '--teleport',
  '--cloud',
  '--remote',
  '--project',
  '--remote-control',
  '--rc',
  '--prompt-suggestions',
]);

/** Root options that take no value (the CLI's table, and its --help, --version, --print and --bg). */
const FLAGS = new Set([
  '-d2e',
  '--debug-to-stderr',
  '--verbose',
  '-p',
  '--print',
  '--bare',
  '--safe-mode',
  '--init',
  '--init-only',
  '--maintenance',
  '--include-hook-events',
  '--include-partial-messages',
  '--forward-subagent-text',
  '--session-mirror',
  '--await-claim',
  '--hold-repository-while-parked',
  '--await-initialize',
  '--managed-settings-in-initialize',
  '--dangerously-skip-permissions',
  '--allow-dangerously-skip-permissions',
  '--replay-user-messages',
  '--host-auth-is-org-sign-in',
  '--enable-auth-status',
  '--restricted',
  '--allow-other-models',
  '--exclude-dynamic-system-prompt-sections',
  '--include-unsupported-models',
  '-c',
  '--continue',
  '--fork-session',
  '--deep-link-origin',
  '--no-session-persistence',
  '--reply-on-resume',
  '--ide',
  '--desktop',
  '--strict-mcp-config',
  '--disable-slash-commands',
  '--chrome',
  '--no-chrome',
  '--tmux',
  '--enable-auto-mode',
  '--bg',
  '--background',
  '--agents-view-if-allowed',
  '--brief',
  '--ax-screen-reader',
  '--plan-mode-required',
  '--hard-fail',
  '--routine',
  '-h',
  '--help',
  '-v',
  '-V',
  '--version',
]);

/** The agent view's fast path reads these anywhere in argv, each with one value (`--cwd P` or `--cwd=P`). */
const VIEW_VALUED = new Set([
  '--cwd',
  '--settings',
  '--managed-settings',
  '--setting-sources',
  '--add-dir',
  '--plugin-dir',
  '--plugin-dir-no-mcp',
  '--mcp-config',
]);
/** ... and these, the defaults of the sessions it dispatches (`--model opus`). */
const VIEW_DEFAULTS = new Set(['--permission-mode', '--inherit-permission-mode', '--model', '--effort', '--agent']);

const looksLikeOption = (w: string) => w.length > 1 && w.startsWith('-');

/** The last word an option at `at` takes as its value(s): `at` itself when it takes none. The CLI's rule. */
function valueEnd(args: readonly string[], at: number): number {
  const w = args[at];
  if (OPTIONAL.has(w)) return at + 1 < args.length && !looksLikeOption(args[at + 1]) ? at + 1 : at;
  if (!VALUED.has(w)) return at;
  let end = at + 1;
  if (VARIADIC.has(w)) while (end + 1 < args.length && !looksLikeOption(args[end + 1])) end++;
  return end;
}

/** An option the CLI's tables know (`--model`, `--model=opus`): its values can be told from the verb. */
function known(w: string): boolean {
  if (FLAGS.has(w) || VALUED.has(w) || OPTIONAL.has(w)) return true;
  const eq = w.indexOf('=');
  return eq > 0 && (VALUED.has(w.slice(0, eq)) || OPTIONAL.has(w.slice(0, eq)));
}

/**
 * Where the verb may be: the first word that is not an option nor an option's value (the CLI's own verb index),
 * the first word that does not start with `-` (how sunset read it before), and — once an option the CLI's tables do
 * not know comes first, which may take no value or several — every word after it. Empty when there is no verb.
 */
export function verbPlaces(args: readonly string[]): number[] {
  const places: number[] = [];
  let unknownAt = -1;
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    if (w === '--') {
      if (i + 1 < args.length) places.push(i + 1);
      break;
    }
    if (!looksLikeOption(w)) {
      places.push(i);
      break;
    }
    if (unknownAt < 0 && !known(w)) unknownAt = i;
    i = valueEnd(args, i);
  }
  if (unknownAt >= 0) for (let k = unknownAt + 1; k < args.length && args[k] !== '--'; k++) places.push(k);
  const naive = args.findIndex((w) => !w.startsWith('-'));
  if (naive >= 0) places.push(naive);
  return [...new Set(places)].sort((a, b) => a - b);
}

/** Only debug options (or nothing): how the CLI tells a plain `claude` (its `ve`). */
function onlyDebug(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    if (
      w === '--debug' ||
      w === '-d' ||
      w === '--debug-to-stderr' ||
      w === '-d2e' ||
      w.startsWith('--debug=') ||
      w.startsWith('--debug-file=')
    )
      continue;
    if (w === '--debug-file' && i + 1 < args.length) {
      i++;
      continue;
    }
    return false;
  }
  return true;
}

/** Does the option at `at` (`--x v` or `--x=v`) belong to `table` and have its value? */
function withValue(table: ReadonlySet<string>, words: readonly string[], at: number): boolean {
  const w = words[at];
  const eq = w.indexOf('=');
  return eq > 0 ? table.has(w.slice(0, eq)) : table.has(w) && at + 1 < words.length;
}

/**
 * The agent view's fast path, in the CLI's two steps: an `agents` word that is not the value of one of the view's
 * own options; then, the defaults of the sessions it dispatches (`--model opus`) taken from what is left, nothing
 * but debug options may remain.
 */
function viewFastPath(args: readonly string[]): boolean {
  let agents = false;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    if (w === 'agents' && !agents) agents = true;
    else if (w === '--strict-mcp-config' || w === '--restricted') continue;
    else if (withValue(VIEW_VALUED, args, i)) i += w.includes('=') ? 0 : 1;
    else rest.push(w);
  }
  if (!agents) return false;
  const left: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i];
    if (w === '--dangerously-skip-permissions' || w === '--allow-dangerously-skip-permissions') continue;
    if (withValue(VIEW_DEFAULTS, rest, i)) i += w.includes('=') ? 0 : 1;
    else left.push(w);
  }
  return onlyDebug(left);
}

/** What a Claude Code process's argv makes it, to sunset: the people's clients it may be. */
export interface ClientArgv {
  /** `claude attach <words>` (the configured attach argv): the words after it (an id, a prefix, a sessionId or a name). */
  attach?: string[];
  /** An agent view (`claude agents` without --json, options before it or not). */
  agentView?: true;
  /** A plain `claude`: the agent view where the person's global config says `defaultToAgentsView`, else an interactive session. */
  agentViewIfDefault?: true;
}

/**
 * Read the words after the command name (claudeArgs); `markers` are the configured attach argv's words after the
 * command (`['attach']`). Each reading the CLI may make counts: a process may come out as both kinds of client.
 */
export function readClientArgv(argv: readonly string[], markers: readonly string[]): ClientArgv {
  // the CLI drops these two first words before it reads the rest
  let args = argv;
  if (args[0]?.startsWith('--runner-declares=')) args = args.slice(1);
  if (args[0] === '--ignore-persisted-trust') args = args.slice(1);
  const out: ClientArgv = {};
  const places = verbPlaces(args);
  if (markers.length) {
    const at = places.find((p) => markers.every((m, k) => args[p + k] === m));
    if (at !== undefined) out.attach = args.slice(at + markers.length).filter((w) => w && !w.startsWith('-'));
  }
  if (!args.includes('--json') && (places.some((p) => args[p] === 'agents') || viewFastPath(args))) out.agentView = true;
  if (onlyDebug(args)) out.agentViewIfDefault = true;
  return out;
}
