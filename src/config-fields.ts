// The fields the config's schemas share: a duration (ms, or "60s"), a command's argv, a path.
import { z } from 'zod';
import { parseDuration } from './duration.js';

export const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'takes a duration: a number of ms, or a string like "500ms", "60s", "15m", "48h", "2d"' });
    return z.NEVER;
  }
  return ms;
});
export const argv = z.array(z.string().min(1)).min(1);
export const path = z.string().min(1);
