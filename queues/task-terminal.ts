// A task turned terminal: release its loop (never its session), then schedule the ask.
import { z } from 'zod';
import { CHAIN_RETENTION, jobId, type QueueDef } from './common.js';

export const taskTerminalSchema = z.object({ taskId: z.string().min(1) });
export type TaskTerminalJob = z.infer<typeof taskTerminalSchema>;
export const taskTerminalQueue: QueueDef<typeof taskTerminalSchema> = {
  base: 'task-terminal',
  schema: taskTerminalSchema,
  retention: CHAIN_RETENTION,
};
export const taskTerminalId = (taskId: string) => jobId('terminal', taskId);
