// sunset's own durable memory in stateDir (a Redis flush loses none of it): small JSON files written
// atomically, and append-only JSON-lines logs.
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync, openSync, closeSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A file name for any key: no separators, no leading dot, nothing a shell or a path could misread. */
export function safeName(key: string): string {
  return encodeURIComponent(key).replace(/\./g, '%2E').replace(/\*/g, '%2A');
}

export function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

export function writeJsonAtomic(file: string, value: unknown, mode?: number): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tmp, JSON.stringify(value) + '\n', mode ? { mode } : undefined);
  renameSync(tmp, file);
}

/** Create a file only if it does not exist yet: true when this call created it (once, ever). */
export function createOnce(file: string, value: unknown): boolean {
  mkdirSync(dirname(file), { recursive: true });
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (err: any) {
    if (err.code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(value) + '\n');
  } finally {
    closeSync(fd);
  }
  return true;
}

export function appendJsonLine(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, JSON.stringify(value) + '\n');
}

export function readJsonLines<T>(file: string): T[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      /* a torn last line after a crash: skipped */
    }
  }
  return out;
}
