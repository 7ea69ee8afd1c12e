// Reading a bounded part of an agent CLI's transcript: its first line, or its last bytes. A box keeps months of
// transcripts, some of many MB: neither is ever read whole to learn a session's id or whether a turn is in flight.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Run `read` on the open file; null when it cannot be opened or read. */
function withFile<T>(path: string, read: (fd: number) => T | null): T | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    return read(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** The first line (without its newline) within the first `max` bytes; null when unreadable or no whole line there. */
export function readFirstLine(path: string, max: number): string | null {
  return withFile(path, (fd) => {
    const chunks: Buffer[] = [];
    let at = 0;
    while (at < max) {
      const buf = Buffer.allocUnsafe(Math.min(64 << 10, max - at));
      const n = readSync(fd, buf, 0, buf.length, at);
      if (n <= 0) return null;
      const nl = buf.subarray(0, n).indexOf(10);
      if (nl >= 0) {
        chunks.push(buf.subarray(0, nl));
        return Buffer.concat(chunks).toString('utf8');
      }
      chunks.push(buf.subarray(0, n));
      at += n;
    }
    return null;
  });
}

/** The last `bytes` of a file, from a line boundary (a line cut at the start is left out); whole = read from its start. */
export function readTail(path: string, bytes: number): { text: string; whole: boolean } | null {
  return withFile(path, (fd) => {
    const size = statSync(path).size;
    const start = Math.max(0, size - bytes);
    const buf = Buffer.allocUnsafe(size - start);
    const n = readSync(fd, buf, 0, buf.length, start);
    let text = buf.subarray(0, n).toString('utf8');
    if (start > 0) text = text.slice(text.indexOf('\n') + 1);
    return { text, whole: start === 0 };
  });
}
