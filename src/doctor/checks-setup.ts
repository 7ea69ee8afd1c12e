// `sunset doctor`'s checks of what is set up around sunset: hooks, alarm channels, the service unit, memory.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorCode, errorMessage } from '../errors.js';
import { memAvailable } from '../evidence/meminfo.js';
import { INSTALLED, installedSunsetHooks } from '../evidence/hooks.js';
import { formatBytes } from '../report/report.js';
import { memoryFacts, memoryRoom } from '../cap/memory.js';
import { probeChannels } from '../alarms/channels/index.js';
import { type DoctorContext, type Finding, fail, ok, warn } from './finding.js';
import { whichFile } from '../which.js';

export function checkHooks({ config: c, home }: DoctorContext): Finding {
  const file = join(c.fleet.claudeDir ?? join(home, '.claude'), 'settings.json');
  const fix = 'optional evidence for the verdict: `sunset hooks install` (docs/hooks.md)';
  let installed: string[];
  try {
    installed = installedSunsetHooks(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    return warn(`sunset's hooks are not installed (${file}: ${errorCode(err) === 'ENOENT' ? 'no such file' : errorMessage(err)})`, fix);
  }
  if (installed.length >= INSTALLED.length) return ok(`sunset's ${installed.length} hooks are installed in ${file}`);
  if (!installed.length) return warn(`sunset's hooks are not installed in ${file}`, fix);
  return warn(
    `${installed.length} of sunset's ${INSTALLED.length} hooks are installed in ${file}`,
    'run `sunset hooks install` again to add the rest',
  );
}

export async function checkAlarms({ config: c, env, timeoutMs }: DoctorContext): Promise<Finding> {
  const probes = await probeChannels({ ...c, probeTimeout: timeoutMs }, env);
  if (!probes.length)
    return warn(
      'no alarm channel is configured: alarms wait in `sunset alarms` and the web until a person looks',
      'configure a channel: alarms.webhook, alarms.command or alarms.channels — docs/operations.md',
    );
  const bad = probes.filter((p) => !p.ok);
  // the failing channels first: a long line of them should not bury the one to fix
  const said = [...bad, ...probes.filter((p) => p.ok)]
    .map((p) => `${p.name === p.type ? p.name : `${p.name} (${p.type})`}: ${p.ok ? '' : 'FAILED '}${p.detail}`)
    .join('; ');
  const unset = bad.flatMap((p) => p.unsetEnv ?? []);
  const fix = unset.length
    ? `set ${unset.join(', ')} in sunset's environment (its unit's Environment= or EnvironmentFile=, or export it before \`sunset up\`)`
    : 'an alarm that cannot be delivered reaches nobody: fix the channel, or the network to it';
  return bad.length ? fail(said, fix) : ok(`${said} — \`sunset alarms test\` sends a test alarm through each, to check delivery`);
}

/** The words of a unit's ExecStart= line (quoted words unquoted). */
export function execStartWords(unit: string): string[] {
  const line = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]));
}

export function checkService({ env, home, configFile }: DoctorContext): Finding {
  const file = join(env.XDG_CONFIG_HOME || join(home, '.config'), 'systemd', 'user', 'sunset.service');
  const print = `sunset service print${configFile ? ` --config ${configFile}` : ''} --output ${file}`;
  let unit: string;
  try {
    unit = readFileSync(file, 'utf8');
  } catch {
    return warn(`no systemd user unit at ${file}`, `${print} && systemctl --user enable --now sunset (or run \`sunset up\` your own way)`);
  }
  const words = execStartWords(unit);
  const missing = [words[0], words.find((w) => w.endsWith('cli.js'))].filter(
    (w): w is string => !!w && !whichFile(w, env, '/') && !exists(w),
  );
  if (missing.length)
    return fail(
      `${file} runs ${missing.join(' and ')}, which no longer exist${missing.length === 1 ? 's' : ''}`,
      `write it again: ${print}`,
    );
  return ok(`the service unit is installed (${file})`);
}

const exists = (f: string) => {
  try {
    statSync(f);
    return true;
  } catch {
    return false;
  }
};

export function checkMemory({ config: c }: DoctorContext): Finding {
  const floor = c.memoryFloorMB;
  if (floor === null) return ok('memoryFloorMB is null: no memory floor (admission counts sessions alone)');
  const m = memoryFacts(c, memAvailable(c.meminfoPath), []);
  if (m.availableBytes === null)
    return fail(
      `MemAvailable cannot be read from ${c.meminfoPath}`,
      '`sunset admit` starts nothing while it cannot: fix meminfoPath, or set memoryFloorMB to null',
    );
  const head = `MemAvailable ${formatBytes(m.availableBytes)}, memoryFloorMB ${formatBytes(m.floorBytes)}`;
  if (m.availableBytes < (m.floorBytes ?? 0))
    return warn(`${head}: under the floor`, 'exits go largest RSS first and `sunset admit` refuses new starts until memory frees');
  const room = memoryRoom(m) ?? 0;
  if (!room)
    return warn(
      `${head}: no room for a session of ${formatBytes(m.typical.bytes)} (admit.sessionMB)`,
      '`sunset admit` refuses new starts until memory frees',
    );
  return ok(`${head}: room for about ${room} session${room === 1 ? '' : 's'} of ${formatBytes(m.typical.bytes)}`);
}
