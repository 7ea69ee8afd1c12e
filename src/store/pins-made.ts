// The pins sunset itself made in Claude Code's pins file (src/pipeline/pins.ts): only these are ever taken back,
// and the verdict does not count them as a person's.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from './atomic-file.js';

const madeFile = (stateDir: string) => join(stateDir, 'pins-made.json');

export function readMade(stateDir: string): string[] {
  try {
    const v = JSON.parse(readFileSync(madeFile(stateDir), 'utf8'));
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

export function writeMade(stateDir: string, ids: string[]): void {
  mkdirSync(stateDir, { recursive: true });
  writeFileAtomicSync(madeFile(stateDir), `${JSON.stringify([...new Set(ids)].sort())}\n`);
}
