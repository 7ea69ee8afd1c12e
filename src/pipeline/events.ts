// One event vocabulary: each decision of the pipeline is one named event, written to the audit log (with the
// evidence it stood on) and to the log (without it), under the same name. docs/operations.md lists them.
import type { PipelineDeps } from './deps.js';
import type { AuditEntry } from '../store/audit.js';

export type Decision =
  | 'task:released'
  | 'exit:asked'
  | 'exit:requested'
  | 'exit:gave-up'
  | 'exit:calling'
  | `exit:${'exited' | 'still-running' | 'spared' | 'refused' | 'gone' | 'failed'}`
  | 'exit:person-request'
  | 'exit:person-joined'
  | 'exit:person-cancelled'
  | 'chain:ended'
  | 'chain:session-ended'
  | 'expire:requested'
  | 'expire:gave-up'
  // resume, kept (src/store/kept.ts): a copy of an exited session's transcript made, or not
  | 'resume:kept'
  | 'resume:not-kept'
  // a dry run's steps (src/pipeline/dry-run.ts)
  | 'would-release'
  | 'would-ask'
  | 'would-request'
  | 'would-give-up'
  | 'would-exit'
  | 'would-expire'
  | 'would-end';

type Level = 'info' | 'warn';

/**
 * Record a decision: the audit gets every field (evidence included), the log every field but the evidence,
 * and `message` in a person's words. `audit: false` logs only (a replay that latched nothing).
 */
export function decided(
  deps: Pick<PipelineDeps, 'audit' | 'log'>,
  event: Decision,
  fields: Record<string, unknown>,
  message: string,
  o: { level?: Level; audit?: boolean } = {},
): void {
  // both built field by field: V8 makes a literal that spreads after a field, or a rest spread, a slow dictionary object
  if (o.audit !== false) {
    const entry: AuditEntry = { event };
    for (const k in fields) entry[k] = fields[k];
    deps.audit(entry);
  }
  // the log line: every field but the evidence
  const brief: Record<string, unknown> = { event };
  for (const k in fields) if (!EVIDENCE.has(k) && k !== 'verdict') brief[k] = fields[k];
  if (fields.verdict) brief.verdict = fields.verdict;
  deps.log[o.level ?? 'info'](brief, message);
}

/** What the audit keeps and the log leaves out. */
const EVIDENCE = new Set(['evidence', 'reasons', 'next', 'rssBytes']);
