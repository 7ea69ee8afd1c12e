// One delivery: a record (an alarm, a digest) to one channel, then the channel's sent-file. The delivery worker
// runs it per job (its failure is retried with backoff); a process with no queue runs it once per channel.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { channelsOf, sendTo, type Answer, type Channel, type ChannelAnswer } from './channels/index.js';
import { markSent, outgoingOf, unsentChannels, wasSent, webBase, type DeliveryRecord } from './outbox.js';

export type DeliveryConfig = Pick<Config, 'stateDir' | 'host' | 'alarms' | 'probeTimeout'> & Partial<Pick<Config, 'web'>>;

export type Delivered =
  | { status: 'sent'; answer: Answer }
  | { status: 'already' }
  | { status: 'channel-gone' }
  | { status: 'failed'; answer: Answer };

export async function deliverTo(config: DeliveryConfig, r: DeliveryRecord, channel: string, log?: Logger): Promise<Delivered> {
  const c: Channel | undefined = channelsOf(config).find((x) => x.name === channel);
  if (!c) return { status: 'channel-gone' };
  if (wasSent(config.stateDir, r, c.name)) return { status: 'already' };
  const m = outgoingOf(r, c.name, webBase(config));
  const answer = await sendTo(c, m, { timeoutMs: config.probeTimeout });
  const said = { kind: r.kind, key: r.key, alarmId: m.alarmId, channel: c.name, type: c.type, answer: answer.detail };
  if (!answer.ok) {
    log?.error({ event: 'alarm:delivery-failed', ...said }, `alarm ${m.alarmId} (${r.kind}) not delivered to ${c.name}: ${answer.detail}`);
    return { status: 'failed', answer };
  }
  markSent(config, r, c.name, answer);
  log?.info({ event: 'alarm:delivered', ...said }, `alarm ${m.alarmId} (${r.kind}) delivered to ${c.name}: ${answer.detail}`);
  return { status: 'sent', answer };
}

/** Once to each channel still to reach, all at once (a slow channel holds no other back). */
export async function deliverNow(config: DeliveryConfig, r: DeliveryRecord, log?: Logger): Promise<Delivered[]> {
  return Promise.all(unsentChannels(config, r).map((c) => deliverTo(config, r, c.name, log)));
}

/**
 * `sunset alarms test`: a test message to every channel, whatever kinds it wants, at once; kept nowhere (its
 * idempotency key is new each time). What each answered, in the config's order.
 */
export async function testChannels(config: DeliveryConfig, now = Date.now()): Promise<ChannelAnswer[]> {
  const at = new Date(now).toISOString();
  const r: DeliveryRecord = {
    kind: 'test',
    key: `test/${at}`,
    at,
    host: config.host,
    message: `A test message from sunset on ${config.host}: alarms sent here reach you. Nothing to do.`,
  };
  return Promise.all(
    channelsOf(config).map(async (c) => {
      const answer = await sendTo(c, outgoingOf(r, c.name, webBase(config)), { timeoutMs: config.probeTimeout });
      return { name: c.name, type: c.type, kinds: c.kinds, ...answer };
    }),
  );
}
