// An untasked session has no task file to latch, so expire keeps its chain here, in stateDir:
// one small JSON file per session and process start (so a resumed session starts a new chain).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExpireFacts } from '../doctrine/verdict.js';
import { latchFacts, type ChainLatch } from '../doctrine/chain.js';
import type { RosterRow } from '../evidence/roster.js';
import { readExit } from './ledger.js';
import { writeJsonAtomic } from './state-files.js';
import { expireExitId } from '../../queues/session-exit.js';

export function expireKey(sessionId: string, procStartMs: number | null): string {
  return `${encodeURIComponent(sessionId)}@${procStartMs === null ? 'unknown' : Math.round(procStartMs)}`;
}

function dir(stateDir: string) {
  return join(stateDir, 'expire');
}

export function readExpireFacts(stateDir: string, key: string): ExpireFacts | null {
  try {
    return JSON.parse(readFileSync(join(dir(stateDir), `${key}.json`), 'utf8')) as ExpireFacts;
  } catch {
    return null;
  }
}

/** One readdir per sweep, then a lookup per untasked session. */
export function expireFactsReader(stateDir: string): (row: RosterRow, procStartMs: number | null) => ExpireFacts | null {
  let names: Set<string> | null = null;
  return (row, start) => {
    if (names === null) {
      try {
        names = new Set(readdirSync(dir(stateDir)));
      } catch {
        names = new Set();
      }
    }
    const key = expireKey(row.sessionId, start);
    const facts = names.has(`${key}.json`) ? readExpireFacts(stateDir, key) : null;
    // the next request is timed from when the latest exit job finished (the exit ledger)
    if (facts && facts.requests > 0 && !facts.lastExitFinishedAt) {
      const finished = readExit(stateDir, expireExitId(row.sessionId, String(Math.round(start ?? 0)), facts.requests))?.finishedAt;
      if (finished) facts.lastExitFinishedAt = finished;
    }
    return facts;
  };
}

/** Latch by the rule (src/doctrine/chain.ts latchFacts). Atomic and durable (state-files.ts writeJsonAtomic). The facts after, and what changed. */
export function updateExpireFacts(stateDir: string, key: string, patch: ChainLatch): { next: ExpireFacts; applied: ChainLatch } {
  const r = latchFacts(readExpireFacts(stateDir, key) ?? { requests: 0 }, patch);
  writeJsonAtomic(join(dir(stateDir), `${key}.json`), r.next);
  return r;
}
