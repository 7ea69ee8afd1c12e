// The sampler's file: samples.jsonl in stateDir, one census a line, bounded — past MAX_SAMPLES_BYTES it turns
// over to samples.1.jsonl (the older one goes), so the two hold ~10 MB at most. Lines are appended, not
// fsynced (store/atomic-file.ts): a census lost to a power cut is one point of a chart, and a torn last
// line is skipped by every reader.
import { closeSync, fstatSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { appendLineSync, moveFileSync } from '../store/atomic-file.js';
import { readJsonLines } from '../store/state-files.js';
import type { Sample } from './sampler-census.js';

export const SAMPLES_FILE = 'samples.jsonl';
export const SAMPLES_OLD = 'samples.1.jsonl';
/** Past this, samples.jsonl becomes samples.1.jsonl (the older one goes): two files, at most ~10 MB. */
export const MAX_SAMPLES_BYTES = 5 * 1024 * 1024;

/** The last sample written (the tail of samples.jsonl, else of samples.1.jsonl), or null. */
export function lastSample(stateDir: string): Sample | null {
  for (const name of [SAMPLES_FILE, SAMPLES_OLD]) {
    const file = join(stateDir, name);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      continue;
    }
    try {
      const size = fstatSync(fd).size;
      const len = Math.min(size, 256 * 1024);
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, size - len);
      const lines = buf
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim());
      for (let i = lines.length - 1; i >= 0; i--) {
        try {
          const s = JSON.parse(lines[i]) as Sample;
          if (s && s.v === 1 && typeof s.at === 'string') return s;
        } catch {
          /* a torn or partial first line */
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return null;
}

/** Append one sample; past maxBytes the file rotates to samples.1.jsonl first (replacing the older one). */
export function appendSample(stateDir: string, sample: Sample, maxBytes: number = MAX_SAMPLES_BYTES): void {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, SAMPLES_FILE);
  const line = `${JSON.stringify(sample)}\n`;
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    size = 0;
  }
  if (size > 0 && size + Buffer.byteLength(line) > maxBytes) moveFileSync(file, join(stateDir, SAMPLES_OLD), { durable: false });
  appendLineSync(file, line);
}

/** Every sample kept, oldest first (samples.1.jsonl, then samples.jsonl); torn lines are skipped. */
export function readSamples(stateDir: string): Sample[] {
  const out: Sample[] = [];
  for (const name of [SAMPLES_OLD, SAMPLES_FILE]) {
    for (const s of readJsonLines<Sample>(join(stateDir, name))) {
      if (s && s.v === 1 && typeof s.at === 'string' && Number.isFinite(Date.parse(s.at))) out.push(s);
    }
  }
  return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}
