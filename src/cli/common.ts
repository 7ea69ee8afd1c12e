// What every command shares: exit codes, argument parsing, config loading, output.
import { userInfo } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Writable } from 'node:stream';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createLogger, type Logger } from '../log.js';
import { errorCode, errorExitCode, errorMessage } from '../errors.js';

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

/**
 * `out` and `err` on the process's streams, safe on a closed pipe: `sunset verdict | head -1` closes stdout
 * after one line, and the next write fails with EPIPE — emitted on the stream, where no one listens, so it
 * was an uncaught stack trace and exit 1. Here a stream whose reader has gone is marked closed, every later
 * write to it is dropped, and the command runs to its end (its cleanup, its exit code) as it would have.
 */
export function closedPipeSafe(stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): Pick<Io, 'out' | 'err'> {
  const guard = (stream: NodeJS.WritableStream) => {
    let closed = false;
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err?.code === 'EPIPE' || err?.code === 'ERR_STREAM_DESTROYED' || closed) {
        closed = true;
        return;
      }
      throw err;
    });
    return (s: string) => {
      if (closed) return;
      try {
        stream.write(`${s}\n`);
      } catch (err) {
        if (errorCode(err) !== 'EPIPE' && errorCode(err) !== 'ERR_STREAM_DESTROYED') throw err;
        closed = true;
      }
    };
  };
  return { out: guard(stdout), err: guard(stderr) };
}

/** A verb's parsed options (parseArgs' values, typed by each verb's `options`, which one shared type cannot carry). */
// biome-ignore lint/suspicious/noExplicitAny: parseArgs types each verb's values by its own options; one Command type for every verb cannot
export type Values = Record<string, any>;

export interface Command {
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  allowPositionals?: boolean;
  /** What follows `--` is a command to run (admit), kept apart as `rest`; for every other verb it is more positionals. */
  takesCommand?: boolean;
  run(args: { values: Values; positionals: string[]; rest: string[] }, io: Io): Promise<number>;
}

export const GLOBAL_OPTIONS = {
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function parse(cmd: Command, argv: string[]) {
  const dd = argv.indexOf('--');
  const mine = dd >= 0 ? argv.slice(0, dd) : argv;
  const rest = dd >= 0 ? argv.slice(dd + 1) : [];
  let parsed: { values: Values; positionals: string[] };
  try {
    const { values, positionals } = parseArgs({
      args: mine,
      options: { ...GLOBAL_OPTIONS, ...cmd.options },
      allowPositionals: cmd.allowPositionals ?? false,
      strict: true,
    });
    parsed = { values: values as Values, positionals };
  } catch (err) {
    const msg = errorMessage(err)
      .replace(/^TypeError \[[A-Z_]+\]: /, '')
      .replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(`${msg}\n\n${cmd.usage}`);
  }
  if (cmd.takesCommand) return { ...parsed, rest };
  // `verdict -- -h`: after "--" an id that looks like an option is still an id, never a flag
  if (rest.length && !cmd.allowPositionals)
    throw new UsageError(`takes no arguments (found ${JSON.stringify(rest.join(' '))} after "--")\n\n${cmd.usage}`);
  return { ...parsed, positionals: [...parsed.positionals, ...rest], rest: [] as string[] };
}

export function config(values: Values, io: Io): Config {
  return loadConfig({ file: values.config, cwd: io.cwd, env: io.env });
}

export function isConfigError(err: unknown): err is ConfigError {
  return err instanceof ConfigError;
}

/**
 * A verb's failure, said on stderr; its exit code. Usage, config and web-config errors (exitCode 2) and failures
 * written for a person (exitCode 1: no Redis to use, and why) are said as they are; anything else with its stack.
 */
export function sayFailure(verb: string, err: unknown, io: Pick<Io, 'err'>): number {
  if (err instanceof UsageError || isConfigError(err) || errorExitCode(err) === EXIT.usage) {
    io.err(`sunset ${verb}: ${errorMessage(err)}`);
    return EXIT.usage;
  }
  if (errorExitCode(err) === EXIT.failure) {
    io.err(`sunset ${verb}: ${errorMessage(err)}`);
    return EXIT.failure;
  }
  io.err(`sunset ${verb}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return EXIT.failure;
}

/** Who is typing: the login name, audited as the person behind an exit or an acknowledgement. */
export function personName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/**
 * A logger for a one-shot verb: what the pipeline logs at `level` and above reaches the person as a plain
 * sentence on stderr (`sunset expire: …`), never a raw JSON line; events the verb says itself are left out.
 */
export function plainLogger(io: Io, verb: string, o: { level?: string; said?: string[] } = {}): Logger {
  const said = new Set(o.said ?? []);
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) {
        if (!line.trim()) continue;
        let e: Record<string, unknown>;
        try {
          e = JSON.parse(line);
        } catch {
          io.err(`sunset ${verb}: ${line}`);
          continue;
        }
        if (typeof e.event === 'string' && said.has(e.event)) continue;
        const error = typeof e.error === 'string' && !String(e.msg ?? '').includes(e.error) ? `: ${e.error}` : '';
        io.err(`sunset ${verb}: ${e.msg ?? e.event ?? line}${error}`);
      }
      cb();
    },
  });
  return createLogger(o.level ?? 'warn', sink);
}
