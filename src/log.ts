// Structured logs (pino): JSON lines on stderr for machines; tests read them.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = 'info', dest: NodeJS.WritableStream | number = 2): Logger {
  const stream = typeof dest === 'number' ? pino.destination({ fd: dest, sync: true }) : dest;
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, stream as pino.DestinationStream);
}

export const silentLogger: Logger = pino({ level: 'silent' });
