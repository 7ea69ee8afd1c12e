// Alarms for a person: kept in stateDir (append-only JSON lines, one per task or session and kind, ever),
// so a Redis flush loses none; delivered at least once to each channel that wants it (src/alarms/: through the
// alarm-delivery queue while `sunset up` runs, else straight away, once, and again by the queue). A person closes one
// by acknowledging it: the ack is a file of its own (stateDir/alarm-acks/<id>.json, created once, never
// rewritten) and an audit line; the alarm itself stays in alarms.jsonl as it was raised.
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { appendJsonLine, createOnce, readJson, readJsonLines, safeName } from './state-files.js';
import { fileAudit, type Audit } from './audit.js';
import { alarmId } from './alarm-id.js';
import { deliverNow } from '../alarms/deliver.js';
import { markerFile, pendingDeliveries, type Marker } from '../alarms/outbox.js';

export { alarmId };

export type AlarmKind = 'session-will-not-exit' | 'cap-reached' | 'claude-code-unreadable';

export interface Alarm {
  kind: AlarmKind;
  key: string;
  at: string;
  host: string;
  taskId?: string | null;
  sessionId?: string | null;
  message: string;
  [k: string]: unknown;
}

/** A person's acknowledgement: who closed the alarm, when, and why. */
export interface AlarmAck {
  id: string;
  kind: AlarmKind;
  key: string;
  at: string;
  by: string;
  why: string;
}

/** An alarm as listed: its id (what `sunset alarms ack ID` takes) and its acknowledgement, if any. */
export type ListedAlarm = Alarm & { id: string; ack: AlarmAck | null };

export type AckResult =
  | { status: 'acknowledged'; alarm: ListedAlarm; ack: AlarmAck }
  | { status: 'already'; alarm: ListedAlarm; ack: AlarmAck }
  | { status: 'unknown-id' }
  | { status: 'ambiguous'; matches: ListedAlarm[] };

const ackFile = (stateDir: string, id: string) => join(stateDir, 'alarm-acks', `${safeName(id)}.json`);

/**
 * What happens to an alarm once raised and kept: `sunset up` hands its alarm-delivery queue (one job per channel,
 * retried with backoff); anything else delivers it now, once per channel, and leaves what failed to the queue.
 */
export type AlarmSink = (kind: string, key: string) => Promise<unknown>;

type AlarmsConfig = Pick<Config, 'stateDir' | 'host' | 'alarms' | 'probeTimeout'> & Partial<Pick<Config, 'web'>>;

export class Alarms {
  constructor(
    private readonly config: AlarmsConfig,
    private readonly log?: Logger,
    private readonly sink: AlarmSink | null = null,
  ) {}

  /** Raise once per kind and key, ever. Returns the alarm when this call raised it, null when it already was. */
  async raise(kind: AlarmKind, key: string, fields: Omit<Alarm, 'kind' | 'key' | 'at' | 'host'>): Promise<Alarm | null> {
    const alarm = { kind, key, at: new Date().toISOString(), host: this.config.host, ...fields } as Alarm;
    const file = markerFile(this.config.stateDir, kind, key);
    if (!createOnce(file, { alarm, delivered: false } satisfies Marker)) return null;
    appendJsonLine(join(this.config.stateDir, 'alarms.jsonl'), alarm, { durable: true }); // raised once ever: the list must keep it
    this.log?.warn({ event: 'alarm:raised', ...alarm }, alarm.message);
    // kept first, then handed on: a crash in between leaves it undelivered in stateDir, where the queue finds it
    if (this.sink)
      await this.sink(kind, key).catch((err: Error) =>
        this.log?.error(
          { event: 'alarm:enqueue-failed', kind, key, error: err.message },
          `alarm ${kind} not queued for delivery (${err.message}); delivered when the queue next looks`,
        ),
      );
    else await deliverNow(this.config, alarm, this.log);
    return alarm;
  }

  /** Every alarm ever raised, oldest first, as raised. */
  list(): Alarm[] {
    return readJsonLines<Alarm>(join(this.config.stateDir, 'alarms.jsonl'));
  }

  /** Every alarm ever raised, oldest first, with its id and its acknowledgement (null while open). */
  listed(): ListedAlarm[] {
    return this.list().map((a) => {
      const id = alarmId(a.kind, a.key);
      return { ...a, id, ack: readJson<AlarmAck>(ackFile(this.config.stateDir, id)) };
    });
  }

  /** The alarms no person has acknowledged yet: what `sunset alarms` and the Decisions page list. */
  open(): ListedAlarm[] {
    return this.listed().filter((a) => !a.ack);
  }

  /**
   * A person closes an alarm (its id, or a unique prefix of it): the ack is created once — a second one,
   * even racing, finds it there (`already`) — and audited (`alarm:acknowledged`, with who and why).
   */
  ack(id: string, o: { by: string; why: string; audit?: Audit }): AckResult {
    const want = id.trim().toLowerCase();
    const all = this.listed();
    const exact = all.filter((a) => a.id === want);
    const matches = exact.length ? exact : want.length >= 4 ? all.filter((a) => a.id.startsWith(want)) : [];
    if (!matches.length) return { status: 'unknown-id' };
    if (matches.length > 1) return { status: 'ambiguous', matches };
    const alarm = matches[0];
    if (alarm.ack) return { status: 'already', alarm, ack: alarm.ack };
    const ack: AlarmAck = {
      id: alarm.id,
      kind: alarm.kind,
      key: alarm.key,
      at: new Date().toISOString(),
      by: o.by,
      why: o.why.trim() || '(no reason given)',
    };
    if (!createOnce(ackFile(this.config.stateDir, alarm.id), ack)) {
      const first = readJson<AlarmAck>(ackFile(this.config.stateDir, alarm.id)) ?? ack;
      return { status: 'already', alarm: { ...alarm, ack: first }, ack: first };
    }
    (o.audit ?? fileAudit(this.config.stateDir))({
      event: 'alarm:acknowledged',
      alarmId: alarm.id,
      kind: alarm.kind,
      key: alarm.key,
      taskId: alarm.taskId ?? null,
      sessionId: alarm.sessionId ?? null,
      by: ack.by,
      why: ack.why,
    });
    this.log?.info(
      { event: 'alarm:acknowledged', alarmId: alarm.id, kind: alarm.kind, key: alarm.key, by: ack.by, why: ack.why },
      `alarm ${alarm.id} (${alarm.kind}) acknowledged by ${ack.by}: ${ack.why}`,
    );
    return { status: 'acknowledged', alarm: { ...alarm, ack }, ack };
  }

  /** Deliver now, once per channel, what is still undelivered (at least once): the number of alarms tried. */
  async redeliver(): Promise<number> {
    const keys = new Map<string, { kind: string; key: string }>();
    for (const p of pendingDeliveries(this.config)) keys.set(`${p.kind}\0${p.key}`, p);
    for (const { kind, key } of keys.values()) {
      const m = readJson<Marker>(markerFile(this.config.stateDir, kind, key));
      if (m) await deliverNow(this.config, m.alarm, this.log);
    }
    return keys.size;
  }
}
