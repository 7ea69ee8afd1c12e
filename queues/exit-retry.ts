// Request n (1..max) of a task's exit, or — n = max + 1 — the give-up check.
import { z } from 'zod';
import { CHAIN_RETENTION, jobId, type QueueDef } from './common.js';

export const exitRetrySchema = z.object({ taskId: z.string().min(1), n: z.number().int().min(1).max(4) });
export type ExitRetryJob = z.infer<typeof exitRetrySchema>;
export const exitRetryQueue: QueueDef<typeof exitRetrySchema> = { base: 'exit-retry', schema: exitRetrySchema, retention: CHAIN_RETENTION };
export const exitRetryId = (taskId: string, n: number) => jobId('retry', taskId, n);
