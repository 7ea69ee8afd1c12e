#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 --optimize-for-size --max-opt=1 --expose-gc
// sunset's command line: one verb per file in src/cli/.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, parse, isConfigError, closedPipeSafe, type Command, type Io } from './cli/common.js';
/** Each verb's module is loaded only when it runs: `sunset verdict` never loads BullMQ. */
export const COMMANDS: Array<{ name: string; summary: string; load: () => Promise<Command> }> = [
  { name: 'up', summary: 'run the supervisor: producers, workers and the web (or some of them)', load: async () => (await import('./cli/up.js')).upCommand },
  { name: 'verdict', summary: 'may this session leave now? (read-only)', load: async () => (await import('./cli/verdict.js')).verdictCommand },
  { name: 'exit', summary: "a person's exit request for one session, on the same rate-limited path", load: async () => (await import('./cli/exit.js')).exitCommand },
  { name: 'report', summary: 'what the fleet holds: rows, tasks, memory by lane, lanes awaiting a human', load: async () => (await import('./cli/report.js')).reportCommand },
  { name: 'alarms', summary: 'open alarms for a person (session-will-not-exit, cap-reached); ack ID closes one', load: async () => (await import('./cli/alarms.js')).alarmsCommand },
  { name: 'expire', summary: 'run one expire scan now (untasked sessions idle past expireIdle)', load: async () => (await import('./cli/expire.js')).expireCommand },
  { name: 'cap', summary: 'live sessions against the ceiling, and who is on the way out', load: async () => (await import('./cli/cap.js')).capCommand },
  { name: 'admit', summary: 'start a command only under the ceiling (-- command…)', load: async () => (await import('./cli/admit.js')).admitCommand },
  { name: 'reap', summary: 'remove tmux sessions whose every pane has long been dead', load: async () => (await import('./cli/reap.js')).reapCommand },
  { name: 'hooks', summary: "install or remove sunset's Claude Code hooks (evidence for the verdict)", load: async () => (await import('./cli/hooks.js')).hooksCommand },
  { name: 'hook-event', summary: 'record one Claude Code hook event from stdin (what the installed hooks run)', load: async () => (await import('./cli/hook-event.js')).hookEventCommand },
  { name: 'samples', summary: 'what the fleet sampler recorded: live sessions, memory by lane, 48 h idleness', load: async () => (await import('./cli/samples.js')).samplesCommand },
  { name: 'exited', summary: 'the resume ledger: sessions sunset exited or gave up on', load: async () => (await import('./cli/exited.js')).exitedCommand },
  { name: 'resume', summary: 'bring back a conversation sunset exited (through the cap)', load: async () => (await import('./cli/resume.js')).resumeCommand },
  { name: 'service', summary: 'print a systemd user unit that runs `sunset up` with this machine’s paths', load: async () => (await import('./cli/service.js')).serviceCommand },
  { name: 'demo', summary: 'watch sunset work on a simulated fleet (ends by itself in about a minute)', load: async () => (await import('./cli/demo.js')).demoCommand },
];

function help(): string {
  return `sunset — lets finished agent sessions leave by their own exit path, never by a signal

usage: sunset <command> [options]   (sunset <command> --help for more)

${COMMANDS.map((c) => `  ${c.name.padEnd(9)} ${c.summary}`).join('\n')}

Global options: --config FILE (else $SUNSET_CONFIG, else ./sunset.config.json, else defaults)
Exit codes: 0 done, 1 failure, 2 bad usage or input, 3 refused because protected, 75 cap reached.`;
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

export async function main(argv: string[], io: Io): Promise<number> {
  const [verb, ...rest] = argv;
  if (!verb || verb === '--help' || verb === '-h' || verb === 'help') {
    io.out(help());
    return verb ? EXIT.ok : EXIT.usage;
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
  } catch (err: any) {
    // usage, config and web-config errors carry exitCode 2: bad input, said plainly
    if (err instanceof UsageError || isConfigError(err) || err?.exitCode === EXIT.usage) {
      io.err(`sunset ${verb}: ${err.message}`);
      return EXIT.usage;
    }
    io.err(`sunset ${verb}: ${err?.stack ?? err}`);
    return EXIT.failure;
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
