// sunset's own durable memory in stateDir (a Redis flush loses none of it): small JSON files written
// atomically and durably, created once, and append-only JSON-lines logs (the mechanics: atomic-file.ts).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { appendLineSync, createFileOnceSync, writeFileAtomicSync } from './atomic-file.js';

/** A file name for any key: no separators, no leading dot, nothing a shell or a path could misread. */
export function safeName(key: string): string {
  return encodeURIComponent(key).replace(/\./g, '%2E').replace(/\*/g, '%2A');
}

/** A file's JSON, or null (missing, unreadable, not JSON). A missing file is told by a lookup, not a thrown error: a pass asks after thousands of ledger files that are not there, and each throw cost ~10 µs. */
export function readJson<T>(file: string): T | null {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

/** Replace the file by this JSON, atomically and durably (fsynced, renamed, its folder fsynced): after a crash it holds the old value or the new one. */
export function writeJsonAtomic(file: string, value: unknown, mode?: number): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(value)}\n`, mode ? { mode } : {});
}

/** Create a file only if it does not exist yet: true when this call created it (once, ever; fsynced with its folder). */
export function createOnce(file: string, value: unknown): boolean {
  mkdirSync(dirname(file), { recursive: true });
  return createFileOnceSync(file, `${JSON.stringify(value)}\n`);
}

/** One JSON line at the end of the log; fsynced only when durable (a torn last line is skipped by readJsonLines). */
export function appendJsonLine(file: string, value: unknown, o: { durable?: boolean } = {}): void {
  mkdirSync(dirname(file), { recursive: true });
  appendLineSync(file, `${JSON.stringify(value)}\n`, o);
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
