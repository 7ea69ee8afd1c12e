// What a run of the real-client trials (`npm run real-fleet`, `npm run real-agents`) may have left: its processes
// and whether its redis-server still answers. Test-side reads only.
import { readFileSync, readdirSync } from 'node:fs';
import { redisAddress } from '../../src/redis.js';
import { pingOnce } from '../../src/redis/private-server.js';

/** Live processes of a trial's folder: the folder in their argv, or in their environment (HOME). */
export function processesUnder(root: string): string[] {
  const found: string[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      const env = readFileSync(`/proc/${e}/environ`, 'utf8');
      if (argv.includes(root) || env.includes(`HOME=${root}/`)) found.push(`${e} ${argv.replace(/\0/g, ' ').slice(0, 120)}`);
    } catch {
      /* gone, or not ours to read */
    }
  }
  return found;
}

/** Whether a Redis answers PING at this url (once, within a second). */
export async function redisAnswers(url: string): Promise<boolean> {
  return (await pingOnce(redisAddress(url))) === 'pong';
}
