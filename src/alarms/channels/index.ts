// The alarm channels: one adapter per type (a new type is a file and a line in ADAPTERS), and the channels a
// config names — today's `alarms.webhook` and `alarms.command` (one channel each, every alarm kind, as before)
// and every entry of `alarms.channels`, each under its name (given, or its type and its place: `ntfy-1`).
import type { ChannelConfig, Config } from '../../config.js';
import { chatChannel } from './chat.js';
import { commandChannel } from './command.js';
import { ntfyChannel } from './ntfy.js';
import type { Answer, ChannelAdapter, Outgoing, SendOptions } from './types.js';
import { webhookChannel } from './webhook.js';

export type { Answer, DigestLane, Outgoing } from './types.js';

const ADAPTERS: { [T in ChannelConfig['type']]: ChannelAdapter<Extract<ChannelConfig, { type: T }>> } = {
  webhook: webhookChannel,
  chat: chatChannel,
  ntfy: ntfyChannel,
  command: commandChannel,
};

export interface Channel {
  name: string;
  type: ChannelConfig['type'];
  /** null: every alarm kind, and no digest. */
  kinds: readonly string[] | null;
  config: ChannelConfig;
}

export type AlarmsConfig = Pick<Config, 'alarms' | 'probeTimeout'>;

export function channelsOf(config: Pick<Config, 'alarms'>): Channel[] {
  const a = config.alarms;
  const out: Channel[] = [];
  if (a.webhook) out.push({ name: 'webhook', type: 'webhook', kinds: null, config: { type: 'webhook', url: a.webhook, kinds: null } });
  if (a.command) out.push({ name: 'command', type: 'command', kinds: null, config: { type: 'command', argv: a.command, kinds: null } });
  const n: Record<string, number> = {};
  for (const c of a.channels ?? []) {
    n[c.type] = (n[c.type] ?? 0) + 1;
    out.push({ name: c.name ?? `${c.type}-${n[c.type]}`, type: c.type, kinds: c.kinds, config: c });
  }
  return out;
}

/** Does this channel take this kind? A test goes to every channel; a digest only to those that name it. */
export function wants(c: Channel, kind: string): boolean {
  if (kind === 'test') return true;
  return c.kinds === null ? kind !== 'digest' : c.kinds.includes(kind);
}

export function sendTo(c: Channel, m: Outgoing, o: SendOptions): Promise<Answer> {
  const adapter = ADAPTERS[c.type] as ChannelAdapter;
  return adapter.send(c.config, m, o).catch((err: Error) => ({ ok: false, status: null, detail: `failed: ${err.message}` }));
}

export interface ChannelAnswer extends Answer {
  name: string;
  type: Channel['type'];
  kinds: readonly string[] | null;
}

/**
 * Each configured channel, is it there? Sends nothing a person would read: an HTTP channel is asked for a HEAD
 * (any HTTP answer is an answer), a command's program is looked up, ntfy's token variable must be set. For
 * `sunset doctor`; `sunset alarms test` is the one that sends.
 */
export async function probeChannels(config: AlarmsConfig, env: NodeJS.ProcessEnv = process.env): Promise<ChannelAnswer[]> {
  return Promise.all(
    channelsOf(config).map(async (c) => {
      const adapter = ADAPTERS[c.type] as ChannelAdapter;
      const a = await adapter
        .probe(c.config, { timeoutMs: config.probeTimeout, env })
        .catch((err: Error) => ({ ok: false, status: null, detail: err.message }));
      return { name: c.name, type: c.type, kinds: c.kinds, ...a };
    }),
  );
}
