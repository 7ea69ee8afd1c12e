// What a session waits for, in a person's words: the CLI's table and the fleet page say it the same way.
import type { SessionView } from '../evidence/fleet.js';
import { formatDuration } from '../duration.js';

/** "a person decides" / "next: ask at 10:15:00 UTC, when the grace ends" / "re-checked every 5m" */
export function dueWords(s: SessionView): string {
  const d = s.due;
  if (!d) return '';
  if (!d.passes) {
    // an open task is finished by its Driver or a person; the others wait for a person alone
    if (s.reasons.includes('task-not-terminal'))
      return `stays while its task is ${s.evidence.task?.state ?? 'open'}: its chain begins when the task is finished`;
    return 'stays until a person decides (it will not pass by itself)';
  }
  const STEP: Record<string, string> = {
    ask: 'the ask',
    request: 'exit request',
    'give-up': 'the give-up',
    expire: 'the expire request',
    wait: 'the next request',
  };
  const step = d.step ? `${STEP[d.step] ?? d.step}${d.n ? ` ${d.n}` : ''}` : 'the next step';
  const when = d.at ? ` at ${d.at.replace('T', ' ').slice(0, 19)} UTC` : '';
  const waits = d.waitsFor.length ? `, when ${d.waitsFor.join(', ')} pass${d.waitsFor.length === 1 ? 'es' : ''}` : '';
  const again = d.recheckMs ? ` (re-checked every ${formatDuration(d.recheckMs)})` : '';
  return `next: ${step}${when}${waits}${again}`;
}
