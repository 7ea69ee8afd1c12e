// Claude Code hook events as evidence: what a hook reports, kept as one small JSON file per session
// (`<hooks dir>/<session>.json`, the latest state), so a sweep of hundreds of sessions reads one folder
// and only the files of the rows it judges. This module runs inside every hook call (`hook-event`),
// so it imports node:fs and node:path only: no zod, no config, no logger (test/hooks.test.ts checks).
import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { isTempName, writeFileAtomicSync } from '../store/atomic-file.js';

/** What the session is doing, by its own hooks: in a turn, waiting on a person's permission, between turns, ended. */
export type HookStateName = 'busy' | 'waiting' | 'idle' | 'ended';

/** The file kept per session: the latest state, and what the last Stop said about background tasks. */
export interface HookState {
  v: 1;
  sessionId: string;
  state: HookStateName;
  /** The hook event that set the state (`PreToolUse`, `Stop`, …). */
  event: string;
  /** When sunset recorded it (ISO-8601 UTC). */
  at: string;
  notificationType?: string;
  /** SessionEnd's `reason` (clear, logout, prompt_input_exit, other). */
  reason?: string;
  /** Background tasks the last Stop reported still running (0 when it reported none). */
  backgroundTasks: number;
  lastStopAt?: string;
  transcriptPath?: string;
  cwd?: string;
}

/** The hook events sunset installs, and the Notification types it listens for. */
export const HOOK_EVENTS = ['UserPromptSubmit', 'PreToolUse', 'Stop', 'Notification', 'SessionEnd'] as const;
export const NOTIFICATION_TYPES = ['permission_prompt', 'idle_prompt'] as const;

/** Beyond this, stdin is not parsed whole (a PreToolUse for a large Write): the fields are read from its head. */
const PARSE_LIMIT = 2 * 1024 * 1024;
const HEAD = 64 * 1024;

/** The same file name rule as stateDir's other keys: no separators, no leading dot (state-files.ts safeName). */
export function hookFileName(sessionId: string): string {
  return `${encodeURIComponent(sessionId).replace(/\./g, '%2E').replace(/\*/g, '%2A')}.json`;
}

/** Parse a hook's stdin: the fields sunset needs, or null when it names no session or no event. */
export function parseHookInput(text: string): Record<string, unknown> | null {
  let input: Record<string, unknown> | null = null;
  if (text.length <= PARSE_LIMIT) {
    try {
      const v = JSON.parse(text) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) input = v as Record<string, unknown>;
    } catch {
      input = null;
    }
  }
  if (!input) {
    // Too large to parse whole, or not JSON: Claude Code writes these fields first, so read them from the head.
    const head = text.slice(0, HEAD);
    input = {};
    for (const k of ['session_id', 'hook_event_name', 'notification_type', 'transcript_path', 'cwd', 'reason']) {
      const m = new RegExp(`"${k}"\\s*:\\s*"((?:[^"\\\\]|\\\\.){0,4096})"`).exec(head);
      if (m) {
        try {
          input[k] = JSON.parse(`"${m[1]}"`);
        } catch {
          /* a torn escape: skip the field */
        }
      }
    }
  }
  if (typeof input.session_id !== 'string' || !input.session_id || typeof input.hook_event_name !== 'string') return null;
  return input;
}

function countTasks(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'number' && Number.isFinite(v)) return Math.max(0, Math.floor(v));
  if (v && typeof v === 'object') return Object.keys(v).length;
  return 0;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/**
 * The next state from the previous one and one hook input. Pure. Null when the event changes nothing
 * (an event or a notification type sunset does not listen for).
 */
export function applyHookEvent(prev: HookState | null, input: Record<string, unknown>, at: string): HookState | null {
  const event = String(input.hook_event_name);
  const sessionId = String(input.session_id);
  let state: HookStateName;
  let notificationType: string | undefined;
  let reason: string | undefined;
  let backgroundTasks = prev && prev.sessionId === sessionId ? prev.backgroundTasks : 0;
  let lastStopAt = prev && prev.sessionId === sessionId ? prev.lastStopAt : undefined;
  switch (event) {
    case 'UserPromptSubmit':
    case 'PreToolUse':
      state = 'busy';
      break;
    case 'Stop':
      state = 'idle';
      backgroundTasks = countTasks(input.background_tasks);
      lastStopAt = at;
      break;
    case 'Notification': {
      notificationType = str(input.notification_type);
      if (notificationType === 'permission_prompt') state = 'waiting';
      else if (notificationType === 'idle_prompt') state = 'idle';
      else return null;
      break;
    }
    case 'SessionEnd':
      state = 'ended';
      reason = str(input.reason);
      break;
    default:
      return null;
  }
  const next: HookState = { v: 1, sessionId, state, event, at, backgroundTasks };
  if (notificationType) next.notificationType = notificationType;
  if (reason) next.reason = reason;
  if (lastStopAt) next.lastStopAt = lastStopAt;
  const transcriptPath = str(input.transcript_path) ?? prev?.transcriptPath;
  const cwd = str(input.cwd) ?? prev?.cwd;
  if (transcriptPath) next.transcriptPath = transcriptPath;
  if (cwd) next.cwd = cwd;
  return next;
}

export function readHookState(dir: string, sessionId: string): HookState | null {
  try {
    const v = JSON.parse(readFileSync(join(dir, hookFileName(sessionId)), 'utf8')) as HookState;
    return v && typeof v === 'object' && typeof v.state === 'string' && typeof v.at === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * Record one hook input: read the session's file, apply, write it back atomically (temp file + rename
 * in the same folder). Two hooks of one session racing (parallel PreToolUse calls) both write `busy`;
 * the last rename wins, and no reader ever sees a torn file.
 */
export function recordHookEvent(dir: string, text: string, now: number = Date.now()): HookState | null {
  const input = parseHookInput(text);
  if (!input) return null;
  const sessionId = String(input.session_id);
  const next = applyHookEvent(readHookState(dir, sessionId), input, new Date(now).toISOString());
  if (!next) return null;
  mkdirSync(dir, { recursive: true });
  // atomic, not fsynced: rewritten at every tool call and stale in minutes, it is not worth a journal commit per hook
  writeFileAtomicSync(join(dir, hookFileName(sessionId)), `${JSON.stringify(next)}\n`, { durable: false });
  return next;
}

/** One readdir: the set of session files present (null when the folder is missing). */
export function listHookFiles(dir: string): Set<string> | null {
  try {
    return new Set(readdirSync(dir).filter((n) => n.endsWith('.json') && !n.startsWith('.')));
  } catch {
    return null;
  }
}

/** Remove session files (and stray temp files) not written for `olderThanMs`: sessions long gone. */
export function pruneHookStates(dir: string, olderThanMs: number, now: number = Date.now()): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const n of names) {
    if (!n.endsWith('.json') && !n.startsWith('.tmp-') && !isTempName(n)) continue;
    const p = join(dir, n);
    try {
      if (now - statSync(p).mtimeMs > olderThanMs) {
        unlinkSync(p);
        removed++;
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return removed;
}
