// Alarms for a person: kept in stateDir (append-only JSON lines, one per task or session and kind, ever),
// so a Redis flush loses none; delivered to a webhook and/or a command at least once. A person closes one
// by acknowledging it: the ack is a file of its own (stateDir/alarm-acks/<id>.json, created once, never
// rewritten) and an audit line; the alarm itself stays in alarms.jsonl as it was raised.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { run } from '../run.js';
import { appendJsonLine, createOnce, readJson, readJsonLines, safeName, writeJsonAtomic } from './state-files.js';
import { readdirSync } from 'node:fs';
import { fileAudit, type Audit } from './audit.js';

export type AlarmKind = 'session-will-not-exit' | 'cap-reached';

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

/** An alarm's id: stable (from its kind and key, raised once ever), short, the same on every listing. */
export const alarmId = (kind: string, key: string) => createHash('sha256').update(`${kind}\0${key}`).digest('hex').slice(0, 8);

const ackFile = (stateDir: string, id: string) => join(stateDir, 'alarm-acks', `${safeName(id)}.json`);

interface Marker {
  alarm: Alarm;
  delivered: boolean;
}

const markerFile = (stateDir: string, kind: string, key: string) => join(stateDir, 'alarms', kind, `${safeName(key)}.json`);

export class Alarms {
  constructor(
    private readonly config: Pick<Config, 'stateDir' | 'host' | 'alarms' | 'probeTimeout'>,
    private readonly log?: Logger,
  ) {}

  /** Raise once per kind and key, ever. Returns the alarm when this call raised it, null when it already was. */
  async raise(kind: AlarmKind, key: string, fields: Omit<Alarm, 'kind' | 'key' | 'at' | 'host'>): Promise<Alarm | null> {
    const alarm = { kind, key, at: new Date().toISOString(), host: this.config.host, ...fields } as Alarm;
    const file = markerFile(this.config.stateDir, kind, key);
    if (!createOnce(file, { alarm, delivered: false } satisfies Marker)) return null;
    appendJsonLine(join(this.config.stateDir, 'alarms.jsonl'), alarm, { durable: true }); // raised once ever: the list must keep it
    this.log?.warn({ event: 'alarm:raised', ...alarm }, alarm.message);
    await this.deliver(file, alarm);
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
    const ack: AlarmAck = { id: alarm.id, kind: alarm.kind, key: alarm.key, at: new Date().toISOString(), by: o.by, why: o.why.trim() || '(no reason given)' };
    if (!createOnce(ackFile(this.config.stateDir, alarm.id), ack)) {
      const first = readJson<AlarmAck>(ackFile(this.config.stateDir, alarm.id)) ?? ack;
      return { status: 'already', alarm: { ...alarm, ack: first }, ack: first };
    }
    (o.audit ?? fileAudit(this.config.stateDir))({ event: 'alarm:acknowledged', alarmId: alarm.id, kind: alarm.kind, key: alarm.key, taskId: alarm.taskId ?? null, sessionId: alarm.sessionId ?? null, by: ack.by, why: ack.why });
    this.log?.info({ event: 'alarm:acknowledged', alarmId: alarm.id, kind: alarm.kind, key: alarm.key, by: ack.by, why: ack.why }, `alarm ${alarm.id} (${alarm.kind}) acknowledged by ${ack.by}: ${ack.why}`);
    return { status: 'acknowledged', alarm: { ...alarm, ack }, ack };
  }

  /** Deliver what a crash left undelivered (at least once). */
  async redeliver(): Promise<number> {
    let n = 0;
    const root = join(this.config.stateDir, 'alarms');
    for (const kind of safeReaddir(root)) {
      for (const name of safeReaddir(join(root, kind))) {
        const file = join(root, kind, name);
        const m = readJson<Marker>(file);
        if (m && !m.delivered) {
          await this.deliver(file, m.alarm);
          n++;
        }
      }
    }
    return n;
  }

  private async deliver(file: string, alarm: Alarm): Promise<void> {
    const { webhook, command } = this.config.alarms;
    if (!webhook && !command) return writeJsonAtomic(file, { alarm, delivered: true });
    let ok = true;
    if (webhook) {
      try {
        const res = await fetch(webhook, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(alarm),
          signal: AbortSignal.timeout(this.config.probeTimeout),
        });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
      } catch (err: any) {
        ok = false;
        this.log?.error({ event: 'alarm:webhook-failed', kind: alarm.kind, key: alarm.key, error: err.message }, 'alarm webhook failed; will retry at next start');
      }
    }
    if (command) {
      const r = await run(command, { timeoutMs: this.config.probeTimeout, input: JSON.stringify(alarm) });
      if (!r.ok) {
        ok = false;
        this.log?.error({ event: 'alarm:command-failed', kind: alarm.kind, key: alarm.key, error: r.error }, 'alarm command failed; will retry at next start');
      }
    }
    if (ok) writeJsonAtomic(file, { alarm, delivered: true });
  }
}

function safeReaddir(d: string): string[] {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}
