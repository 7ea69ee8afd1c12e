// `sunset doctor [--json]`: checks what the setup needs, a line each, and what to fix (src/doctor/).
import { homedir } from 'node:os';
import { runChecks } from '../doctor/checks.js';
import { doctorExit, doctorJson, formatDoctor } from '../doctor/format.js';
import { config, type Command } from './common.js';

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'check the setup (Redis, tmux, claude, its files, tasks, hooks, alarms, service, memory)',
  usage: `usage: sunset doctor [--json] [--config FILE]

Checks what sunset needs and prints a line each — ok, warn (it works, with less) or FAIL (it
cannot do its work until fixed) — and what to do about it:
  redis         the Redis named (redisUrl, redisCluster, $REDIS_URL) answers; or sunset's private
                one does, or redis-server is there for \`sunset up\` to run it
  tmux          tmux runs, and its version is the version of the server the panes are on
  claude        fleet.claudeCommand runs, and its version against the ones sunset was tested with
  claude-files  fleet.claudeDir (~/.claude) and its jobs' state.json, pins and projects can be read
  tasks         fleet.tasksDir exists and can be read
  hooks         sunset's Claude Code hooks are installed (optional evidence)
  alarms        each alarm channel answers: an HTTP HEAD to each URL (nothing a person reads is
                sent; only its origin is printed), alarms.command's program is there (not run);
                \`sunset alarms test\` sends a real test alarm
  service       the systemd user unit is installed, and what it runs still exists
  memory        MemAvailable (meminfoPath) against memoryFloorMB
It reads only: nothing is started, written or signalled (the alarm probe's HEAD is the one request
it sends out). Each probe is bounded by probeTimeout.

  --json   one object: { ok, failures, warnings, checks: [{ name, status, says, fix }] }

Exit codes: 0 nothing to fix (warnings allowed), 1 something must be fixed (a FAIL line),
2 bad usage or config.`,
  options: { json: { type: 'boolean' } },
  async run({ values }, io) {
    const cfg = config(values, io);
    const findings = await runChecks({
      config: cfg,
      env: io.env,
      cwd: io.cwd,
      home: io.env.HOME || homedir(),
      timeoutMs: Math.min(cfg.probeTimeout, 10_000),
      ...(typeof values.config === 'string' ? { configFile: values.config } : {}),
    });
    io.out(values.json ? JSON.stringify(doctorJson(findings), null, 2) : formatDoctor(findings));
    return doctorExit(findings);
  },
};
