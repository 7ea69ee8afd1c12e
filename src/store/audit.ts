// The audit log: one JSON line per decision, with the evidence it stood on (stateDir/audit.jsonl).
import { join } from 'node:path';
import { appendJsonLine } from './state-files.js';

export interface AuditEntry {
  event: string;
  taskId?: string | null;
  sessionId?: string | null;
  [k: string]: unknown;
}

export type Audit = (e: AuditEntry) => void;

export function fileAudit(stateDir: string, now: () => number = Date.now): Audit {
  const file = join(stateDir, 'audit.jsonl');
  return (e) => appendJsonLine(file, { at: new Date(now()).toISOString(), ...e });
}
