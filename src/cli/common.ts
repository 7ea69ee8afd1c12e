// What every command shares: exit codes, argument parsing, config loading, output.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';

export const EXIT = { ok: 0, failure: 1, usage: 2, protected: 3, capReached: 75 } as const;

export class UsageError extends Error {
  readonly exitCode = EXIT.usage;
}

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  allowPositionals?: boolean;
  /** What follows `--` is a command to run (admit), kept apart as `rest`; for every other verb it is more positionals. */
  takesCommand?: boolean;
  run(args: { values: Record<string, any>; positionals: string[]; rest: string[] }, io: Io): Promise<number>;
}

export const GLOBAL_OPTIONS = {
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function parse(cmd: Command, argv: string[]) {
  const dd = argv.indexOf('--');
  const mine = dd >= 0 ? argv.slice(0, dd) : argv;
  const rest = dd >= 0 ? argv.slice(dd + 1) : [];
  let parsed: { values: Record<string, any>; positionals: string[] };
  try {
    const { values, positionals } = parseArgs({
      args: mine,
      options: { ...GLOBAL_OPTIONS, ...cmd.options },
      allowPositionals: cmd.allowPositionals ?? false,
      strict: true,
    });
    parsed = { values: values as Record<string, any>, positionals };
  } catch (err: any) {
    const msg = String(err.message).replace(/^TypeError \[[A-Z_]+\]: /, '').replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(`${msg}\n\n${cmd.usage}`);
  }
  if (cmd.takesCommand) return { ...parsed, rest };
  // `verdict -- -h`: after "--" an id that looks like an option is still an id, never a flag
  if (rest.length && !cmd.allowPositionals) throw new UsageError(`takes no arguments (found ${JSON.stringify(rest.join(' '))} after "--")\n\n${cmd.usage}`);
  return { ...parsed, positionals: [...parsed.positionals, ...rest], rest: [] as string[] };
}

export function config(values: Record<string, any>, io: Io): Config {
  return loadConfig({ file: values.config, cwd: io.cwd, env: io.env });
}

export function isConfigError(err: unknown): err is ConfigError {
  return err instanceof ConfigError;
}
