// What every alarm channel adapter takes and answers. One file per channel type beside this one; the table
// of them, and the channels a config names, are index.ts.
import type { ChannelConfig } from '../../config.js';

/** One lane awaiting a person, as a digest lists it. */
export interface DigestLane {
  taskId: string;
  sessionId: string | null;
  /** When it started waiting, and how long ago that was (null: not known). */
  waitingSince: string | null;
  waitedMs: number | null;
  /** What it asks a person (a blocked job's question), when Claude Code says. */
  asks: string | null;
  /** The memory its running session holds (null: no session running, or not read). */
  rssBytes: number | null;
  live: boolean;
  /** Its row on the Decisions page. */
  link: string;
}

/** One message for one channel: an alarm, a digest or a test, with the id a receiver deduplicates it by. */
export interface Outgoing {
  /** Stable across every retry and restart: the alarm's id and the channel's name. */
  idempotencyKey: string;
  alarmId: string;
  channel: string;
  kind: string;
  host: string;
  title: string;
  text: string;
  /** Where a person acts on it (the Decisions page); null when none. */
  link: string | null;
  /** The record as kept in stateDir: what the JSON channels (webhook, command) send, beside the fields above. */
  record: Record<string, unknown>;
  lanes?: DigestLane[];
}

/** What a channel answered: ok, its HTTP status (null: no HTTP answer, or a command), and in words. */
export interface Answer {
  ok: boolean;
  status: number | null;
  detail: string;
  /** The environment variable a secret is read from, when it is not set (the fix is to set it). */
  unsetEnv?: string;
}

export interface SendOptions {
  timeoutMs: number;
  /** Where secrets named in the config are read (the environment; tests hand their own). */
  env?: NodeJS.ProcessEnv;
}

export interface ChannelAdapter<C extends ChannelConfig = ChannelConfig> {
  type: C['type'];
  /** Deliver one message; never throws (a failure is an answer). */
  send(c: C, m: Outgoing, o: SendOptions): Promise<Answer>;
  /** Is it there, without sending anything a person would read (`sunset doctor`)? Never throws. */
  probe(c: C, o: SendOptions): Promise<Answer>;
}
