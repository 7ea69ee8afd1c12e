// Alarm delivery: one job per alarm (or digest) per channel, retried with exponential backoff while sunset runs
// (a failing channel holds no other back), and a tick — a job scheduler, and once at every start — that enqueues
// whatever stateDir says is undelivered (src/alarms/outbox.ts: the record is the truth, the job only carries it)
// and sends the digest when it is due.
import { z } from 'zod';
import { jobId, type QueueDef } from './common.js';

export const alarmDeliverySchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('deliver'), kind: z.string().min(1), key: z.string().min(1), channel: z.string().min(1) }),
  z.object({ op: z.literal('tick') }),
]);
export type AlarmDeliveryJob = z.infer<typeof alarmDeliverySchema>;

/** Attempts of one job before it rests as failed (the tick brings a failed one back: it is tried for as long as sunset runs). */
export const DELIVERY_ATTEMPTS = 12;
/** The longest wait between two attempts. */
export const MAX_BACKOFF_MS = 3_600_000;

export const alarmDeliveryQueue: QueueDef<typeof alarmDeliverySchema> = {
  base: 'alarm-delivery',
  schema: alarmDeliverySchema,
  retention: {
    attempts: DELIVERY_ATTEMPTS,
    // the worker's backoffStrategy: alarms.retryDelay, doubled each attempt, at most MAX_BACKOFF_MS
    backoff: { type: 'alarm-backoff' },
    removeOnComplete: { age: 86400, count: 1000 },
    removeOnFail: { age: 30 * 86400, count: 1000 },
  },
};

/** The wait before attempt n + 1: `delay`·2^(n−1), at most MAX_BACKOFF_MS. */
export const backoffMs = (attemptsMade: number, delay: number) => Math.min(MAX_BACKOFF_MS, delay * 2 ** Math.max(0, attemptsMade - 1));

export const deliveryId = (alarmId: string, channel: string) => jobId('deliver', alarmId, channel);
export const DELIVERY_SCHEDULER_ID = 'alarm-tick';
