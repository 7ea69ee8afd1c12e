import { AdmitStore, memoryOf, shownBy } from '../cap/admit.js';
import { memoryPhrase, memoryUnknown, refusal, refusalJson, type Refusal } from '../cap/memory.js';
import { countCap, leavingPhrase, type CapCount } from '../cap/cap.js';
import { gatherFleet } from '../evidence/fleet.js';
import { expireFactsReader } from '../store/expire-state.js';
import { formatBytes } from '../report/report.js';
import { formatDuration } from '../duration.js';
import { EXIT, config, type Command } from './common.js';
import { redisWhere } from '../redis.js';
import { redisForCommand } from '../redis/target.js';
import { errorMessage } from '../errors.js';

export const capCommand: Command = {
  name: 'cap',
  summary: 'live sessions against the ceiling; who is on the way out; lanes holding slots',
  usage: `usage: sunset cap [--json] [--config FILE]

Live sessions (roster rows with a live pid; unknown liveness counts as live; records never
count) against the ceiling (config "cap"), plus admissions in flight (\`sunset admit\` leases the
roster does not show yet) — the count \`sunset admit\` uses. Then the finished sessions already on
their way out (task terminal, asked or requested, not yet exited or given up; and untasked ones
expire is requesting), and the lanes awaiting a human that hold slots. And memory, the other
limit \`sunset admit\` keeps: MemAvailable (config meminfoPath), a typical session (the median RSS
of the live sessions, else admit.sessionMB), how many more starts memoryFloorMB leaves room for.

Exit codes: 0 printed, 1 the roster probe failed, 2 bad usage or config.`,
  options: { json: { type: 'boolean' } },
  async run({ values }, io) {
    const cfg = config(values, io);
    const snap = await gatherFleet(cfg, { roster: 'cli', expireFacts: expireFactsReader(cfg.stateDir) });
    const c = countCap(snap, cfg.cap);
    // Admissions in flight live in Redis; when it cannot be reached the fleet alone still says something true.
    let admitting: number | null = null;
    let queued: number | null = null;
    let redisError: string | null = null;
    // the Redis `sunset up` runs on (its private one too); none running is said as the reason the count is unknown
    const target = await redisForCommand(cfg).catch((err: Error) => {
      redisError = err.message;
      return null;
    });
    const store = target && AdmitStore.connect(target);
    try {
      if (store) {
        const now = Date.now();
        const leases = await store.leases(now);
        const shown = shownBy(snap, leases);
        admitting = leases.filter((x) => !shown.has(x.id)).length;
        queued = await store.queued(now);
      }
    } catch (err) {
      redisError = `Redis unreachable (${redisWhere(target!)}: ${errorMessage(err)})`;
    } finally {
      await store?.close();
    }
    const counted = c.live + (admitting ?? 0);
    const ok = snap.roster.ok;
    // the next start, as `sunset admit` would judge it now (starts in flight and queued ahead count against memory)
    const mem = memoryOf(cfg, snap);
    const next = refusal({ counted, held: admitting ?? 0, queued: queued ?? 0 }, c.ceiling, c.leaving.length, mem);
    const memory = { ...(refusalJson(next).memory as object | null), ...(memoryUnknown(mem) ? { error: memoryUnknown(mem) } : {}) };
    if (values.json) {
      io.out(
        JSON.stringify(
          {
            at: new Date(snap.at).toISOString(),
            host: snap.host,
            ...(snap.roster.ok ? {} : { error: snap.roster.error }),
            ceiling: c.ceiling,
            // a failed roster leaves the count unknown, not zero
            live: ok ? c.live : null,
            liveUnknown: ok ? c.liveUnknown : null,
            admitting,
            counted: ok ? counted : null,
            free: ok ? Math.max(0, c.ceiling - counted) : null,
            reached: ok ? counted >= c.ceiling : null,
            queued,
            memory: mem.floorBytes === null ? null : memory,
            refusedBy: ok ? next.by : null,
            records: c.records,
            gone: c.gone,
            leaving: c.leaving,
            awaitingHuman: c.awaitingHuman,
            ...(redisError ? { redisError } : {}),
            problems: snap.problems,
          },
          null,
          2,
        ),
      );
    } else if (!snap.roster.ok) io.err(`sunset cap: the roster probe failed, so the count is unknown: ${snap.roster.error}`);
    else io.out(formatCap(c, { admitting, queued, at: snap.at, redisError, next }));
    // the roster's failure is said once, above (it is also the first of the problems)
    for (const p of snap.problems) if (snap.roster.ok || p !== snap.roster.error || values.json) io.err(`sunset: ${p}`);
    return snap.roster.ok ? EXIT.ok : EXIT.failure;
  },
};

/** "memory: room for 3 more starts — MemAvailable 5.1 GB, a typical session 500 MB (…), memoryFloorMB 2.0 GB" */
export function memoryLine(m: NonNullable<Refusal['memory']>): string {
  if (m.availableBytes === null)
    return `memory: UNKNOWN — MemAvailable cannot be read from ${m.meminfoPath}: \`sunset admit\` refuses new starts`;
  if (m.reached) return `memory: AT THE FLOOR — \`sunset admit\` refuses new starts (${memoryPhrase(m)})`;
  const typical = m.typical.from === 'median' ? `the median of ${m.typical.sampled} live` : 'admit.sessionMB: none measured';
  const more = (m.room ?? 0) - (m.starts - 1);
  return `memory: room for ${more} more start${more === 1 ? '' : 's'} — MemAvailable ${formatBytes(m.availableBytes)}, a typical session ${formatBytes(m.typical.bytes)} (${typical}), memoryFloorMB ${formatBytes(m.floorBytes)}`;
}

export function formatCap(
  c: CapCount,
  o: { admitting: number | null; queued: number | null; at: number; redisError?: string | null; next?: Refusal },
): string {
  const out: string[] = [];
  const counted = c.live + (o.admitting ?? 0);
  const parts = [`${c.live} live session${c.live === 1 ? '' : 's'}`];
  if (o.admitting) parts.push(`${o.admitting} admitted, not on the roster yet`);
  const state = counted >= c.ceiling ? 'AT THE CEILING: `sunset admit` refuses new starts' : `${c.ceiling - counted} free`;
  out.push(`cap: ${counted}/${c.ceiling} — ${state} (${parts.join(', ')})`);
  if (c.liveUnknown) out.push(`  (${c.liveUnknown} counted as live because their liveness cannot be told)`);
  if (o.redisError) out.push(`  admissions in flight unknown: ${o.redisError}`);
  if (o.queued) out.push(`  ${o.queued} start${o.queued === 1 ? '' : 's'} queued by \`sunset admit --wait\``);
  const m = o.next?.memory;
  if (m) out.push(memoryLine(m));
  out.push(`on their way out: ${leavingPhrase(c.leaving.length)}`);
  for (const x of c.leaving) {
    const what = x.via === 'task' ? `task ${x.taskId}` : 'untasked (expire)';
    const step = x.step === 'asked' ? 'asked' : `requested ${x.requests}×`;
    const since = x.since ? `, ${formatDuration(o.at - Date.parse(x.since))} ago` : '';
    out.push(`  ${x.label.padEnd(10)} ${what}: ${step}${since}`);
  }
  const held = c.awaitingHuman.reduce((a, x) => a + (x.rssBytes ?? 0), 0);
  out.push(
    `lanes awaiting a human holding slots: ${c.awaitingHuman.length}${c.awaitingHuman.length ? ` (${formatBytes(held)}) — a person's decision; sunset does not act on them` : ''}`,
  );
  for (const x of c.awaitingHuman) out.push(`  ${x.label.padEnd(10)} task ${x.taskId}  ${formatBytes(x.rssBytes)}`);
  return out.join('\n');
}
