// An exit request on the rate-limited path: the only road to sessionExit() (D2).
import { z } from 'zod';
import { EXIT_RETENTION, jobId, type QueueDef } from './common.js';
import { MAX_EXIT_REQUESTS } from '../src/doctrine/chain.js';

const n = z.number().int().min(1).max(MAX_EXIT_REQUESTS);

export const sessionExitSchema = z.discriminatedUnion('reason', [
  z.object({ reason: z.literal('request'), taskId: z.string().min(1), sessionId: z.string().min(1), n }),
  z.object({ reason: z.literal('expire'), sessionId: z.string().min(1), expireKey: z.string().min(1), n }),
  z.object({
    reason: z.literal('job'),
    sessionId: z.string().min(1),
    shortId: z.string().min(1),
    start: z.string().min(1),
    n,
  }),
  // a chain of a kind added later (src/pipeline/chain-kinds/), as a chain job names it
  z.object({ reason: z.literal('chain'), kind: z.string().min(1), key: z.string().min(1), sessionId: z.string().min(1), n }),
  z.object({
    reason: z.literal('person'),
    sessionId: z.string().min(1),
    by: z.string(),
    why: z.string(),
    override: z.boolean(),
    at: z.string(),
  }),
]);
export type SessionExitJob = z.infer<typeof sessionExitSchema>;
export const sessionExitQueue: QueueDef<typeof sessionExitSchema> = {
  base: 'session-exit',
  schema: sessionExitSchema,
  retention: EXIT_RETENTION,
};
export const requestExitId = (taskId: string, sessionId: string, n: number) => jobId('exit', taskId, sessionId, n);
export const expireExitId = (sessionId: string, procStart: string, n: number) => jobId('expire', sessionId, procStart, n);
export const personExitId = (sessionId: string, at: number) => jobId('person', sessionId, at);
export const jobExitId = (shortId: string, procStart: string, n: number) => jobId('job-exit', shortId, procStart, n);
