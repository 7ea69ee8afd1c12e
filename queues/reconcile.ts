// The reconcile pass: at start and every windows.reconcileEvery, derive every task's next step from its
// latched fields alone and enqueue it (D7). A job scheduler: once per host however many processes run.
import { z } from 'zod';
import type { QueueDef } from './common.js';

export const reconcileSchema = z.object({}).passthrough();
export type ReconcileJob = z.infer<typeof reconcileSchema>;
export const reconcileQueue: QueueDef<typeof reconcileSchema> = {
  base: 'reconcile',
  schema: reconcileSchema,
  retention: { removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
};
export const RECONCILE_SCHEDULER_ID = 'reconcile';
