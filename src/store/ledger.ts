// The exit ledger: one record per exit job, in stateDir. The exit worker writes `calledAt` before it
// calls sessionExit() and `finishedAt` after confirming, so a replayed job — after a crash, a stalled
// lock or a Redis flush — only confirms and never calls twice. Retries are timed from `finishedAt`.
// So every write here is durable, not only atomic: fsynced, renamed and its folder fsynced (atomic-file.ts).
import { join } from 'node:path';
import { createOnce, readJson, safeName, writeJsonAtomic } from './state-files.js';
import { readdirSync, unlinkSync } from 'node:fs';

export interface ExitRecord {
  jobId: string;
  reason: 'request' | 'expire' | 'job' | 'chain' | 'person';
  taskId?: string;
  sessionId: string;
  /** The short id (background sessions); null for an interactive one. */
  id?: string | null;
  /** What people read: the short id, else the sessionId's first 8 characters. */
  label?: string;
  kind?: string;
  cwd?: string | null;
  n?: number;
  calledAt?: string;
  method?: string;
  finishedAt?: string;
  outcome?: 'exited' | 'still-running' | 'spared' | 'refused' | 'gone' | 'failed';
  reasons?: string[];
  rssBytes?: number | null;
  error?: string;
  /** A chain of a later kind (reason 'chain'): its name, as its adapter says it (`manual X`). */
  chain?: string;
}

const file = (stateDir: string, jobId: string) => join(stateDir, 'exits', `${safeName(jobId)}.json`);

export function readExit(stateDir: string, jobId: string): ExitRecord | null {
  return readJson<ExitRecord>(file(stateDir, jobId));
}

/**
 * When an exit job finished (its record's `finishedAt`): a chain's next step (a request, the give-up) is timed
 * from it, not from the task file or the job's latches. Undefined while it has not (or has no record). The one
 * read of the ledger that gathering evidence and loading a chain share.
 */
export function exitFinishedAt(stateDir: string, jobId: string): string | undefined {
  return readExit(stateDir, jobId)?.finishedAt;
}

export function writeExit(stateDir: string, rec: ExitRecord): void {
  writeJsonAtomic(file(stateDir, rec.jobId), rec);
}

export function listExits(stateDir: string): ExitRecord[] {
  let names: string[];
  try {
    names = readdirSync(join(stateDir, 'exits'));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.json'))
    .map((n) => readJson<ExitRecord>(join(stateDir, 'exits', n)))
    .filter((r): r is ExitRecord => r !== null);
}

/**
 * Claim the call for an exit job, once ever, atomically (O_EXCL): two processors of the same job — a
 * replay racing the original after a flush, or two processes — can never both call. The loser only confirms.
 */
export function claimExit(stateDir: string, jobId: string, claim: { pid: number; startedAt: string | null; at: string }): boolean {
  return createOnce(join(stateDir, 'exits', `${safeName(jobId)}.claim`), claim);
}

export function readClaim(stateDir: string, jobId: string): { pid: number; startedAt: string | null; at: string } | null {
  return readJson(join(stateDir, 'exits', `${safeName(jobId)}.claim`));
}

/**
 * Claim the one ask of a task's chain (keyed by its release, so a new task under an old id is a new chain),
 * once ever, atomically: two processors of the same ask — a replay racing the original after a Redis flush —
 * never both deliver. Returns the claim that holds: this one when it was created, else the earlier one.
 */
export function claimAsk(
  stateDir: string,
  key: { taskId: string; releasedAt: string },
  claim: { at: string; pid: number },
): { won: boolean; claim: { at: string; pid: number } | null } {
  const f = join(stateDir, 'asks', `${safeName(`${key.taskId}@${key.releasedAt}`)}.claim`);
  if (createOnce(f, claim)) return { won: true, claim };
  return { won: false, claim: readJson(f) };
}

const askFile = (stateDir: string, key: { taskId: string; releasedAt: string }, ext: string) =>
  join(stateDir, 'asks', `${safeName(`${key.taskId}@${key.releasedAt}`)}.${ext}`);

/**
 * The ask was delivered (a message over a session's socket cannot be taken back, unlike the inbox file): once
 * marked, a replay after a crash latches the ask without delivering it again.
 */
export function markAskDelivered(stateDir: string, key: { taskId: string; releasedAt: string }, rec: { at: string; via: string }): void {
  createOnce(askFile(stateDir, key, 'delivered'), rec);
}

export function askDelivered(stateDir: string, key: { taskId: string; releasedAt: string }): { at: string; via: string } | null {
  return readJson(askFile(stateDir, key, 'delivered'));
}

/** Give the claim back: the delivery failed before anything was sent (the socket refused), so the ask is still to make. */
export function releaseAskClaim(stateDir: string, key: { taskId: string; releasedAt: string }): void {
  try {
    unlinkSync(askFile(stateDir, key, 'claim'));
  } catch {
    /* already gone */
  }
}
