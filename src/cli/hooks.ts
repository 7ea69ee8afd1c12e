// `sunset hooks install | remove | status`: sunset's Claude Code hooks in a settings file (docs/hooks.md).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  hookCommand,
  hookEventScript,
  hooksDir,
  installHooks,
  removeHooks,
  installedSunsetHooks,
  hookFacts,
  SettingsError,
  HOOK_MARKER,
  type EditResult,
} from '../evidence/hooks.js';
import { listHookFiles, type HookState } from '../evidence/hook-events.js';
import { formatDuration } from '../duration.js';
import { EXIT, UsageError, config, type Command } from './common.js';
import { errorCode, errorMessage } from '../errors.js';

const USAGE = `usage: sunset hooks install [--dry-run] [--settings FILE] [--config FILE]
       sunset hooks remove  [--dry-run] [--settings FILE] [--config FILE]
       sunset hooks status  [--settings FILE] [--json] [--config FILE]

install  adds sunset's command hooks to a Claude Code settings file (default <fleet.claudeDir>/settings.json,
         ~/.claude/settings.json unless the config says otherwise):
         UserPromptSubmit and PreToolUse (busy), Stop (turn over), Notification permission_prompt
         (waiting) and idle_prompt (idle), SessionEnd. Each runs \`hook-event\`, which keeps the session's
         latest state in hooks.dir (default <stateDir>/hooks); fresh state joins the verdict (hook-busy,
         hook-waiting, hook-disagrees, hook-background-tasks). A person's own hooks are kept; the file is
         backed up first (FILE.sunset-backup-<time>). Running it again replaces sunset's hooks only.
remove   takes out sunset's hooks (commands holding "${HOOK_MARKER}") and nothing else, with a backup.
status   which sunset hooks the file holds, and what the hooks folder holds.

Claude Code reads hooks when a session starts: sessions already running pick them up when they restart.

Exit codes: 0 = done (or nothing to do), 1 = the settings file cannot be read or is not what it should be
(it is left untouched), 2 = bad usage or config.`;

export const hooksCommand: Command = {
  name: 'hooks',
  summary: "install or remove sunset's Claude Code hooks (evidence for the verdict)",
  usage: USAGE,
  options: { 'dry-run': { type: 'boolean' }, settings: { type: 'string' }, json: { type: 'boolean' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const [action, ...extra] = positionals;
    if (!action || extra.length || !['install', 'remove', 'status'].includes(action))
      throw new UsageError(`hooks takes one of install, remove, status\n\n${USAGE}`);
    const cfg = config(values, io);
    // the settings file of the Claude Code sunset watches: fleet.claudeDir's, else ~/.claude's
    const file = values.settings
      ? resolve(io.cwd, values.settings)
      : join(cfg.fleet.claudeDir ?? join(homedir(), '.claude'), 'settings.json');
    const dir = hooksDir(cfg);
    const dryRun = Boolean(values['dry-run']);
    try {
      if (action === 'status') return status(file, dir, cfg.hooks.freshFor, Boolean(values.json), io);
      if (action === 'install') {
        const script = hookEventScript();
        if (!existsSync(script)) {
          io.err(`sunset hooks: ${script} is missing: build sunset first (npm run build)`);
          return EXIT.failure;
        }
        const command = hookCommand(dir);
        const r = installHooks(file, command, { dryRun });
        io.out(describe(r, 'install', dryRun));
        if (r.changed || dryRun)
          io.out(`  each runs: ${command}\n  hook evidence: ${dir} (counts for ${formatDuration(cfg.hooks.freshFor)} after each event)`);
        if (r.changed && !dryRun) io.out('Claude Code reads hooks when a session starts: running sessions pick them up when they restart.');
        return EXIT.ok;
      }
      const r = removeHooks(file, { dryRun });
      io.out(describe(r, 'remove', dryRun));
      return EXIT.ok;
    } catch (err) {
      if (err instanceof SettingsError) {
        io.err(`sunset hooks: ${err.message}`);
        return EXIT.failure;
      }
      throw err;
    }
  },
};

function describe(r: EditResult, action: 'install' | 'remove', dryRun: boolean): string {
  const lines: string[] = [];
  if (!r.changed)
    lines.push(
      action === 'install'
        ? `sunset's hooks are already installed in ${r.file}: nothing to do`
        : `${r.file} holds no sunset hooks: nothing to do`,
    );
  else if (dryRun) {
    lines.push(
      `dry run: would ${action === 'install' ? `install ${r.hooks.length} hooks in` : `remove ${r.removed} hooks from`} ${r.file}; nothing written. The file would read:`,
    );
    lines.push(r.text.trimEnd());
  } else if (action === 'install') lines.push(`installed ${r.hooks.length} hooks in ${r.file}: ${r.hooks.join(', ')}`);
  else lines.push(`removed ${r.removed} sunset hooks from ${r.file}; every other hook is kept`);
  if (r.backup) lines.push(`  backup: ${r.backup}`);
  return lines.join('\n');
}

function status(file: string, dir: string, freshFor: number, json: boolean, io: { out: (s: string) => void }): number {
  let installed: string[] = [];
  let settingsError: string | null = null;
  try {
    installed = installedSunsetHooks(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    settingsError = errorCode(err) === 'ENOENT' ? 'missing' : String(errorMessage(err) ?? err);
  }
  const names = listHookFiles(dir);
  const now = Date.now();
  const states: Record<string, number> = {};
  let fresh = 0;
  for (const n of names ?? []) {
    let st: HookState | null = null;
    try {
      st = JSON.parse(readFileSync(join(dir, n), 'utf8')) as HookState;
    } catch {
      st = null;
    }
    const f = hookFacts(st, now, freshFor);
    if (!f?.fresh) continue;
    fresh++;
    states[f.state] = (states[f.state] ?? 0) + 1;
  }
  let lastError: string | null = null;
  try {
    lastError = readFileSync(join(dir, '.last-error'), 'utf8').trim();
  } catch {
    lastError = null;
  }
  const out = {
    settings: file,
    settingsError,
    installed,
    dir,
    sessions: names?.size ?? 0,
    fresh,
    freshStates: states,
    freshFor,
    lastError,
  };
  if (json) io.out(JSON.stringify(out, null, 2));
  else {
    io.out(`settings: ${file}${settingsError ? ` (${settingsError})` : ''}`);
    io.out(`  sunset hooks: ${installed.length ? installed.join(', ') : 'none installed'}`);
    io.out(`hook evidence: ${dir}${names ? '' : ' (no folder yet)'}`);
    io.out(
      `  sessions that have reported: ${out.sessions}; within ${formatDuration(freshFor)}: ${fresh}${
        fresh
          ? ` (${Object.entries(states)
              .map(([s, n]) => `${n} ${s}`)
              .join(', ')})`
          : ''
      }`,
    );
    if (lastError) io.out(`  last hook-event error: ${lastError}`);
  }
  return EXIT.ok;
}
