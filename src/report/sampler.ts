// The fleet sampler: every `windows.sampleEvery` the producers take a census of the fleet (live sessions,
// records, memory by lane, transcript silences, exits and asks since the last census) into a bounded,
// rotating JSON-lines file in stateDir. It answers what one look cannot — ADR-0010's open question:
// does a session ever sit idle for 48 hours in steady state? Everything here reports; nothing acts (D10).
//
// This file is the schedule: one sampler per host (its lock), the timer, taking a sample. Its parts, whose
// names it re-exports: sampler-census.ts (what a sample holds), sampler-file.ts (samples.jsonl),
// sampler-summary.ts (`sunset samples`), and the chart, drawn beside the web's others (src/web/charts.ts).
import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { gatherFleet, type FleetSnapshot } from '../evidence/fleet.js';
import { hooksDir } from '../evidence/hooks.js';
import { pruneHookStates } from '../evidence/hook-events.js';
import { stageFileSync } from '../store/atomic-file.js';
import { stillHolds } from '../store/compare-and-swap.js';
import { tryLockSync, type HeldLock } from '../store/file-lock.js';
import { censusOf, countAuditSince, type Sample } from './sampler-census.js';
import { appendSample, lastSample } from './sampler-file.js';
import { errorMessage } from '../errors.js';

export { censusOf, countAuditSince, IDLE_48H, SILENCE_BUCKETS, type Sample } from './sampler-census.js';
export { appendSample, lastSample, MAX_SAMPLES_BYTES, readSamples, SAMPLES_FILE, SAMPLES_OLD } from './sampler-file.js';
export { summariseSamples, type SamplesSummary } from './sampler-summary.js';
export { samplesChartSvg } from '../web/charts.js';

const H = 3_600_000;

// ---------------------------------------------------------------- taking a sample

export interface SampleDeps {
  now?: () => number;
  /** Tests: a snapshot instead of a real sweep. */
  gather?: () => Promise<FleetSnapshot>;
}

/** Take one census and append it. Exits and asks are counted from where the previous sample stopped. */
export async function takeSample(config: Config, deps: SampleDeps = {}): Promise<Sample> {
  const now = deps.now ?? Date.now;
  const snap = await (deps.gather ? deps.gather() : gatherFleet(config, { now }));
  const prev = lastSample(config.stateDir);
  const census = censusOf(snap);
  let counted: ReturnType<typeof countAuditSince>;
  if (prev) counted = countAuditSince(config.stateDir, prev.auditOffset ?? 0, Date.parse(prev.at));
  else {
    // The first sample counts nothing (there is no "since"); it only marks where the next one starts.
    let size = 0;
    try {
      size = statSync(join(config.stateDir, 'audit.jsonl')).size;
    } catch {
      size = 0;
    }
    counted = { exits: 0, asks: 0, offset: size };
  }
  const sample: Sample = {
    ...census,
    since: prev?.at ?? null,
    exits: prev && counted ? counted.exits : null,
    asks: prev && counted ? counted.asks : null,
    auditOffset: counted?.offset ?? prev?.auditOffset ?? 0,
  };
  appendSample(config.stateDir, sample);
  return sample;
}

// ---------------------------------------------------------------- one sampler per host

interface LockRecord {
  pid: number;
  host: string;
  /** Refreshed at every tick: a lock not refreshed for 3 periods is abandoned, whatever holds its pid now. */
  heartbeat: string;
}

const pidAlive = (pid: number) => Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`);

/** The lock's record, or null when it is not one (unreadable, torn, garbage: its holder is gone). */
function parseLock(text: string | null): LockRecord | null {
  try {
    const r = JSON.parse(text ?? '') as LockRecord;
    return r && typeof r === 'object' ? r : null;
  } catch {
    return null;
  }
}

/**
 * Hold stateDir/sampler.lock for this process: true when it is ours (taken, refreshed, or taken over from
 * a process that is gone or stopped refreshing). Several producers on one host: only one samples. The lock
 * is store/atomic-file.ts's: created exclusively (two takers racing: one wins), an abandoned one broken.
 */
export function holdSamplerLock(stateDir: string, o: { host: string; every: number; now: number; pid?: number }): boolean {
  const file = join(stateDir, 'sampler.lock');
  const me = o.pid ?? process.pid;
  const record = () => `${JSON.stringify({ pid: me, host: o.host, heartbeat: new Date(o.now).toISOString() } satisfies LockRecord)}\n`;
  let held: Buffer | null;
  try {
    held = readFileSync(file);
  } catch {
    held = null;
  }
  if (held && parseLock(held.toString('utf8'))?.pid === me) {
    // ours: refresh the heartbeat, unless a taker replaced it since it was read (then it is theirs)
    const staged = stageFileSync(file, record(), { durable: false });
    if (!stillHolds(file, held)) {
      staged.discard();
      return false;
    }
    staged.commit();
    return true;
  }
  mkdirSync(stateDir, { recursive: true });
  const abandoned = ({ text }: HeldLock): boolean => {
    const cur = parseLock(text);
    return !cur || !pidAlive(cur.pid) || !(o.now - Date.parse(cur.heartbeat) < 3 * o.every);
  };
  return tryLockSync(file, { owner: record, stale: abandoned }) !== null;
}

export function releaseSamplerLock(stateDir: string, pid: number = process.pid): void {
  const file = join(stateDir, 'sampler.lock');
  try {
    if ((JSON.parse(readFileSync(file, 'utf8')) as LockRecord).pid === pid) unlinkSync(file);
  } catch {
    /* not ours, or gone */
  }
}

/** Hook state files not written for this long belong to sessions long gone: the sampler clears them. */
const HOOK_STATE_KEEP = 7 * 24 * H;

export interface Sampler {
  /** Take a sample now if this process holds the lock (tests call it instead of waiting). */
  tick(): Promise<Sample | null>;
  close(): Promise<void>;
}

/**
 * The producers' sampler: the first census after min(sampleEvery, 60 s), then every sampleEvery. Given `sweeps`
 * (the pipeline's shared fleet source), a census rides on a sweep someone else made — the reconcile's, every
 * reconcileEvery — once sampleEvery has passed since the last one, and the sampler's own sweep comes only when
 * none came within RIDE_WAIT of its time: at rest, the reconcile is the only periodic sweep. Only the process
 * holding stateDir/sampler.lock samples. sampleEvery 0 turns it off.
 */
export function startSampler(
  config: Config,
  o: {
    log: Logger;
    now?: () => number;
    gather?: () => Promise<FleetSnapshot>;
    firstAfter?: number;
    sweeps?: (listener: (snap: FleetSnapshot) => void) => () => void;
  },
): Sampler {
  const now = o.now ?? Date.now;
  const every = config.windows.sampleEvery;
  // how long past its time the census waits for someone else's sweep before it sweeps itself
  const rideWait = Math.min(60_000, Math.floor(every / 5));
  let closed = false;
  let running: Promise<Sample | null> | null = null;
  let lastAt = 0;
  let timer: NodeJS.Timeout | null = null;
  const plan = (ms: number) => {
    if (timer) clearTimeout(timer);
    if (closed || every <= 0) return;
    timer = setTimeout(() => void take(), ms);
    timer.unref();
  };
  const take = (snap?: FleetSnapshot): Promise<Sample | null> => {
    if (closed) return Promise.resolve(null);
    if (running) return running;
    running = (async () => {
      try {
        if (!holdSamplerLock(config.stateDir, { host: config.host, every: Math.max(every, 1000), now: now() })) {
          o.log.debug({ event: 'sample:skipped', why: 'another process on this host samples' }, 'sampler: another process holds the lock');
          return null;
        }
        if (closed) return null;
        const gather = snap ? () => Promise.resolve(snap) : o.gather ? o.gather : () => gatherFleet(config, { now, tmux: 'if-needed' });
        const sample = await takeSample(config, { now, gather });
        o.log.info(
          {
            event: 'sample:taken',
            live: sample.live,
            rssBytes: sample.rssBytes,
            longestSilenceMs: sample.silence.longestMs,
            exits: sample.exits,
            asks: sample.asks,
            ...(snap ? { rode: true } : {}),
          },
          `sample: ${sample.live} live sessions`,
        );
        pruneHookStates(hooksDir(config), HOOK_STATE_KEEP, now());
        return sample;
      } catch (err) {
        o.log.warn({ event: 'sample:failed', error: errorMessage(err) }, `sampler: ${errorMessage(err)}`);
        return null;
      } finally {
        running = null;
        lastAt = now();
        plan(every + (o.sweeps ? rideWait : 0));
      }
    })();
    return running;
  };
  const unsubscribe =
    o.sweeps && every > 0
      ? o.sweeps((snap) => {
          // a sweep that measured memory, on a roster that answered, once the census is due (or nearly: within rideWait);
          // its overhead is read last (it is worked out when first read)
          if (!snap.roster.ok || running || closed) return;
          const since = now() - lastAt;
          if ((lastAt === 0 ? since >= 0 : since >= every - rideWait) && snap.overhead !== null) void take(snap);
        })
      : () => undefined;
  if (every > 0) plan(o.firstAfter ?? Math.min(every, 60_000));
  return {
    tick: () => take(),
    close: async () => {
      closed = true;
      unsubscribe();
      if (timer) clearTimeout(timer);
      releaseSamplerLock(config.stateDir);
    },
  };
}
