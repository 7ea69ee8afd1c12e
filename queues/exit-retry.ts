// Request n (1..max) of a chain's exit, or — n = max + 1 — the give-up check.
import { z } from 'zod';
import { CHAIN_RETENTION, chainRefFields, jobId, oneChain, type QueueDef } from './common.js';
import { MAX_EXIT_REQUESTS } from '../src/doctrine/chain.js';

/** n = max + 1: the give-up. */
const GIVE_UP = MAX_EXIT_REQUESTS + 1;
const n = z.number().int().min(1).max(GIVE_UP);
export const exitRetrySchema = z.object({ ...chainRefFields, n }).superRefine(oneChain);
export type ExitRetryJob = z.infer<typeof exitRetrySchema>;
export const exitRetryQueue: QueueDef<typeof exitRetrySchema> = { base: 'exit-retry', schema: exitRetrySchema, retention: CHAIN_RETENTION };
export const exitRetryId = (taskId: string, n: number) => jobId('retry', taskId, n);
export const jobRetryId = (shortId: string, start: string, n: number) => jobId('job-retry', shortId, start, n);
