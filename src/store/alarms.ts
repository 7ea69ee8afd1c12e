// Alarms for a person: kept in stateDir (append-only JSON lines, one per task or session and kind, ever),
// so a Redis flush loses none; delivered to a webhook and/or a command at least once.
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { run } from '../run.js';
import { appendJsonLine, createOnce, readJson, readJsonLines, safeName, writeJsonAtomic } from './state-files.js';
import { readdirSync } from 'node:fs';

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

  list(): Alarm[] {
    return readJsonLines<Alarm>(join(this.config.stateDir, 'alarms.jsonl'));
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
