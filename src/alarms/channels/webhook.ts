// The generic JSON webhook (today's `alarms.webhook`): the record as kept (the alarm's fields, unchanged), with
// its id, the channel and the idempotency key beside them; the key also in the `Idempotency-Key` header.
import type { ChannelConfig } from '../../config.js';
import { post, reach } from './http.js';
import type { ChannelAdapter, Outgoing } from './types.js';

type Webhook = Extract<ChannelConfig, { type: 'webhook' }>;

/** The JSON the webhook and the command channels send. */
export function jsonBody(m: Outgoing): Record<string, unknown> {
  return {
    ...m.record,
    alarmId: m.alarmId,
    idempotencyKey: m.idempotencyKey,
    channel: m.channel,
    title: m.title,
    link: m.link,
    ...(m.lanes ? { lanes: m.lanes } : {}),
  };
}

export const webhookChannel: ChannelAdapter<Webhook> = {
  type: 'webhook',
  send: (c, m, o) =>
    post(c.url, { 'content-type': 'application/json', 'idempotency-key': m.idempotencyKey }, JSON.stringify(jsonBody(m)), o.timeoutMs),
  probe: (c, o) => reach(c.url, {}, o.timeoutMs),
};
