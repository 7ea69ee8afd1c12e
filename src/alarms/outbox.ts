// What is still to be delivered, read from stateDir (the source of truth; the queue only carries it): each alarm's
// marker (alarms/<kind>/<key>.json, as raised; a digest's too, under alarms/digest/) and, per channel, a file
// created once when that channel took it (alarm-sent/<alarm id>/<channel>.json). A marker reads `delivered`
// once every channel that wants it has taken it: later scans skip it (a channel added later gets no history).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { createOnce, readJson, safeName, writeJsonAtomic } from '../store/state-files.js';
import { alarmId } from '../store/alarm-id.js';
import { channelsOf, wants, type Answer, type Channel, type DigestLane, type Outgoing } from './channels/index.js';

/** An alarm or a digest as kept: what every channel is sent. */
export interface DeliveryRecord {
  kind: string;
  key: string;
  at: string;
  host: string;
  message: string;
  lanes?: DigestLane[];
  [k: string]: unknown;
}

export interface Marker {
  alarm: DeliveryRecord;
  delivered: boolean;
}

export const markerFile = (stateDir: string, kind: string, key: string) => join(stateDir, 'alarms', kind, `${safeName(key)}.json`);
const sentFile = (stateDir: string, id: string, channel: string) => join(stateDir, 'alarm-sent', safeName(id), `${safeName(channel)}.json`);

export function readMarker(stateDir: string, kind: string, key: string): Marker | null {
  const m = readJson<Marker>(markerFile(stateDir, kind, key));
  return m && typeof m === 'object' && m.alarm && typeof m.alarm.kind === 'string' && typeof m.alarm.key === 'string' ? m : null;
}

export const wasSent = (stateDir: string, r: DeliveryRecord, channel: string) =>
  readJson(sentFile(stateDir, alarmId(r.kind, r.key), channel)) !== null;

/** The channels this record still has to reach. */
export function unsentChannels(config: Pick<Config, 'alarms' | 'stateDir'>, r: DeliveryRecord): Channel[] {
  return channelsOf(config).filter((c) => wants(c, r.kind) && !wasSent(config.stateDir, r, c.name));
}

export interface Pending {
  kind: string;
  key: string;
  channel: string;
}

/** Every (record, channel) not delivered yet, oldest marker first within a kind. */
export function pendingDeliveries(config: Pick<Config, 'alarms' | 'stateDir'>): Pending[] {
  const out: Pending[] = [];
  const root = join(config.stateDir, 'alarms');
  for (const kind of listDir(root)) {
    for (const name of listDir(join(root, kind))) {
      const m = readJson<Marker>(join(root, kind, name));
      if (!m?.alarm || m.delivered) continue;
      const left = unsentChannels(config, m.alarm);
      if (!left.length) settle(config, m.alarm);
      for (const c of left) out.push({ kind: m.alarm.kind, key: m.alarm.key, channel: c.name });
    }
  }
  return out;
}

/** A channel took it: said once, ever (a replayed delivery finds it there); the marker settles when all have. */
export function markSent(config: Pick<Config, 'alarms' | 'stateDir'>, r: DeliveryRecord, channel: string, a: Answer): boolean {
  const first = createOnce(sentFile(config.stateDir, alarmId(r.kind, r.key), channel), {
    channel,
    at: new Date().toISOString(),
    answer: a.detail,
  });
  if (!unsentChannels(config, r).length) settle(config, r);
  return first;
}

function settle(config: Pick<Config, 'stateDir'>, r: DeliveryRecord): void {
  writeJsonAtomic(markerFile(config.stateDir, r.kind, r.key), { alarm: r, delivered: true } satisfies Marker);
}

/** Where a person acts: the web's Decisions page (alarms.webUrl, else the web's own address). */
export function webBase(config: Partial<Pick<Config, 'alarms' | 'web' | 'host'>>): string | null {
  if (config.alarms?.webUrl) return config.alarms.webUrl.replace(/\/+$/, '');
  if (!config.web) return null;
  const open = config.web.host === '0.0.0.0' || config.web.host === '::';
  const host = open ? (config.host ?? 'localhost') : config.web.host.includes(':') ? `[${config.web.host}]` : config.web.host;
  return `http://${host}:${config.web.port}`;
}

/** The message one channel is sent for this record: its dedupe id is the record's id and the channel's name. */
export function outgoingOf(r: DeliveryRecord, channel: string, base: string | null): Outgoing {
  const id = alarmId(r.kind, r.key);
  const n = r.lanes?.length ?? 0;
  const title =
    r.kind === 'digest'
      ? `sunset on ${r.host}: ${n} lane${n === 1 ? '' : 's'} awaiting a person`
      : r.kind === 'test'
        ? `sunset on ${r.host}: a test message`
        : `sunset on ${r.host}: ${r.kind}`;
  return {
    idempotencyKey: `${id}/${channel}`,
    alarmId: id,
    channel,
    kind: r.kind,
    host: r.host,
    title,
    text: r.message,
    link: base ? `${base}/decisions${r.kind === 'digest' ? '' : '#alarms-card'}` : null,
    record: r,
    ...(r.lanes ? { lanes: r.lanes } : {}),
  };
}

function listDir(d: string): string[] {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}
