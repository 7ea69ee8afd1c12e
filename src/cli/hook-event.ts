// `sunset hook-event --dir DIR`: what every installed Claude Code hook runs. It reads the hook's JSON on
// stdin and records the session's latest state in DIR. It must be fast and must never fail the hook:
// it always exits 0, prints nothing (a UserPromptSubmit hook's stdout would join the prompt), uses no
// network and no Redis, and loads node:fs and node:path only. The installed hooks run this file directly
// (`node …/dist/src/cli/hook-event.js`), not through cli.js, which loads zod and the config (about half a
// second more per hook on a slow box); `sunset hook-event` is the same code for a person to try.
import { readFileSync, realpathSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { recordHookEvent } from '../evidence/hook-events.js';
import type { Command } from './common.js';

const MAX_STDIN = 64 * 1024 * 1024;

/** Read stdin whole (fd 0); '' when there is none. */
function readStdin(): string {
  try {
    const buf = readFileSync(0);
    return buf.length > MAX_STDIN ? buf.subarray(0, MAX_STDIN).toString('utf8') : buf.toString('utf8');
  } catch {
    return '';
  }
}

/** The folder from argv: `--dir DIR` or `--dir=DIR`; anything else is ignored (a hook must not fail on usage). */
export function dirFromArgv(argv: string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--dir' && argv[i + 1]) return argv[i + 1];
    if (a.startsWith('--dir=') && a.length > 6) return a.slice(6);
  }
  return null;
}

/** Record one event; swallow every error (the last one is kept in DIR/.last-error for a person). */
export function hookEventMain(argv: string[], stdin: () => string = readStdin): 0 {
  const dir = dirFromArgv(argv);
  if (!dir) return 0;
  try {
    recordHookEvent(dir, stdin());
  } catch (err) {
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, '.last-error'), `${new Date().toISOString()} ${String((err as Error)?.message ?? err)}\n`);
    } catch {
      /* nowhere to say it: stay silent */
    }
  }
  return 0;
}

export const hookEventCommand: Command = {
  name: 'hook-event',
  summary: 'record one Claude Code hook event from stdin (what the installed hooks run)',
  usage: `usage: sunset hook-event --dir DIR < hook-input.json

Reads one Claude Code hook input (JSON on stdin: session_id, hook_event_name, …) and records the
session's latest state in DIR/<session>.json. Always exits 0 and prints nothing: a hook must never
fail because of sunset. The hooks that \`sunset hooks install\` writes run this command's file directly.`,
  options: { dir: { type: 'string' } },
  allowPositionals: true,
  async run({ values }) {
    return hookEventMain(values.dir ? ['--dir', values.dir] : []);
  },
};

// Run directly by a hook: `node …/hook-event.js --dir DIR`.
let invoked = '';
try {
  invoked = process.argv[1] ? realpathSync(process.argv[1]) : '';
} catch {
  invoked = '';
}
if (invoked && invoked === import.meta.filename) {
  process.exitCode = hookEventMain(process.argv.slice(2));
}
