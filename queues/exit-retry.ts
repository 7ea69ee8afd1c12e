// Request n (1..max) of a chain's exit, or — n = max + 1 — the give-up check.
import { z } from 'zod';
import { CHAIN_RETENTION, chainRefFields, jobId, oneChain, type QueueDef } from './common.js';

export const exitRetrySchema = z.object({ ...chainRefFields, n: z.number().int().min(1).max(4) }).superRefine(oneChain);
export type ExitRetryJob = z.infer<typeof exitRetrySchema>;
export const exitRetryQueue: QueueDef<typeof exitRetrySchema> = { base: 'exit-retry', schema: exitRetrySchema, retention: CHAIN_RETENTION };
export const exitRetryId = (taskId: string, n: number) => jobId('retry', taskId, n);
export const jobRetryId = (shortId: string, start: string, n: number) => jobId('job-retry', shortId, start, n);
