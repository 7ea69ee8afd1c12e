#!/usr/bin/env node
// sunset's command line: one verb per file in src/cli/.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, parse, isConfigError, type Command, type Io } from './cli/common.js';
import { verdictCommand } from './cli/verdict.js';
import { reportCommand } from './cli/report.js';
import { upCommand } from './cli/up.js';
import { exitCommand } from './cli/exit.js';
import { alarmsCommand } from './cli/alarms.js';
import { expireCommand } from './cli/expire.js';
import { capCommand } from './cli/cap.js';
import { admitCommand } from './cli/admit.js';
import { reapCommand } from './cli/reap.js';
import { demoCommand } from './cli/demo.js';

export const COMMANDS: Command[] = [upCommand, verdictCommand, exitCommand, reportCommand, alarmsCommand, expireCommand, capCommand, admitCommand, reapCommand, demoCommand];

function help(): string {
  return `sunset — lets finished agent sessions leave by their own exit path, never by a signal

usage: sunset <command> [options]   (sunset <command> --help for more)

${COMMANDS.map((c) => `  ${c.name.padEnd(9)} ${c.summary}`).join('\n')}

Global options: --config FILE (else $SUNSET_CONFIG, else ./sunset.config.json, else defaults)
Exit codes: 0 done, 1 failure, 2 bad usage or input, 3 refused because protected, 75 cap reached.`;
}

export async function main(argv: string[], io: Io): Promise<number> {
  const [verb, ...rest] = argv;
  if (!verb || verb === '--help' || verb === '-h' || verb === 'help') {
    io.out(help());
    return verb ? EXIT.ok : EXIT.usage;
  }
  const cmd = COMMANDS.find((c) => c.name === verb);
  if (!cmd) {
    io.err(`sunset: unknown command "${verb}"\n\n${help()}`);
    return EXIT.usage;
  }
  try {
    const args = parse(cmd, rest);
    if (args.values.help) {
      io.out(cmd.usage);
      return EXIT.ok;
    }
    return await cmd.run(args, io);
  } catch (err: any) {
    if (err instanceof UsageError || isConfigError(err)) {
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
  const io: Io = {
    out: (s) => process.stdout.write(s + '\n'),
    err: (s) => process.stderr.write(s + '\n'),
    env: process.env,
    cwd: process.cwd(),
  };
  main(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}
