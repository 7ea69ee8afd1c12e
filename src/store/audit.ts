// The audit log: one JSON line per decision, with the evidence it stood on (stateDir/audit.jsonl), and the one
// reader of it (the sampler's counts, /metrics, the tests and the chaos suite read it through here). Decisions
// are named as in the log (src/pipeline/events.ts); files written before that used older names, which the
// reader maps to the new ones, so an old audit still counts.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { writeAllSync } from './atomic-file.js';
import { dirname, join } from 'node:path';
import { errorCode } from '../errors.js';

export interface AuditEntry {
  event: string;
  taskId?: string | null;
  sessionId?: string | null;
  [k: string]: unknown;
}

export type Audit = (e: AuditEntry) => void;

export const auditFile = (stateDir: string) => join(stateDir, 'audit.jsonl');

/** A dry run's audit: beside the real one, never in it (the decisions page and /metrics read the real one). */
export const dryRunAuditFile = (stateDir: string) => join(stateDir, 'dry-run.audit.jsonl');

/**
 * Appends go through one open file (O_APPEND), kept for a second after it was opened: a burst of decisions costs
 * a stat and a write each, not a mkdir, an open, a write and a close. A file moved or removed meanwhile (a
 * rotation) is seen by the stat, and the next line opens the new one.
 */
export function fileAudit(stateDir: string, now: () => number = Date.now, file = auditFile(stateDir)): Audit {
  let fd: number | null = null;
  let ino = -1;
  const close = () => {
    if (fd === null) return;
    try {
      closeSync(fd);
    } catch {
      /* closed already */
    }
    fd = null;
  };
  return (e) => {
    const at = new Date(now()).toISOString();
    // {"at": …} and then the entry's own fields, in one string (no spread copy of the entry, unless it has an `at` of its own)
    const fields = Object.hasOwn(e, 'at') ? null : JSON.stringify(e);
    const text = fields === null ? JSON.stringify({ at, ...e }) : fields === '{}' ? `{"at":"${at}"}` : `{"at":"${at}",${fields.slice(1)}`;
    const line = Buffer.from(`${text}\n`, 'utf8');
    if (fd !== null && statSync(file, { throwIfNoEntry: false })?.ino !== ino) close();
    if (fd === null) {
      mkdirSync(dirname(file), { recursive: true });
      fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o666);
      ino = fstatSync(fd).ino;
      setTimeout(close, 1000).unref();
    }
    writeAllSync(fd, line);
  };
}

/** Older names of the same decisions (before one vocabulary): read as the new ones. */
export const OLD_NAMES: Readonly<Record<string, string>> = Object.freeze({
  release: 'task:released',
  ask: 'exit:asked',
  request: 'exit:requested',
  'give-up': 'exit:gave-up',
  'expire:request': 'expire:requested',
  'expire:give-up': 'expire:gave-up',
});

export const eventName = (e: string) => OLD_NAMES[e] ?? e;

/**
 * Reads audit.jsonl from an offset to its last whole line (a line still being written waits for the next
 * read); a file shorter than the offset was replaced and is read from its start. Entries carry the new names.
 */
export function readAuditFrom(file: string, offset = 0, limit = Infinity): { entries: AuditEntry[]; offset: number } | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return errorCode(err) === 'ENOENT' ? { entries: [], offset: 0 } : null;
  }
  try {
    const size = fstatSync(fd).size;
    let at = offset <= size ? offset : 0;
    if (size - at > limit) return null;
    const entries: AuditEntry[] = [];
    const chunk = Buffer.alloc(1 << 20);
    let carry = Buffer.alloc(0);
    while (at < size) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - at), at);
      if (n <= 0) break;
      at += n;
      const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
      const last = buf.lastIndexOf(0x0a);
      carry = Buffer.from(last >= 0 ? buf.subarray(last + 1) : buf);
      if (last < 0) continue;
      for (const line of buf.subarray(0, last).toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        try {
          const e = JSON.parse(line) as AuditEntry;
          if (typeof e.event === 'string') entries.push({ ...e, event: eventName(e.event) });
        } catch {
          /* a torn line after a crash */
        }
      }
    }
    return { entries, offset: at - carry.length };
  } finally {
    closeSync(fd);
  }
}

/** Every entry of a stateDir's audit (tests, the chaos suite). */
export function readAudit(stateDir: string): AuditEntry[] {
  return readAuditFrom(auditFile(stateDir))?.entries ?? [];
}

/** Counts of each event, read incrementally: only what was appended since the last call. */
export class AuditCounter {
  private offset = 0;
  private counts = new Map<string, number>();
  constructor(private readonly file: string) {}

  read(): Map<string, number> {
    const r = readAuditFrom(this.file, this.offset);
    if (!r) return this.counts;
    if (r.offset < this.offset) this.counts = new Map(); // replaced: counted again from its start
    for (const e of r.entries) this.counts.set(e.event, (this.counts.get(e.event) ?? 0) + 1);
    this.offset = r.offset;
    return this.counts;
  }
}
