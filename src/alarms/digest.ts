// The digest of the lanes awaiting a person (issue 30, item 2): at most every alarms.digestEvery, and only when the
// list changed since the last one sent — each lane, how long it has waited, what it asks (a blocked job's
// question), the memory it holds, and its row on the Decisions page. Kept like an alarm (a marker under
// alarms/digest/, never in alarms.jsonl) and sent through the channels that name the kind `digest`.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { FleetSnapshot } from '../evidence/fleet.js';
import { buildReport, formatBytes } from '../report/report.js';
import { createOnce, readJson, writeJsonAtomic } from '../store/state-files.js';
import { channelsOf, wants, type DigestLane } from './channels/index.js';
import { hours } from './channels/chat.js';
import { markerFile, webBase, type Marker, type DeliveryRecord } from './outbox.js';

/** The last digest sent: when, of which list (its fingerprint), under which key. */
export interface DigestState {
  sentAt: string;
  fingerprint: string;
  key: string;
}

export type DigestDecision =
  | { send: false; why: 'off' | 'no-channel' | 'not-due' | 'roster-failed' | 'unchanged' | 'empty' }
  | { send: true; key: string; fingerprint: string };

const stateFile = (stateDir: string) => join(stateDir, 'alarm-digest.json');
export const readDigestState = (stateDir: string) => readJson<DigestState>(stateFile(stateDir));

/** Is one due at all (before any sweep is made for it)? */
export function digestDue(every: number | null, wanted: boolean, last: DigestState | null, now: number): DigestDecision | null {
  if (every === null) return { send: false, why: 'off' };
  if (!wanted) return { send: false, why: 'no-channel' };
  if (last && now - Date.parse(last.sentAt) < every) return { send: false, why: 'not-due' };
  return null;
}

/** The list's identity: which lanes wait, on which sessions (how long, and how much memory, change by themselves). */
export function fingerprint(lanes: DigestLane[]): string {
  const ids = lanes.map((l) => `${l.taskId}\0${l.sessionId ?? ''}`).sort();
  return createHash('sha256').update(ids.join('\n')).digest('hex');
}

/**
 * Send when the list is not empty and not the one last sent. The key is the list's and the last digest's: two
 * ticks that decide at once decide on the same key, and only the first creates it.
 */
export function decideDigest(lanes: DigestLane[], last: DigestState | null): DigestDecision {
  if (!lanes.length) return { send: false, why: 'empty' };
  const fp = fingerprint(lanes);
  if (last?.fingerprint === fp) return { send: false, why: 'unchanged' };
  return { send: true, fingerprint: fp, key: `${fp.slice(0, 16)}-after-${last?.key ?? 'none'}` };
}

export function digestLanes(snap: FleetSnapshot, base: string | null): DigestLane[] {
  const report = buildReport(snap);
  return report.awaitingHuman.map((w) => {
    const s = w.sessionId ? snap.sessions.find((x) => x.live === true && (x.sessionId === w.sessionId || x.id === w.sessionId)) : undefined;
    return {
      taskId: w.taskId,
      sessionId: w.sessionId,
      waitingSince: w.waitingSince,
      waitedMs: w.waitedMs,
      asks: s?.evidence.job?.needs ?? null,
      rssBytes: w.rssBytes,
      live: w.live,
      link: `${base ?? ''}/decisions#lane-${encodeURIComponent(w.taskId)}`,
    };
  });
}

export function digestText(lanes: DigestLane[]): string {
  const held = lanes.reduce((n, l) => n + (l.live ? (l.rssBytes ?? 0) : 0), 0);
  const oldest = lanes.find((l) => l.waitedMs !== null);
  const n = lanes.length;
  return `${n} lane${n === 1 ? '' : 's'} awaiting a person, holding ${formatBytes(held)}${oldest ? `; the oldest, ${oldest.taskId}, has waited ${hours(oldest.waitedMs!)}` : ''}.`;
}

export interface DigestDeps {
  config: Config;
  log?: Logger;
  now: () => number;
  /** A fresh look at the fleet (deps.fleet). */
  fleet: () => Promise<FleetSnapshot>;
}

/** One look: the digest kept and returned when it is to be sent (the caller enqueues its deliveries), else why not. */
export async function runDigest(d: DigestDeps): Promise<{ decision: DigestDecision; record?: DeliveryRecord }> {
  const { config } = d;
  const now = d.now();
  const last = readDigestState(config.stateDir);
  const wanted = channelsOf(config).some((c) => wants(c, 'digest'));
  const early = digestDue(config.alarms.digestEvery, wanted, last, now);
  if (early) return { decision: early };
  const snap = await d.fleet();
  // a roster that cannot be read says nothing of which sessions run: no digest from it (a failing probe: don't act)
  if (!snap.roster.ok) return { decision: { send: false, why: 'roster-failed' } };
  const lanes = digestLanes(snap, webBase(config));
  const decision = decideDigest(lanes, last);
  if (!decision.send) return { decision };
  const record: DeliveryRecord = {
    kind: 'digest',
    key: decision.key,
    at: new Date(now).toISOString(),
    host: config.host,
    message: digestText(lanes),
    lanes,
  };
  if (!createOnce(markerFile(config.stateDir, 'digest', decision.key), { alarm: record, delivered: false } satisfies Marker))
    return { decision: { send: false, why: 'unchanged' } }; // another tick made this very one
  writeJsonAtomic(stateFile(config.stateDir), {
    sentAt: record.at,
    fingerprint: decision.fingerprint,
    key: decision.key,
  } satisfies DigestState);
  d.log?.info(
    { event: 'alarm:digest', key: decision.key, lanes: lanes.length },
    `digest of ${lanes.length} lanes awaiting a person: queued`,
  );
  return { decision, record };
}
