// The one message: due at releasedAt + grace.
import { z } from 'zod';
import { CHAIN_RETENTION, jobId, type QueueDef } from './common.js';

export const exitAskSchema = z.object({ taskId: z.string().min(1) });
export type ExitAskJob = z.infer<typeof exitAskSchema>;
export const exitAskQueue: QueueDef<typeof exitAskSchema> = { base: 'exit-ask', schema: exitAskSchema, retention: CHAIN_RETENTION };
export const exitAskId = (taskId: string) => jobId('ask', taskId);
