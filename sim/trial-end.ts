// The end of a real-client trial (`npm run real-fleet`, `npm run real-agents`): its flow raced against a Ctrl-C,
// then its parts removed in order, each once, whatever the flow did — what could not be ended is said.
import type { StopSignals } from '../src/stop-signals.js';

/** A part's start, waited for (a failed one started nothing). */
export const started = <T>(p: Promise<T> | null): Promise<T | null> => (p ? p.catch(() => null) : Promise.resolve(null));

/**
 * Wait for the flow or a stop signal; then `ending()` (from here on the flow starts nothing new) and each removal step. `stoppedPartWay`: the flow threw (said as
 * `<name>: stopped part-way: …`); `notEnded`: the steps that failed, each with why (said as `could not end: …`).
 */
export async function endTrial(
  name: string,
  flow: Promise<unknown>,
  stop: StopSignals,
  out: (s: string) => void,
  steps: ReadonlyArray<[string, () => Promise<unknown>]>,
  ending: () => void,
): Promise<{ stoppedPartWay: boolean; notEnded: string[] }> {
  flow.catch(() => undefined);
  let stoppedPartWay = false;
  try {
    await Promise.race([flow, stop.signalled]);
  } catch (e) {
    stoppedPartWay = true;
    out(`${name}: stopped part-way: ${e instanceof Error ? e.message : String(e)}`);
  }
  stop.cleaning();
  ending();
  const notEnded: string[] = [];
  for (const [what, step] of steps) await step().catch((e: Error) => notEnded.push(`${what} (${e.message})`));
  if (notEnded.length) out(`could not end: ${notEnded.join('; ')}`);
  return { stoppedPartWay, notEnded };
}
