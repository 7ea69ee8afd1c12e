// An alarm's id: stable (from its kind and key, raised once ever), short, the same on every listing — and, with
// a channel's name, the idempotency key a receiver deduplicates its deliveries by.
import { createHash } from 'node:crypto';

export const alarmId = (kind: string, key: string) => createHash('sha256').update(`${kind}\0${key}`).digest('hex').slice(0, 8);
