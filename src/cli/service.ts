// `sunset service print`: a systemd user unit for `sunset up`, with this machine's paths filled in — node's
// own executable, this compiled cli, the config file (validated first), the directory it was run from —
// ready for ~/.config/systemd/user/sunset.service (--output writes it there only when all is well).
// docs/operations.md explains each line.
import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config.js';
import { EXIT, UsageError, type Command } from './common.js';
import { STOP_BOUND_MS } from '../stop-signals.js';
import { writeFileAtomicSync } from '../store/atomic-file.js';
import { packageInfo } from './version.js';
import { errorMessage } from '../errors.js';

/**
 * What the `sunset` command's shebang gives node (src/cli.ts line 1; test/service.test.ts holds the two together):
 * a small young generation (~15 MB less RSS), V8 favouring size over speed (~16 MB less at rest), no optimizing
 * compiler past Sparkplug (`--max-opt=1`: sunset's passes run minutes apart, and TurboFan compiled them anew each
 * time, deoptimized after the GCs between: ~17 MB less at rest and cheaper passes — docs/benchmarks.md), and `gc`
 * exposed, for one full GC once a big sweep is let go (src/heap.ts).
 */
export const NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=2', '--optimize-for-size', '--max-opt=1', '--expose-gc'];
/**
 * And the environment it starts node in (the shebang's `env -S` sets it; the unit, Environment=): glibc's malloc
 * keeps at most two arenas, not one per thread that ever allocated (node's thread pool, V8's workers). Each arena
 * holds freed memory it does not give back; at rest that was ~14 MB of sunset's RSS on the census fleet.
 */
export const NODE_ENV: readonly string[] = ['MALLOC_ARENA_MAX=2'];

export interface UnitInput {
  node: string;
  cli: string;
  /** The package the cli belongs to: a checkout, or where npm installed it (its docs/ ship with it). */
  root: string;
  /** Is pino-pretty there (a checkout's dev dependency)? An installed sunset has only its runtime ones. */
  prettyInstalled: boolean;
  /** The config file, absolute; null runs on the defaults (and ./sunset.config.json is not looked for). */
  configFile: string | null;
  /**
   * Where `service print` was run: relative paths in the config resolve from the working directory, so the
   * service must run where the person who checks it with `sunset verdict` does.
   */
  workingDirectory: string;
  path: string | undefined;
  /** $REDIS_URL as sunset was run with it: it overrides redisUrl, so the unit keeps it. */
  redisUrl?: string;
  /** Seconds systemd waits for a clean stop (sunset's own bound, STOP_BOUND_MS, and a margin). */
  stopTimeoutS: number;
  description?: string;
}

/**
 * One word for a unit file, quoted unless plain: `%` doubled (no specifier expands), and on a command line
 * `$` doubled too (no variable expands; Environment= values expand none, so there it stays single).
 */
export function systemdWord(w: string, o: { exec?: boolean } = { exec: true }): string {
  let escaped = w.replace(/%/g, '%%');
  if (o.exec !== false) escaped = escaped.replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The unit's text. Pure, for tests. */
export function systemdUnit(u: UnitInput): string {
  // the node options the `sunset` command runs with (its shebang, src/cli.ts): a small young generation
  const exec = [u.node, ...NODE_OPTIONS, u.cli, 'up', ...(u.configFile ? ['--config', u.configFile] : [])]
    .map((w) => systemdWord(w))
    .join(' ');
  return `# sunset — lets finished agent sessions leave by their own exit path (docs/operations.md)
# Install:  sunset service print --config FILE --output ~/.config/systemd/user/sunset.service
#           systemctl --user daemon-reload && systemctl --user enable --now sunset
#           loginctl enable-linger "$USER"    # keep it running while you are logged out
# A Redis the config names (redisUrl, or REDIS_URL below when set) need not be up first: a user unit cannot
# be ordered after a system service such as redis-server.service, and none is needed: sunset waits out a
# Redis that is not there yet, or goes away. With none named, sunset runs its own (docs/operations.md#redis).
[Unit]
Description=${u.description ?? 'sunset: finished Claude Code sessions leave by their own exit path'}
Documentation=file://${join(u.root, 'docs', 'operations.md')}

[Service]
Type=simple
ExecStart=${exec}
# where \`sunset service print\` was run: relative paths in the config resolve from here
WorkingDirectory=${u.workingDirectory.replace(/%/g, '%%')}
${NODE_ENV.map((e) => `Environment=${systemdWord(e, { exec: false })}\n`).join('')}${u.path ? `Environment=${systemdWord(`PATH=${u.path}`, { exec: false })}\n` : ''}${u.redisUrl ? `Environment=${systemdWord(`REDIS_URL=${u.redisUrl}`, { exec: false })}\n` : ''}Environment=NODE_ENV=production
Restart=on-failure
RestartSec=5
# Only sunset's own main process gets systemd's stop signal; it closes its workers, queues and Redis and
# exits. "process", not the default control-group: should a claude CLI that sunset runs ever leave a
# helper behind in this unit's cgroup, stopping sunset must not end it, nor any session it serves.
KillMode=process
# sunset stops within ${STOP_BOUND_MS / 1000} s of the stop signal, whatever Redis does; an exit job still confirming
# then is taken up by the next start (its call is in the exit ledger)
TimeoutStopSec=${u.stopTimeoutS}
# Logs are JSON lines: journalctl --user -u sunset -o cat | ${u.prettyInstalled ? `(cd ${u.root} && npx --no-install pino-pretty)` : 'npx --yes pino-pretty   # npx fetches it: not installed with sunset'}
StandardError=journal

[Install]
WantedBy=default.target
`;
}

/** Config keys holding a path that is resolved from the working directory when relative. */
const PATH_KEYS = ['stateDir', 'fleet.tasksDir', 'fleet.inboxDir', 'fleet.projectsDir', 'hooks.dir'];

/** The config's relative paths (neither absolute nor ~): they resolve from the working directory. */
function relativePaths(file: string): string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  return PATH_KEYS.filter((k) => {
    const v = k.split('.').reduce((o: unknown, p) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[p] : undefined), raw);
    return typeof v === 'string' && !isAbsolute(v) && !v.startsWith('~');
  });
}

/** mkdir -p, one level at a time (Node's recursive mkdir spins forever under /proc). */
function mkdirs(dir: string): void {
  if (existsSync(dir)) return;
  if (dirname(dir) !== dir) mkdirs(dirname(dir));
  mkdirSync(dir);
}

/** Write the whole file or nothing: a temp file beside it, renamed over it. */
function writeAtomically(file: string, text: string): void {
  mkdirs(dirname(file));
  writeFileAtomicSync(file, text, { mode: 0o600 }); // it may carry REDIS_URL with a password
}

export const serviceCommand: Command = {
  name: 'service',
  summary: 'print a systemd user unit that runs `sunset up` with this machine’s paths',
  usage: `usage: sunset service print [--config FILE] [--output FILE]

Prints a systemd user unit for \`sunset up\`: node's executable (${process.execPath}), this
compiled cli, and the config file (--config, else $SUNSET_CONFIG, else ./sunset.config.json when
present, else the defaults), validated first. Your PATH is written into the unit so that
\`claude\` and \`tmux\` resolve as they do for you, and so is $REDIS_URL when set (it overrides
the config's redisUrl).

WorkingDirectory= is the directory you run this from: relative paths in the config (stateDir,
fleet.tasksDir, …) resolve from the working directory, for the service as for \`sunset verdict\`.
Run \`sunset service print\` from the directory you run sunset commands from; better, use absolute
(or ~) paths in the config.

  --output FILE   write the unit to FILE (its folder created if need be) instead of stdout: whole,
                  through a temp file renamed over it, and only once the config is valid — a bad
                  config leaves FILE as it was

Install it with:

  sunset service print --config ~/.config/sunset/sunset.config.json --output ~/.config/systemd/user/sunset.service
  systemctl --user daemon-reload && systemctl --user enable --now sunset

Exit codes: 0 printed or written, 1 FILE could not be written, 2 bad usage or config.`,
  options: { output: { type: 'string', short: 'o' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1 || positionals[0] !== 'print') throw new UsageError(`service takes one action: print\n\n${this.usage}`);
    if (values.output !== undefined && !String(values.output).trim()) throw new UsageError(`--output takes a file\n\n${this.usage}`);
    const named = values.config ?? io.env.SUNSET_CONFIG;
    const implicit = resolve(io.cwd, 'sunset.config.json');
    const configFile = named ? resolve(io.cwd, named) : existsSync(implicit) ? implicit : null;
    // checked now, so a unit is never written for a config `sunset up` would refuse (exit 2, the key named)
    loadConfig({ file: configFile ?? undefined, cwd: io.cwd, env: { ...io.env, SUNSET_CONFIG: undefined } });
    const cli = realpathSync(fileURLToPath(new URL('../cli.js', import.meta.url)));
    // sunset stops within STOP_BOUND_MS of the signal whatever Redis does; systemd's SIGKILL after it is a margin never used
    const stopTimeoutS = STOP_BOUND_MS / 1000 + 20;
    const { root } = packageInfo();
    const prettyInstalled = existsSync(join(root, 'node_modules', 'pino-pretty', 'package.json'));
    const unit = systemdUnit({
      node: process.execPath,
      cli,
      root,
      prettyInstalled,
      configFile,
      workingDirectory: io.cwd,
      path: io.env.PATH,
      redisUrl: io.env.REDIS_URL,
      stopTimeoutS,
    }).trimEnd();
    if (values.output !== undefined) {
      const out = resolve(io.cwd, values.output);
      try {
        writeAtomically(out, `${unit}\n`);
      } catch (err) {
        io.err(`sunset service: cannot write ${out}: ${errorMessage(err)}`);
        return EXIT.failure;
      }
      io.err(`sunset service: wrote ${out}`);
    } else io.out(unit);
    if (!configFile) io.err('sunset service: no config file given or found: the unit runs on the defaults (pass --config FILE to pin one)');
    const rel = configFile ? relativePaths(configFile) : [];
    if (rel.length)
      io.err(
        `sunset service: ${rel.join(', ')} ${rel.length > 1 ? 'are relative paths: they resolve' : 'is a relative path: it resolves'} from ${io.cwd}, the unit's WorkingDirectory; absolute paths would not depend on it`,
      );
    if (io.env.REDIS_URL) io.err(`sunset service: REDIS_URL from your environment is written into the unit (it overrides redisUrl)`);
    return EXIT.ok;
  },
};
