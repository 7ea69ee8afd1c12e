#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 --optimize-for-size --max-opt=1 --expose-gc
// sunset's command line: one verb per file in src/cli/.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, parse, sayFailure, closedPipeSafe, type Command, type Io } from './cli/common.js';
import { versionCommand } from './cli/version.js';
import { errorMessage } from './errors.js';
/** Each verb's module is loaded only when it runs: `sunset verdict` never loads BullMQ. */
export const COMMANDS: Array<{ name: string; summary: string; load: () => Promise<Command> }> = [
  {
    name: 'up',
    summary: 'run the supervisor: producers, workers and the web (or some of them)',
    load: async () => (await import('./cli/up.js')).upCommand,
  },
  {
    name: 'verdict',
    summary: 'may this session leave now? (read-only)',
    load: async () => (await import('./cli/verdict.js')).verdictCommand,
  },
  {
    name: 'exit',
    summary: "a person's exit request for one session, on the same rate-limited path",
    load: async () => (await import('./cli/exit.js')).exitCommand,
  },
  {
    name: 'report',
    summary: 'what the fleet holds: rows, tasks, memory by lane, lanes awaiting a human',
    load: async () => (await import('./cli/report.js')).reportCommand,
  },
  {
    name: 'alarms',
    summary:
      'open alarms for a person (session-will-not-exit, cap-reached, claude-code-unreadable); ack ID closes one; test tries each channel',
    load: async () => (await import('./cli/alarms.js')).alarmsCommand,
  },
  {
    name: 'expire',
    summary: 'run one expire scan now (untasked sessions idle past expireIdle)',
    load: async () => (await import('./cli/expire.js')).expireCommand,
  },
  {
    name: 'cap',
    summary: 'live sessions against the ceiling, and who is on the way out',
    load: async () => (await import('./cli/cap.js')).capCommand,
  },
  {
    name: 'admit',
    summary: 'start a command only under the ceiling (-- command…)',
    load: async () => (await import('./cli/admit.js')).admitCommand,
  },
  {
    name: 'reap',
    summary: 'remove tmux sessions whose every pane has long been dead',
    load: async () => (await import('./cli/reap.js')).reapCommand,
  },
  {
    name: 'hooks',
    summary: "install or remove sunset's Claude Code hooks (evidence for the verdict)",
    load: async () => (await import('./cli/hooks.js')).hooksCommand,
  },
  {
    name: 'hook-event',
    summary: 'record one Claude Code hook event from stdin (what the installed hooks run)',
    load: async () => (await import('./cli/hook-event.js')).hookEventCommand,
  },
  {
    name: 'samples',
    summary: 'what the fleet sampler recorded: live sessions, memory by lane, 48 h idleness',
    load: async () => (await import('./cli/samples.js')).samplesCommand,
  },
  {
    name: 'exited',
    summary: 'the resume ledger: sessions sunset exited or gave up on',
    load: async () => (await import('./cli/exited.js')).exitedCommand,
  },
  {
    name: 'resume',
    summary: 'bring back a conversation sunset exited (through the cap)',
    load: async () => (await import('./cli/resume.js')).resumeCommand,
  },
  {
    name: 'service',
    summary: 'print a systemd user unit that runs `sunset up` with this machine’s paths',
    load: async () => (await import('./cli/service.js')).serviceCommand,
  },
  {
    name: 'doctor',
    summary: 'check the setup: Redis, tmux, claude, its files, tasks, hooks, alarms, service, memory',
    load: async () => (await import('./cli/doctor.js')).doctorCommand,
  },
  {
    name: 'demo',
    summary: 'watch sunset work on a simulated fleet (ends by itself in about a minute)',
    load: async () => (await import('./cli/demo.js')).demoCommand,
  },
];

/** The exit codes every verb shares (README, docs/cap-and-expire.md, each verb's --help for its own). */
export const EXIT_CODES: Array<[string, string]> = [
  ['0', 'done (verdict: the session may leave)'],
  ['1', 'failure'],
  ['2', 'bad usage or input'],
  ['3', 'refused because protected (verdict, exit)'],
  ['75', 'cap or memory floor reached (admit, resume)'],
  ['130, 143', 'stopped by Ctrl-C, by kill PID (demo; admit before its command starts)'],
];

/** Rows as aligned columns: each first cell padded to the widest. */
function columns(rows: Array<[string, string]>, indent = '  '): string {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `${indent}${a.padEnd(w)}   ${b}`).join('\n');
}

export function help(): string {
  return `sunset — lets finished agent sessions leave by their own exit path, never by a signal

usage: sunset [--config FILE] <command> [options]   (sunset <command> --help for more)

Commands:
${columns(COMMANDS.map((c) => [c.name, c.summary]))}

Global options (before or after the command):
${columns([
  ['--config FILE', 'the config file (else $SUNSET_CONFIG, else ./sunset.config.json, else defaults)'],
  ['--version, -V', 'the version; with --verbose, where it is installed and the node that runs it'],
  ['--help, -h', 'this; sunset <command> --help for one command'],
])}

Exit codes:
${columns(EXIT_CODES)}`;
}

/** Levenshtein distance: how many one-letter edits turn a into b. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The verb nearest a mistyped one (by edit distance, or one that starts with it), when it is near enough to be meant. */
export function nearestVerb(typed: string): string | null {
  const t = typed.toLowerCase();
  const prefixed = COMMANDS.filter((c) => c.name.startsWith(t) && t.length >= 2);
  if (prefixed.length === 1) return prefixed[0].name;
  let best: { name: string; d: number } | null = null;
  for (const c of COMMANDS) {
    const d = editDistance(t, c.name);
    if (!best || d < best.d) best = { name: c.name, d };
  }
  // near enough: at most a third of the verb's letters wrong (one edit for short verbs)
  return best && best.d <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : null;
}

/**
 * The global options given before the command (`sunset --config FILE verdict`), moved after it, where each command
 * reads them; `--help` / `--version` as the command need none. Throws UsageError for a --config with no file.
 */
export function globalsAfterVerb(argv: readonly string[]): string[] {
  const lead: string[] = [];
  let i = 0;
  for (;;) {
    const a = argv[i];
    if (a === '--config') {
      const file = argv[i + 1];
      if (file === undefined || file === '--') throw new UsageError('--config takes a file: sunset --config FILE <command>');
      lead.push(a, file);
      i += 2;
    } else if (a?.startsWith('--config=')) {
      lead.push(a);
      i += 1;
    } else break;
  }
  if (!lead.length) return [...argv];
  const [verb, ...rest] = argv.slice(i);
  if (verb === undefined) throw new UsageError('no command after --config FILE: sunset --config FILE <command>');
  if (['--help', '-h', 'help', '--version', '-V'].includes(verb)) return [verb, ...rest];
  return [verb, ...lead, ...rest];
}

export async function main(argv: string[], io: Io): Promise<number> {
  try {
    argv = globalsAfterVerb(argv);
  } catch (err) {
    io.err(`sunset: ${errorMessage(err)}\n\n${help()}`);
    return EXIT.usage;
  }
  const [verb, ...rest] = argv;
  if (!verb || verb === '--help' || verb === '-h' || verb === 'help') {
    io.out(help());
    return verb ? EXIT.ok : EXIT.usage;
  }
  if (verb === '--version' || verb === '-V') {
    try {
      io.out(
        await versionCommand(rest, { execPath: process.execPath, nodeVersion: process.version, execArgv: process.execArgv, env: io.env }),
      );
      return EXIT.ok;
    } catch (err) {
      io.err(`sunset: ${errorMessage(err)}`);
      return err instanceof UsageError ? EXIT.usage : EXIT.failure;
    }
  }
  const entry = COMMANDS.find((c) => c.name === verb);
  if (!entry) {
    const near = nearestVerb(verb);
    io.err(`sunset: unknown command "${verb}"${near ? ` — did you mean "${near}"?` : ''}\n\n${help()}`);
    return EXIT.usage;
  }
  try {
    const cmd = await entry.load();
    const args = parse(cmd, rest);
    if (args.values.help) {
      io.out(cmd.usage);
      return EXIT.ok;
    }
    return await cmd.run(args, io);
  } catch (err) {
    return sayFailure(verb, err, io);
  }
}

const self = fileURLToPath(import.meta.url);
const invoked = process.argv[1] ? realpathSync(process.argv[1]) : '';
if (invoked === self) {
  // output to a closed pipe (`sunset verdict | head -1`) ends quietly: see closedPipeSafe
  const io: Io = {
    ...closedPipeSafe(process.stdout, process.stderr),
    env: process.env,
    cwd: process.cwd(),
  };
  main(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}
