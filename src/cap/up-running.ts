// Is a `sunset up` running this host's workers? `sunset admit --wait` asks, to say plainly when nothing will free a
// slot by itself: with no `up`, no finished session is asked to leave, so a slot frees only when a session ends on
// its own or a person ends it. The evidence is BullMQ's own: the workers connected to this host's session-exit
// queue (Queue#getWorkersCount, Redis CLIENT LIST). A look that fails is "unknown" and says nothing.
import type { Config } from '../config.js';
import { QUEUE_PREFIX, queueName } from '../config.js';
import { redisLink } from '../redis.js';
import { within } from '../stop-signals.js';
import type { Limit } from './memory.js';

export type UpRunning = 'running' | 'not-running' | 'unknown';

/** The queue whose workers only `sunset up` (role workers) runs. */
export const UP_QUEUE = 'session-exit';

export async function upRunning(config: Config, o: { timeoutMs?: number } = {}): Promise<UpRunning> {
  // loaded here: admit without --wait never needs BullMQ
  const { Queue } = await import('bullmq/dist/cjs/classes/index.js');
  const link = redisLink(config, { oneShot: true });
  const queue = new Queue(queueName(UP_QUEUE, config.host), { connection: link.connection(), prefix: QUEUE_PREFIX });
  queue.on('error', () => undefined);
  try {
    const n = await within(o.timeoutMs ?? 3000, queue.getWorkersCount(), null);
    return n === null ? 'unknown' : n > 0 ? 'running' : 'not-running';
  } finally {
    await within(1000, queue.close(), undefined);
    await within(1000, link.close(), undefined);
  }
}

/**
 * What admit says when it waits with no `up` running, worded by the limits that refused: a slot frees only when a
 * session ends, but memory can also free up by itself (other programs on the host use less).
 */
export function noUpLine(config: Config, by: readonly Limit[] = ['count']): string {
  const count = by.includes('count');
  const memory = by.includes('memory');
  const frees =
    count && memory
      ? 'no slot frees by itself — only when a session ends or a person ends one; memory frees when that happens or when other programs use less'
      : memory
        ? 'memory frees only when other programs on this host use less, or a session ends or a person ends one'
        : 'no slot frees by itself — only when a session ends or a person ends one';
  return `sunset up is not running (no worker on ${queueName(UP_QUEUE, config.host)}): nothing asks finished sessions to leave, so ${frees}. Waiting anyway (Ctrl-C to stop); start \`sunset up\` to have finished sessions asked.`;
}

/** Said when `up` starts while admit waits. */
export const UP_BACK_LINE = 'sunset up is running now: finished sessions are being asked to leave';
