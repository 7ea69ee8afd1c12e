// `<root>/bin/claude`: the real Claude Code binary with one fleet's environment (HOME, the stand-in API),
// so that sunset runs the CLI as a person does who runs sunset as the user whose HOME holds the fleet.
// With callsLog, each `claude agents …` call appends one line (epoch ms) to it: how the real-fleet bench
// counts roster calls.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { shellWord } from '../../src/report/resume.js';
import type { RealFleet } from './real-fleet.js';

export function claudeWrapper(fleet: RealFleet, opts: { callsLog?: string } = {}): string {
  const bin = join(fleet.root, 'bin');
  mkdirSync(bin, { recursive: true });
  const file = join(bin, 'claude');
  const vars = Object.entries(fleet.env)
    .filter(([k, v]) => v !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `export ${k}=${shellWord(String(v))}`)
    .join('\n');
  const count = opts.callsLog ? `if [ "$1" = agents ]; then echo "$(date +%s%3N)" >> ${shellWord(opts.callsLog)}; fi\n` : '';
  writeFileSync(
    file,
    `#!/bin/sh\n# the real Claude Code with this fleet's environment\n${vars}\n${count}exec ${shellWord(fleet.binary)} "$@"\n`,
  );
  chmodSync(file, 0o755);
  return file;
}
