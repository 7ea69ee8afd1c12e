// Hand undelivered records to the alarm-delivery queue: one job per record per channel, under an id made of the
// record's id and the channel's name (an add under an id already there adds nothing; a job that used up its
// attempts and rests as failed is tried again). What to hand is read from stateDir (src/alarms/outbox.ts).
import type { Job } from 'bullmq/dist/cjs/classes/index.js';
import type { Config } from '../config.js';
import type { Producer } from '../../queues/common.js';
import { deliveryId, type alarmDeliverySchema } from '../../queues/alarm-delivery.js';
import { alarmId } from '../store/alarm-id.js';
import { pendingDeliveries, readMarker, unsentChannels, type Pending } from './outbox.js';

export type DeliveryProducer = Producer<typeof alarmDeliverySchema>;

async function enqueue(p: DeliveryProducer, list: Pending[]): Promise<number> {
  const jobs = await Promise.all(
    list.map((d) => p.add(deliveryId(alarmId(d.kind, d.key), d.channel), { op: 'deliver', kind: d.kind, key: d.key, channel: d.channel })),
  );
  await Promise.all(jobs.map((j: Job) => j.getState().then((s) => (s === 'failed' ? j.retry('failed') : undefined))));
  return list.length;
}

/** One record's deliveries (an alarm just raised, a digest just made). */
export function enqueueRecord(
  p: DeliveryProducer,
  config: Pick<Config, 'stateDir' | 'alarms'>,
  kind: string,
  key: string,
): Promise<number> {
  const m = readMarker(config.stateDir, kind, key);
  if (!m || m.delivered) return Promise.resolve(0);
  return enqueue(
    p,
    unsentChannels(config, m.alarm).map((c) => ({ kind, key, channel: c.name })),
  );
}

/** Every undelivered one (at start, and at every tick: what a restart, a crash or another process left). */
export function enqueuePending(p: DeliveryProducer, config: Pick<Config, 'stateDir' | 'alarms'>): Promise<number> {
  return enqueue(p, pendingDeliveries(config));
}
