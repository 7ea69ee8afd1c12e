// What differs between the agent CLIs sim/agents/ runs: package and pinned version, how to point each at the
// stand-in API (agent-api.ts) with no network and no login, its quit command and its resume argv. Measured
// facts behind each line are in docs/agents/<cli>.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InstallSpec } from './install.js';
import type { Wire } from './agent-api.js';

export type AgentCli = 'codex' | 'gemini';

export interface SetupContext {
  home: string;
  /** the stand-in API's root, e.g. http://127.0.0.1:PORT */
  apiUrl: string;
  apiKey: string;
  /** folders the CLI must treat as trusted (the fleet's work root) */
  trusted: string[];
}

export interface AgentSpec extends InstallSpec {
  cli: AgentCli;
  wire: Wire;
  /** writes the CLI's config under HOME; returns the env the CLI needs on top of the fleet's */
  setup(ctx: SetupContext): Record<string, string>;
  /** argv (after the binary) of an interactive session started with a first prompt */
  startArgs(prompt?: string): string[];
  /** argv (after the binary) that resumes a session by id, interactively */
  resumeArgs(sessionId: string): string[];
  /** what a person types to leave (the CLI's own slash command) */
  quit: string;
  /** a screen that shows the input box drawn and ready */
  ready: (screen: string) => boolean;
  /** a screen that shows a turn in flight */
  busy: RegExp;
  /** a screen line that is the model's reply starting with `text` (not the prompt echoed with it) */
  replyLine(text: string): RegExp;
  /** where the CLI writes its transcripts under HOME, and which file names are transcripts */
  transcriptRoot(home: string): string;
  transcriptName: RegExp;
  /** the session id, cwd and start time a transcript's first line says (null when it does not parse) */
  transcriptHead(firstLine: string): TranscriptHead | null;
}

export interface TranscriptHead {
  sessionId: string;
  /** the session's working folder (Codex writes it; Gemini writes a hash of the project instead: null) */
  cwd: string | null;
  /** epoch ms */
  startedAt: number;
}

const escapeRe = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function parse(line: string): any {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

const toml = (s: string): string => JSON.stringify(s); // a TOML basic string is a JSON string for our inputs

export const SPECS: Record<AgentCli, AgentSpec> = {
  codex: {
    cli: 'codex',
    pkg: '@openai/codex',
    version: '0.171.0',
    bin: 'node_modules/@openai/codex/bin/codex.js',
    wire: 'responses',
    setup(ctx) {
      const dir = join(ctx.home, '.codex');
      mkdirSync(dir, { recursive: true });
      // a custom provider (model_providers.<id>) with env_key needs no login; wire_api "responses" is the only
      // one 0.171 accepts. Trust is per project folder (and its subfolders).
      const lines = [
        'model = "stand-in-model"',
        'model_provider = "standin"',
        'check_for_update_on_startup = false',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        '',
        '[model_providers.standin]',
        'name = "stand-in"',
        `base_url = ${toml(`${ctx.apiUrl}/v1`)}`,
        'env_key = "SUNSET_STANDIN_API_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[feedback]',
        'enabled = false',
        '',
        ...ctx.trusted.flatMap((d) => [`[projects.${toml(d)}]`, 'trust_level = "trusted"', '']),
      ];
      writeFileSync(join(dir, 'config.toml'), lines.join('\n'));
      return { SUNSET_STANDIN_API_KEY: ctx.apiKey, CODEX_HOME: dir };
    },
    startArgs: (prompt) => (prompt === undefined ? [] : [prompt]),
    resumeArgs: (id) => ['resume', id],
    quit: '/quit',
    transcriptRoot: (home) => join(home, '.codex', 'sessions'),
    // sessions/YYYY/MM/DD/rollout-<local start time>-<session id>.jsonl
    transcriptName: /^rollout-.*\.jsonl$/,
    transcriptHead(line) {
      const j = parse(line);
      const p = j?.type === 'session_meta' ? j.payload : null;
      if (!p || typeof p.id !== 'string') return null;
      return { sessionId: p.id, cwd: typeof p.cwd === 'string' ? p.cwd : null, startedAt: Date.parse(p.timestamp) || 0 };
    },
    // the composer line, and the footer naming the model (drawn once the session has loaded)
    ready: (s) => /^› /m.test(s) && /stand-in-model/.test(s),
    busy: /esc to interrupt\)/,
    replyLine: (t) => new RegExp(`^• ${escapeRe(t)}`, 'm'),
  },
  gemini: {
    cli: 'gemini',
    pkg: '@google/gemini-cli',
    version: '0.61.0',
    bin: 'node_modules/@google/gemini-cli/bundle/gemini.js',
    wire: 'gemini',
    setup(ctx) {
      const dir = join(ctx.home, '.gemini');
      mkdirSync(dir, { recursive: true });
      const settings = {
        security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: true } },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, disableAutoUpdate: true, disableUpdateNag: true },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        ui: { hideTips: true, showHomeDirectoryWarning: false },
        // what [[bash:sleep …]] runs, pre-approved (else a permission dialog holds the turn)
        tools: { allowed: ['run_shell_command(sleep)', 'run_shell_command(true)'] },
      };
      writeFileSync(join(dir, 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
      writeFileSync(
        join(dir, 'trustedFolders.json'),
        `${JSON.stringify(Object.fromEntries(ctx.trusted.map((d) => [d, 'TRUST_FOLDER'])), null, 2)}\n`,
      );
      return { GEMINI_API_KEY: ctx.apiKey, GOOGLE_GEMINI_BASE_URL: ctx.apiUrl };
    },
    startArgs: (prompt) => (prompt === undefined ? [] : ['-i', prompt]),
    resumeArgs: (id) => ['--resume', id],
    quit: '/quit',
    transcriptRoot: (home) => join(home, '.gemini', 'tmp'),
    // tmp/<project short name>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the session id>.jsonl
    transcriptName: /^session-.*\.jsonl$/,
    transcriptHead(line) {
      const j = parse(line);
      if (!j || typeof j.sessionId !== 'string') return null;
      return { sessionId: j.sessionId, cwd: null, startedAt: Date.parse(j.startTime) || 0 };
    },
    ready: (s) => /Type your message/.test(s),
    busy: /\(esc to cancel, \d+s\)/,
    replyLine: (t) => new RegExp(`^✦ ${escapeRe(t)}`, 'm'),
  },
};
