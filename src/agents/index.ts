// The exit paths, one line each: which agent CLI and kind of session each serves. The pipeline finds a
// session's path here (exitPathOf) and never asks which kind it holds. A new path (another agent CLI, another
// kind) is a file beside these and one line below. (docs/pipeline.md, "Exit paths")
import { claudeBackground } from './claude-background.js';
import { claudeInteractive } from './claude-interactive.js';
import { CLAUDE_CODE } from './claude-code.js';
import { agentInteractive } from './agent-interactive.js';
import { codex } from './codex.js';
import { gemini } from './gemini.js';
import type { ExitPath } from './types.js';

export const EXIT_PATHS = {
  'claude-background': claudeBackground,
  'claude-interactive': claudeInteractive,
  'codex-interactive': agentInteractive(codex, 'codex'),
  'gemini-interactive': agentInteractive(gemini, 'gemini'),
} as const satisfies Record<string, ExitPath>;

export type ExitPathName = keyof typeof EXIT_PATHS;

/**
 * A session's exit path, by its agent CLI (absent: Claude Code) and its kind. None when that cannot be told (the
 * roster did not say its kind, or no path serves its agent): such a session is protected (kind-unknown), and no
 * person's override reaches it.
 */
export function exitPathOf(s: { kind: string | null; agent?: string | null }): ExitPath | null {
  const agent = s.agent ?? CLAUDE_CODE;
  return Object.values<ExitPath>(EXIT_PATHS).find((p) => p.agent === agent && p.kind === s.kind) ?? null;
}
