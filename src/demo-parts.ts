// What `sunset demo` has started — a Redis of its own (maybe), the fleet (stand-in agents, an attach client, a
// private tmux server), sunset itself, its keys in Redis — and their removal. A Ctrl-C may come at any moment
// (between two agents' starts, while sunset starts, during the summary, after the end of --keep), so each part
// is held as the promise of its start, the removal waits for a start under way rather than missing what it
// makes, and once the removal has begun nothing new starts (check()). Each step is bounded, the whole within the
// 10 s a Ctrl-C allows (src/stop-signals.ts): the stand-ins are the demo's own, so they are ended, not asked.
import { rmSync } from 'node:fs';
import { dropHostKeys } from './redis.js';
import type { PrivateRedis } from './private-redis.js';
import type { Running } from './pipeline/up.js';
import { within } from './stop-signals.js';

type Fleet = import('../sim/fleet/fleet.js').TestFleet;

/** Thrown by check() once the removal has begun: the demo's flow stops where it is. */
export class Halted extends Error {
  constructor() {
    super('the demo is being stopped');
  }
}

/** Per step, ms. Only one start can be under way at a time (the flow is sequential), so the worst case is one
 * wait for a start, the close, two drops, the fleet's end, the close's rest and a redis-server's: 9.5 s, under the
 * 10 s bound. */
const WAIT_START = 1500; // for a start under way (sunset, the fleet, a private redis-server) to finish
const CLOSE_PART = 1000; // each of sunset's parts (an exit job confirming is not worth keeping here)
const CLOSE_ALL = 2000;
const DROP_KEYS = 1000;
const DESTROY = 2000;
const SHUTDOWN = 1000;
const CLOSE_REST = 500; // a part still closing once the fleet has ended (an exit job writing its end)

export class DemoParts {
  halted = false;
  readonly timers: NodeJS.Timeout[] = [];
  redis: Promise<{ url: string; own: PrivateRedis | null } | null> | null = null;
  fleet: Promise<Fleet> | null = null;
  sunset: Promise<Running> | null = null;
  /** The demo's host on its Redis: every key of it goes. */
  keys: { url: string; host: string } | null = null;

  /** Call right before starting anything: after the removal has begun, nothing new is started. */
  check(): void {
    if (this.halted) throw new Halted();
  }

  /**
   * Remove everything started: sunset (its workers, its web), its keys, the fleet (its processes, its tmux server,
   * its files), a private Redis. Resolves to what could not be removed in time (empty: all of it is gone).
   */
  async remove(): Promise<string[]> {
    this.halted = true;
    for (const t of this.timers) clearTimeout(t);
    const left: string[] = [];
    // a start that failed started nothing; one still under way past the wait is left, and said
    const started = async <T>(what: string, p: Promise<T> | null): Promise<T | null> => {
      if (!p) return null;
      const r = await within(
        WAIT_START,
        p.then(
          (v) => ({ v }),
          () => null,
        ),
        LATE,
      );
      if (r === LATE) left.push(what);
      return r === LATE || r === null ? null : r.v;
    };
    const removed = async (what: string, ms: number, p: Promise<unknown>) => {
      if (
        (await within(
          ms,
          p.then(
            () => true,
            () => false,
          ),
          false,
        )) === false
      )
        left.push(what);
    };
    const running = await started('sunset', this.sunset);
    // a part of sunset still closing past its time (a worker waiting on its job) holds nothing that outlives the
    // process: the demo's process ends once this is done, and its keys are dropped after it
    // the parts left closing past their time: a worker on an exit job that confirms once the fleet has ended
    const stillClosing = running ? await within(CLOSE_ALL + 500, running.close(CLOSE_PART, CLOSE_ALL), ['sunset']) : [];
    const keys = this.keys;
    const drop = async () => keys && (await removed('its keys in Redis', DROP_KEYS, dropHostKeys(keys.url, keys.host)));
    await drop();
    const fleet = await started('the fleet', this.fleet);
    if (fleet) {
      await removed('the fleet', DESTROY, fleet.destroy());
      // its folder (the stand-ins' tasks, transcripts, HOME, config) goes even when the fleet's end outlasts its
      // step: the process exits right after this, and a destroy still under way would never reach its rm
      removeFolder(fleet.root);
    }
    // a worker left closing (an exit job confirming, which the fleet's end has just concluded) writes its job's end
    // now, into the folder and Redis: the folder is cleared again as it writes, for a moment, then the keys
    if (fleet && stillClosing.length) await clearFor(fleet.root, CLOSE_REST);
    if (!left.includes('its keys in Redis')) await drop();
    const redis = await started('its redis-server', this.redis);
    if (redis?.own) await removed('its redis-server', SHUTDOWN, redis.own.shutdown());
    // a stand-in or a worker that was still writing into the folder (a second Ctrl-C reaches the whole process group)
    // has ended by now: once more, then say it if it is still there
    if (fleet && !removeFolder(fleet.root)) left.push(`its folder ${fleet.root}`);
    return left;
  }
}

const LATE = Symbol('late');

/** Remove a folder of the demo's own; true once it is gone (a stand-in writing into it meanwhile is retried). */
function removeFolder(dir: string): boolean {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    return true;
  } catch {
    return false;
  }
}

/** Remove a folder, and again every 100 ms for `ms` (something still writing into it puts it back). */
async function clearFor(dir: string, ms: number): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    removeFolder(dir);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Said when a stopped demo has removed all it started. */
export const STOPPED_LINE = 'The demo was stopped: its stand-in sessions, its tmux server, its folder and its keys in Redis are gone.';
