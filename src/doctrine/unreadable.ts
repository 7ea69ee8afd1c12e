// claude-code-unreadable: the loud word when Claude Code's own files stop reading as sunset knows them (a CLI
// update that keeps jobs and sessions elsewhere, a folder moved). Pure: what a sweep saw of each live background
// session's files → a finding; a finding and the last state → the next state and whether to raise or clear the
// one alarm. The sweep reads (src/evidence/claude-files.ts); a thin shell raises (src/pipeline/unreadable-watch.ts).

/** Claude Code's files sunset reads for a live background session (docs/claude-code.md). */
export type ClaudeFile = 'job-state' | 'session-file' | 'daemon-roster';
/** What is wrong with one: not there, not a JSON object of the known shape, or a protocol sunset does not speak. */
export type FileProblem = 'missing' | 'unreadable' | 'unknown-protocol';

/** One live background session, as the sweep saw its files (null: that file read as sunset knows it). */
export interface SessionFilesSeen {
  label: string;
  sessionId: string;
  /** The CLI's roster (or the sweep's roster) lists it; false: only Claude Code's session files show it. */
  listed: boolean;
  jobState: FileProblem | null;
  sessionFile: FileProblem | null;
}

export interface FilesSeen {
  /** Every live background session the sweep saw: on the roster, or in Claude Code's session files. */
  sessions: SessionFilesSeen[];
  /** The daemon's roster file (daemon/roster.json): null when it reads as known, or is not there (not every CLI keeps one). */
  daemonRoster: { problem: FileProblem; proto: unknown } | null;
  /** The folder the files were read in (fleet.claudeDir); absent: the default, ~/.claude. */
  claudeDir?: string;
}

export interface UnreadableFiles {
  file: ClaudeFile;
  problem: FileProblem;
  /** Where the file is, in the configured claudeDir, `<id>` / `<pid>` for the session's part (claudeFilePath). */
  path: string;
  /** The sessions it touches, by label. */
  sessions: string[];
}

/** What a sweep found: the fleet-level field `claudeCodeUnreadable` (verdict --json, the web, /metrics). */
export interface UnreadableFinding {
  /** Live background sessions whose files do not read as sunset knows them. */
  sessions: number;
  /** Live background sessions looked at. */
  checked: number;
  files: UnreadableFiles[];
  /** Those only Claude Code's session files show: the CLI's roster does not list them (sessionIds). */
  unlisted: string[];
  /** What sunset does meanwhile, a sentence each. */
  meanwhile: string[];
}

/**
 * The sweep's finding, or null when every live background session's files read (or there was none to look
 * at: `checked` tells which, through `seen`). Pure.
 */
export function unreadableFinding(seen: FilesSeen): UnreadableFinding | null {
  const groups = new Map<string, UnreadableFiles>();
  const bad = new Set<string>();
  const add = (file: ClaudeFile, problem: FileProblem, s: SessionFilesSeen) => {
    const k = `${file}/${problem}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { file, problem, path: claudeFilePath(file, seen.claudeDir ?? DEFAULT_CLAUDE_DIR), sessions: [] }));
    g.sessions.push(s.label);
    bad.add(s.sessionId);
  };
  for (const s of seen.sessions) {
    if (s.jobState) add('job-state', s.jobState, s);
    if (s.sessionFile) add('session-file', s.sessionFile, s);
    if (seen.daemonRoster) add('daemon-roster', seen.daemonRoster.problem, s);
  }
  if (!bad.size) return null;
  const files = [...groups.values()].sort((a, b) => (a.file + a.problem < b.file + b.problem ? -1 : 1));
  const unlisted = seen.sessions.filter((s) => !s.listed && bad.has(s.sessionId)).map((s) => s.sessionId);
  return { sessions: bad.size, checked: seen.sessions.length, files, unlisted, meanwhile: meanwhile(files, unlisted.length) };
}

/** What sunset does while a file does not read: it protects, and says how. */
function meanwhile(files: UnreadableFiles[], unlisted: number): string[] {
  const out: string[] = [];
  const has = (f: ClaudeFile, p?: FileProblem) => files.some((x) => x.file === f && (!p || x.problem === p));
  if (has('job-state'))
    out.push('a session whose job state cannot be read is protected (job-unknown): it is never asked or stopped while it is unknown');
  if (unlisted)
    out.push(
      `${unlisted} of them the CLI's roster does not list: nothing acts on a session off the roster, and a task naming one is not marked ended`,
    );
  if (has('session-file', 'unknown-protocol') || has('session-file', 'unreadable'))
    out.push('a session whose session file does not read is protected (probe-failed), and nothing is sent over its socket');
  if (has('session-file', 'missing'))
    out.push('a session with no session file has no known messaging socket: the ask goes to its inbox folder, not to its model');
  if (has('daemon-roster'))
    out.push("the daemon's roster is of a protocol sunset does not know: the roster is taken from the CLI, never from Claude Code's files");
  return out;
}

/** The alarm's words: the version, what is missing, what sunset does meanwhile. */
export function unreadableMessage(f: UnreadableFinding, version: string | null): string {
  const what = f.files
    .map(
      (g) =>
        `${fileWords(g)} ${PROBLEM_WORDS[g.problem]} for ${g.sessions.length} session${g.sessions.length === 1 ? '' : 's'} (${g.sessions.slice(0, 5).join(', ')}${g.sessions.length > 5 ? ', …' : ''})`,
    )
    .join('; ');
  return `Claude Code ${version ?? '(version unknown)'}: its files do not read as sunset knows them for ${f.sessions} of ${f.checked} live background session${f.checked === 1 ? '' : 's'}: ${what}. Meanwhile ${f.meanwhile.join('; ')}. The alarm closes by itself when the files read again. To do: compare \`claude --version\` with the versions sunset was tested with, look for the files where they are said missing (a moved or unmounted fleet.claudeDir, permissions); after an update that moved them, pin the previous version — docs/operations.md, "When Claude Code's files stop reading".`;
}

const FILE_NAMES: Record<ClaudeFile, string> = {
  'job-state': 'the job state file',
  'session-file': 'the session file',
  'daemon-roster': "the daemon's roster",
};

/** fleet.claudeDir's default, as a person writes it. */
const DEFAULT_CLAUDE_DIR = '~/.claude';

/** Where each file is in claudeDir, `<id>` (the job's short id) or `<pid>` standing for the session's part. Pure. */
export function claudeFilePath(file: ClaudeFile, claudeDir: string): string {
  const dir = claudeDir.replace(/\/+$/, '') || '/';
  const sub = { 'job-state': 'jobs/<id>/state.json', 'session-file': 'sessions/<pid>.json', 'daemon-roster': 'daemon/roster.json' }[file];
  return `${dir === '/' ? '' : dir}/${sub}`;
}

/** `the job state file (/home/me/.claude/jobs/<id>/state.json)`; a finding kept before paths were recorded: the default folder. */
export function fileWords(g: Pick<UnreadableFiles, 'file'> & { path?: string }): string {
  return `${FILE_NAMES[g.file]} (${g.path ?? claudeFilePath(g.file, DEFAULT_CLAUDE_DIR)})`;
}
const PROBLEM_WORDS: Record<FileProblem, string> = {
  missing: 'is missing',
  unreadable: 'does not read as a JSON object',
  'unknown-protocol': 'names a protocol sunset does not know',
};

// ---------------------------------------------------------------------------------------------------------
// once per condition: the episode, kept in stateDir between sweeps and restarts

/** The condition as last seen by the CLI's sweeps: since when, and the alarm once raised. */
export interface UnreadableState {
  /** When a sweep first found it (this episode). */
  since: string;
  /** When a sweep last found it. */
  lastSeen: string;
  /** The alarm's key, once raised (`claude-code-unreadable/<since>`). */
  key: string | null;
  raisedAt: string | null;
  finding: UnreadableFinding;
  /** The CLI's version as the alarm named it (the shell adds it when it raises). */
  version?: string | null;
}

export type UnreadableAct = { act: 'raise'; key: string } | { act: 'clear'; key: string } | { act: null };

/**
 * One CLI sweep's finding against the last state. A finding held for `holdFor` raises the alarm, once per episode;
 * files that read again on a sweep that looked at a live background session end the episode (and close the alarm
 * raised). A sweep with nothing to look at (no live background session, the roster failed) changes nothing. Pure.
 */
export function nextUnreadable(
  prev: UnreadableState | null,
  sweep: { finding: UnreadableFinding | null; checked: number; at: number },
  holdFor: number,
): { state: UnreadableState | null; act: UnreadableAct } {
  const at = new Date(sweep.at).toISOString();
  const f = sweep.finding;
  if (!f) {
    if (!prev || sweep.checked === 0) return { state: prev, act: { act: null } };
    return { state: null, act: prev.key ? { act: 'clear', key: prev.key } : { act: null } };
  }
  const since = prev?.since ?? at;
  const state: UnreadableState = { since, lastSeen: at, key: prev?.key ?? null, raisedAt: prev?.raisedAt ?? null, finding: f };
  if (prev?.version !== undefined) state.version = prev.version;
  if (state.key || !(sweep.at - Date.parse(since) >= holdFor)) return { state, act: { act: null } };
  const key = `claude-code-unreadable/${since}`;
  return { state: { ...state, key, raisedAt: at }, act: { act: 'raise', key } };
}
