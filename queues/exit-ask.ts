// The one message: due grace after the chain began (a task's release, a Claude Code job's settling done).
import { z } from 'zod';
import { CHAIN_RETENTION, chainRefFields, jobId, oneChain, type QueueDef } from './common.js';

export const exitAskSchema = z.object(chainRefFields).superRefine(oneChain);
export type ExitAskJob = z.infer<typeof exitAskSchema>;
export const exitAskQueue: QueueDef<typeof exitAskSchema> = { base: 'exit-ask', schema: exitAskSchema, retention: CHAIN_RETENTION };
export const exitAskId = (taskId: string) => jobId('ask', taskId);
export const jobAskId = (shortId: string, start: string) => jobId('job-ask', shortId, start);
