// Claude Code hooks as evidence, the settings side: `sunset hooks install` merges sunset's command hooks
// into a Claude Code settings file (never dropping a person's own hooks, with a backup first) and
// `sunset hooks remove` takes out only sunset's. The hooks run `hook-event` (src/cli/hook-event.ts),
// which keeps each session's latest state in the hooks folder; hookFacts() turns that state into
// evidence for the verdict.
import { constants as fsConstants, copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import type { HookState } from './hook-events.js';
import type { HookFacts } from '../doctrine/verdict.js';
import { stageFileSync } from '../store/atomic-file.js';
import { errorCode, errorMessage } from '../errors.js';

/** Every command sunset installs holds this, and only commands that hold it are sunset's. */
export const HOOK_MARKER = 'sunset hook-event';

/** The hooks folder: `hooks.dir`, else `<stateDir>/hooks`. */
export function hooksDir(config: Pick<Config, 'stateDir'> & { hooks?: { dir: string | null } }): string {
  return config.hooks?.dir ?? join(config.stateDir, 'hooks');
}

/** Fresh hook state → evidence; stale state is kept (for a person to read) but marked not fresh. Pure. */
export function hookFacts(state: HookState | null, now: number, freshFor: number): HookFacts | null {
  if (!state) return null;
  const at = Date.parse(state.at);
  if (!Number.isFinite(at)) return null;
  const ageMs = Math.max(0, now - at);
  const facts: HookFacts = {
    state: state.state,
    event: state.event,
    at: state.at,
    ageMs,
    fresh: ageMs <= freshFor,
    backgroundTasks: Number.isFinite(state.backgroundTasks) ? state.backgroundTasks : 0,
  };
  if (state.notificationType) facts.notificationType = state.notificationType;
  return facts;
}

// ---------------------------------------------------------------- the settings file

export interface HookCommand {
  type: 'command';
  command: string;
  timeout?: number;
  [k: string]: unknown;
}
export interface MatcherGroup {
  matcher?: string;
  hooks: HookCommand[];
  [k: string]: unknown;
}
export type Settings = Record<string, unknown> & { hooks?: Record<string, MatcherGroup[]> };

/** Which events sunset listens to, with which matcher (Notification matches on notification_type). */
export const INSTALLED: Array<{ event: string; matcher: string }> = [
  { event: 'UserPromptSubmit', matcher: '' },
  { event: 'PreToolUse', matcher: '' },
  { event: 'Stop', matcher: '' },
  { event: 'Notification', matcher: 'permission_prompt' },
  { event: 'Notification', matcher: 'idle_prompt' },
  { event: 'SessionEnd', matcher: '' },
];

/** Seconds Claude Code may wait for one hook run before it gives up on it. */
const HOOK_TIMEOUT_S = 10;

export class SettingsError extends Error {}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The compiled hook-event script (dist/src/cli/hook-event.js, beside this module's folder). */
export function hookEventScript(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', 'cli', 'hook-event.js');
}

/**
 * The command a hook runs: the hook-event script run directly by this node (fast: no zod, no config),
 * with the hooks folder baked in. The trailing shell comment carries the marker, so remove can tell ours.
 */
export function hookCommand(dir: string, o: { node?: string; script?: string } = {}): string {
  return `${shq(o.node ?? process.execPath)} ${shq(o.script ?? hookEventScript())} --dir ${shq(dir)} # ${HOOK_MARKER}`;
}

export function isSunsetHook(h: unknown): boolean {
  return !!h && typeof h === 'object' && typeof (h as HookCommand).command === 'string' && (h as HookCommand).command.includes(HOOK_MARKER);
}

function checkShape(s: unknown): asserts s is Settings {
  if (!s || typeof s !== 'object' || Array.isArray(s)) throw new SettingsError('the settings file does not hold one JSON object');
  const hooks = (s as Settings).hooks;
  if (hooks === undefined) return;
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks))
    throw new SettingsError('"hooks" in the settings file is not an object; left untouched');
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) throw new SettingsError(`"hooks.${event}" in the settings file is not an array; left untouched`);
    groups.forEach((g, i) => {
      if (!g || typeof g !== 'object' || !Array.isArray((g as MatcherGroup).hooks))
        throw new SettingsError(`"hooks.${event}[${i}]" has no "hooks" array; left untouched`);
    });
  }
}

/**
 * Settings without sunset's hooks. Pure. A matcher group that held only sunset's hooks goes; a group
 * that also holds a person's hooks keeps them. An event (and `hooks`) emptied by the removal goes too;
 * one that was empty before stays as it was.
 */
export function removeSunsetHooks(settings: Settings): { settings: Settings; removed: number } {
  checkShape(settings);
  if (!settings.hooks) return { settings, removed: 0 };
  let removed = 0;
  const hooks: Record<string, MatcherGroup[]> = {};
  for (const [event, groups] of Object.entries(settings.hooks)) {
    const kept: MatcherGroup[] = [];
    let touched = false;
    for (const g of groups) {
      const mine = g.hooks.filter(isSunsetHook).length;
      if (!mine) {
        kept.push(g);
        continue;
      }
      removed += mine;
      touched = true;
      const rest = g.hooks.filter((h) => !isSunsetHook(h));
      if (rest.length) kept.push({ ...g, hooks: rest });
    }
    if (kept.length || !touched) hooks[event] = kept;
  }
  const out: Settings = { ...settings, hooks };
  if (removed && !Object.keys(hooks).length) delete out.hooks;
  return { settings: removed ? out : settings, removed };
}

/** Settings with sunset's hooks (any older ones of ours replaced). Pure; a person's hooks are kept as they are. */
export function addSunsetHooks(settings: Settings, command: string): Settings {
  const base = removeSunsetHooks(settings).settings;
  const hooks: Record<string, MatcherGroup[]> = { ...(base.hooks ?? {}) };
  for (const { event, matcher } of INSTALLED) {
    hooks[event] = [...(hooks[event] ?? []), { matcher, hooks: [{ type: 'command', command, timeout: HOOK_TIMEOUT_S }] }];
  }
  return { ...base, hooks };
}

/** The sunset hooks a settings object holds, as `Event[matcher]` names. */
export function installedSunsetHooks(settings: Settings): string[] {
  const out: string[] = [];
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups)
      if (Array.isArray(g?.hooks) && g.hooks.some(isSunsetHook)) out.push(g.matcher ? `${event}[${g.matcher}]` : event);
  }
  return out;
}

export interface EditResult {
  file: string;
  changed: boolean;
  /** The backup written before the change (null: nothing to back up, or nothing changed). */
  backup: string | null;
  /** sunset hooks in the file afterwards. */
  hooks: string[];
  removed: number;
  /** The whole new text (for --dry-run). */
  text: string;
}

function readSettings(file: string): { text: string | null; settings: Settings } {
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw new SettingsError(`${file} cannot be read: ${errorCode(err) ?? errorMessage(err)}`);
  }
  if (text === null || !text.trim()) return { text, settings: {} };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new SettingsError(`${file} is not valid JSON (${errorMessage(err)}); left untouched`);
  }
  checkShape(v);
  return { text, settings: v };
}

/** 2020-01-02T03:04:05.678Z → 20200102T030405678Z: sortable, no characters a shell or a path would misread. */
const stamp = (now: number) => new Date(now).toISOString().replace(/[-:.]/g, '');

/**
 * Apply `edit` to the settings file: read, edit, back up, write atomically (temp + rename in the same
 * folder, the file's mode kept). If the file changed meanwhile (Claude Code writes it too), start over,
 * a few times. Nothing is written when nothing changes, or on a dry run.
 */
export function editSettings(
  file: string,
  edit: (s: Settings) => { settings: Settings; removed: number },
  o: { dryRun?: boolean; now?: () => number } = {},
): EditResult {
  const now = o.now ?? Date.now;
  for (let attempt = 0; ; attempt++) {
    const { text, settings } = readSettings(file);
    const { settings: next, removed } = edit(settings);
    const indent = text ? (/^[ \t]*\{\s*\n([ \t]+)"/.exec(text)?.[1] ?? '  ') : '  ';
    const out = `${JSON.stringify(next, null, indent)}\n`;
    const same = JSON.stringify(settings) === JSON.stringify(next);
    const result: EditResult = { file, changed: !same, backup: null, hooks: installedSunsetHooks(next), removed, text: out };
    if (same || o.dryRun) return result;
    mkdirSync(dirname(file), { recursive: true });
    let mode: number | undefined;
    if (text !== null) {
      try {
        mode = statSync(file).mode & 0o777;
      } catch {
        mode = undefined;
      }
    }
    const staged = stageFileSync(file, out, mode !== undefined ? { mode } : {});
    // Re-read just before the rename: someone else's write since our read means start over.
    let current: string | null = null;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = null;
    }
    if (current !== text) {
      staged.discard();
      if (attempt < 3) continue;
      throw new SettingsError(`${file} kept changing while sunset edited it; try again`);
    }
    if (text !== null) result.backup = backUp(file, stamp(now()));
    staged.commit();
    return result;
  }
}

/** Copy the file to FILE.sunset-backup-<stamp> (then -1, -2, … beside an existing one): a backup is never overwritten. */
function backUp(file: string, at: string): string {
  for (let n = 0; ; n++) {
    const name = `${file}.sunset-backup-${at}${n ? `-${n}` : ''}`;
    try {
      copyFileSync(file, name, fsConstants.COPYFILE_EXCL);
      return name;
    } catch (err) {
      if (errorCode(err) !== 'EEXIST' || n >= 100) throw err;
    }
  }
}

export function installHooks(file: string, command: string, o: { dryRun?: boolean; now?: () => number } = {}): EditResult {
  return editSettings(file, (s) => ({ settings: addSunsetHooks(s, command), removed: 0 }), o);
}

export function removeHooks(file: string, o: { dryRun?: boolean; now?: () => number } = {}): EditResult {
  return editSettings(file, removeSunsetHooks, o);
}
