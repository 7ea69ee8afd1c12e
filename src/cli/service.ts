// `sunset service print`: a systemd user unit for `sunset up`, with this machine's paths filled in — node's
// own executable, this compiled cli, the config file (validated first) — ready for
// ~/.config/systemd/user/sunset.service. docs/operations.md explains each line.
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config.js';
import { EXIT, UsageError, type Command } from './common.js';

export interface UnitInput {
  node: string;
  cli: string;
  /** The config file, absolute; null runs on the defaults (and ./sunset.config.json is not looked for). */
  configFile: string | null;
  workingDirectory: string;
  path: string | undefined;
  /** $REDIS_URL as sunset was run with it: it overrides redisUrl, so the unit keeps it. */
  redisUrl?: string;
  /** Seconds systemd waits for a clean stop: an exit job in flight may be confirming for exitConfirm. */
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
  const exec = [u.node, u.cli, 'up', ...(u.configFile ? ['--config', u.configFile] : [])].map((w) => systemdWord(w)).join(' ');
  return `# sunset — lets finished agent sessions leave by their own exit path (docs/operations.md)
# Install:  sunset service print --config FILE > ~/.config/systemd/user/sunset.service
#           systemctl --user daemon-reload && systemctl --user enable --now sunset
#           loginctl enable-linger "$USER"    # keep it running while you are logged out
[Unit]
Description=${u.description ?? 'sunset: finished Claude Code sessions leave by their own exit path'}
Documentation=file://${resolve(u.cli, '..', '..', '..', 'docs', 'operations.md')}
After=network-online.target redis-server.service
Wants=network-online.target

[Service]
Type=simple
ExecStart=${exec}
WorkingDirectory=${u.workingDirectory.replace(/%/g, '%%')}
${u.path ? `Environment=${systemdWord(`PATH=${u.path}`, { exec: false })}\n` : ''}${u.redisUrl ? `Environment=${systemdWord(`REDIS_URL=${u.redisUrl}`, { exec: false })}\n` : ''}Environment=NODE_ENV=production
Restart=on-failure
RestartSec=5
# Only sunset's own main process gets systemd's stop signal; it closes its workers, queues and Redis and
# exits. "process", not the default control-group: should a claude CLI that sunset runs ever leave a
# helper behind in this unit's cgroup, stopping sunset must not end it, nor any session it serves.
KillMode=process
TimeoutStopSec=${u.stopTimeoutS}
# Logs are JSON lines: journalctl --user -u sunset -o cat | npx pino-pretty
StandardError=journal

[Install]
WantedBy=default.target
`;
}

export const serviceCommand: Command = {
  name: 'service',
  summary: 'print a systemd user unit that runs `sunset up` with this machine’s paths',
  usage: `usage: sunset service print [--config FILE]

Prints a systemd user unit for \`sunset up\`: node's executable (${process.execPath}), this
compiled cli, and the config file (--config, else $SUNSET_CONFIG, else ./sunset.config.json when
present, else the defaults), validated first. Your PATH is written into the unit so that
\`claude\` and \`tmux\` resolve as they do for you. Install it with:

  sunset service print --config ~/.config/sunset/sunset.config.json > ~/.config/systemd/user/sunset.service
  systemctl --user daemon-reload && systemctl --user enable --now sunset

Exit codes: 0 printed, 2 bad usage or config.`,
  options: {},
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1 || positionals[0] !== 'print') throw new UsageError(`service takes one action: print\n\n${this.usage}`);
    const named = values.config ?? io.env.SUNSET_CONFIG;
    const implicit = resolve(io.cwd, 'sunset.config.json');
    const configFile = named ? resolve(io.cwd, named) : existsSync(implicit) ? implicit : null;
    const cfg = loadConfig({ file: configFile ?? undefined, cwd: io.cwd, env: { ...io.env, SUNSET_CONFIG: undefined } });
    const cli = realpathSync(fileURLToPath(new URL('../cli.js', import.meta.url)));
    const stopTimeoutS = Math.ceil((cfg.windows.exitConfirm + 2 * cfg.probeTimeout) / 1000) + 30;
    io.out(systemdUnit({ node: process.execPath, cli, configFile, workingDirectory: configFile ? resolve(configFile, '..') : io.cwd, path: io.env.PATH, redisUrl: io.env.REDIS_URL, stopTimeoutS }).trimEnd());
    if (!configFile) io.err('sunset service: no config file given or found: the unit runs on the defaults (pass --config FILE to pin one)');
    return EXIT.ok;
  },
};
