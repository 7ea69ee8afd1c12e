// A Claude Code job's chain (a background session with no Driver task whose own job settled `done`) has no task
// file to latch, so its latches live here, in stateDir: one small JSON file per job and process start (so a
// respawned session starts a new chain). The same latch rules as a task's (D8): set once, requests only grow.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ExpireFacts } from '../doctrine/verdict.js';
import { latchFacts, MAX_EXIT_REQUESTS, type ChainLatch } from '../doctrine/chain.js';
import { readJson, safeName, writeJsonAtomic } from './state-files.js';

export interface JobChainRecord extends ExpireFacts {
  shortId: string;
  sessionId: string;
  /** The process start (ms) the chain belongs to. */
  start: string;
}

export const jobKey = (shortId: string, start: string) => `${shortId}@${start}`;
const dir = (stateDir: string) => join(stateDir, 'jobs');
const file = (stateDir: string, key: string) => join(dir(stateDir), `${safeName(key)}.json`);

export function readJobChain(stateDir: string, key: string): JobChainRecord | null {
  return readJson<JobChainRecord>(file(stateDir, key));
}

/** One readdir per sweep, then a lookup per job: the chains there are. */
export function jobChainReader(stateDir: string): (key: string) => JobChainRecord | null {
  let names: Set<string> | null = null;
  return (key) => {
    if (names === null) {
      try {
        names = new Set(readdirSync(dir(stateDir)));
      } catch {
        names = new Set();
      }
    }
    return names.has(`${safeName(key)}.json`) ? readJobChain(stateDir, key) : null;
  };
}

export type JobLatch = ChainLatch;

/** Latch by the rule (src/doctrine/chain.ts latchFacts): written only when something changed. Returns the record and what changed. */
export function latchJobChain(
  stateDir: string,
  ref: { shortId: string; sessionId: string; start: string },
  patch: JobLatch,
  max = MAX_EXIT_REQUESTS,
): { rec: JobChainRecord; applied: JobLatch } {
  const key = jobKey(ref.shortId, ref.start);
  const cur: JobChainRecord = readJobChain(stateDir, key) ?? { ...ref, requests: 0 };
  const { next, applied } = latchFacts(cur, patch, max);
  if (Object.keys(applied).length) writeJsonAtomic(file(stateDir, key), next);
  return { rec: next, applied };
}
