// What a session waits for, in a person's words: the CLI's table and the fleet page say it the same way.
import type { SessionView } from '../evidence/fleet.js';
import { formatDuration } from '../duration.js';

/** "a person decides" / "next: ask at 10:15:00 UTC, when the grace ends" / "re-checked every 5m" */
export function dueWords(s: SessionView): string {
  const d = s.due;
  if (!d) return '';
  if (!d.passes) return 'stays until a person decides (it will not pass by itself)';
  const step = d.step ? `${d.step}${d.n ? ` #${d.n}` : ''}` : 'the next step';
  const when = d.at ? ` at ${d.at.replace('T', ' ').slice(0, 19)} UTC` : '';
  const waits = d.waitsFor.length ? `, when ${d.waitsFor.join(', ')} pass${d.waitsFor.length === 1 ? 'es' : ''}` : '';
  const again = d.recheckMs ? ` (re-checked every ${formatDuration(d.recheckMs)})` : '';
  return `next: ${step}${when}${waits}${again}`;
}
