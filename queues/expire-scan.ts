// The expire scan: a job scheduler every windows.expireEvery, once per host however many processes run.
import { z } from 'zod';
import type { QueueDef } from './common.js';

export const expireScanSchema = z.object({ dryRun: z.boolean().default(false) });
export type ExpireScanJob = z.infer<typeof expireScanSchema>;
export const expireScanQueue: QueueDef<typeof expireScanSchema> = {
  base: 'expire-scan',
  schema: expireScanSchema,
  retention: { removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
};
export const EXPIRE_SCHEDULER_ID = 'expire-scan';
