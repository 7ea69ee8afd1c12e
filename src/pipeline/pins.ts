// One doctrine for both reapers. Claude Code's daemon retires a settled, unattached background session after an
// hour idle, reading no task file — so a lane awaiting a human would be ended by it. While a background
// session's Driver task is not terminal (awaiting-human, active, any state sunset does not know), sunset pins
// it in Claude Code's own pins file (`~/.claude/jobs/pins.json`), which that reaper skips; once the task is
// terminal, sunset takes back only the pins it made (listed in stateDir/pins-made.json). A person's pin is
// never touched, every other byte of the file survives, and the write is atomic and re-checked: the file is
// swapped only while it still holds the bytes the new list was computed from (else read again and redone).
import { existsSync, mkdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PipelineDeps } from './deps.js';
import type { FleetSnapshot } from '../evidence/fleet.js';
import { parsePins, pinsFile } from '../evidence/claude-code.js';
import { stageFileSync } from '../store/atomic-file.js';
import { stillHolds } from '../store/compare-and-swap.js';
import { readMade, writeMade } from '../store/pins-made.js';
import { errorCode, errorMessage } from '../errors.js';

export interface PinPlan {
  add: string[];
  remove: string[];
}

/**
 * Pure: which pins sunset should add (sessions a person is waiting on, not pinned yet) and take back (pins it
 * made whose task is terminal now, or whose session has gone).
 */
export function planPins(current: readonly string[], made: readonly string[], wanted: readonly string[]): PinPlan {
  const cur = new Set(current);
  const want = new Set(wanted);
  return {
    add: wanted.filter((id) => !cur.has(id)),
    remove: made.filter((id) => !want.has(id) && cur.has(id)),
  };
}

/** The short ids of live background sessions whose driving task is not terminal: those Claude Code's reaper must not retire. */
export function protectedByTask(snap: FleetSnapshot): string[] {
  const out = new Set<string>();
  for (const s of snap.sessions) {
    if (s.kind !== 'background' || s.id === null || s.live !== true) continue;
    const open =
      s.evidence.openTasks.length > 0 || (s.evidence.task !== null && !s.evidence.task.terminal) || s.evidence.invalidTasks.length > 0;
    if (open) out.add(s.id);
  }
  return [...out].sort();
}

/** The CLI's own format: 2-space indent, no final newline. */
const format = (ids: string[]) => JSON.stringify(ids, null, 2);

export interface PinSync {
  ok: boolean;
  added: string[];
  removed: string[];
  error?: string;
}

/** One change of the pins file, as planned from the bytes it held (`before`: null, no file). */
export interface PinChange {
  file: string;
  before: Buffer | null;
  current: string[];
  plan: PinPlan;
  /** The pins sunset made that are still its own (a person has not unpinned them). */
  stillMade: string[];
}

/** How a run writes pins: the real run's (here), or a dry run's, which never pins and says what it would. */
export interface PinWriter {
  /** Remember which pins are sunset's (stateDir/pins-made.json). */
  remember(stateDir: string, made: string[]): void;
  /** Make the change; 'again': the file changed meanwhile, read it again. */
  change(deps: Pick<PipelineDeps, 'config' | 'log' | 'audit'>, x: PinChange): Promise<PinSync | 'again'>;
}

/**
 * Bring Claude Code's pins in line with the tasks. A pins file that does not parse is left exactly as it is
 * (and said); a roster that failed changes nothing (missing evidence: no pin is taken back).
 */
export async function syncPins(deps: Pick<PipelineDeps, 'config' | 'log' | 'audit' | 'acts'>, snap: FleetSnapshot): Promise<PinSync> {
  const dir = deps.config.fleet.claudeDir;
  if (!deps.config.fleet.pinProtected || dir === null || !snap.roster.ok) return { ok: true, added: [], removed: [] };
  // which tasks are open, or which sessions live, cannot be told: no pin is added or taken back on that
  if (snap.probeErrors.tasks || snap.probeErrors.proc)
    return { ok: false, added: [], removed: [], error: 'tasks or /proc unreadable: pins left as they are' };
  const file = pinsFile(dir);
  const stateDir = deps.config.stateDir;
  const wanted = protectedByTask(snap);
  for (let attempt = 1; attempt <= 5; attempt++) {
    let before: Buffer | null = null;
    try {
      before = readFileSync(file);
    } catch (err) {
      if (errorCode(err) !== 'ENOENT')
        return { ok: false, added: [], removed: [], error: `cannot read ${file}: ${errorCode(err) ?? errorMessage(err)}` };
    }
    const parsed = before === null ? ({ ok: true, pins: new Set<string>() } as const) : parsePins(before.toString('utf8'), file);
    if (!parsed.ok) return { ok: false, added: [], removed: [], error: `${parsed.error}: left as it is; no pin added or taken back` };
    const current = [...parsed.pins];
    const made = readMade(stateDir);
    const plan = planPins(current, made, wanted);
    // a pin sunset made whose session a person has since unpinned is no longer sunset's to remember
    const stillMade = made.filter((id) => parsed.pins.has(id) || plan.add.includes(id));
    if (!plan.add.length && !plan.remove.length) {
      if (stillMade.length !== made.length) deps.acts.pins.remember(stateDir, stillMade);
      return { ok: true, added: [], removed: [] };
    }
    const r = await deps.acts.pins.change(deps, { file, before, current, plan, stillMade });
    if (r !== 'again') return r;
  }
  return { ok: false, added: [], removed: [], error: `${file} kept changing under 5 attempts; trying again at the next pass` };
}

/** The real run's pins: the file swapped only while it still holds the bytes the change was planned from. */
export const filePins: PinWriter = {
  remember: writeMade,
  async change(deps, { file, before, current, plan, stillMade }) {
    const stateDir = deps.config.stateDir;
    // keep the file's own order; add at the end, take back only ours
    const next = [...current.filter((id) => !plan.remove.includes(id)), ...plan.add];
    // remember what we are about to add before adding it: a crash in between leaves a pin we know is ours
    writeMade(stateDir, [...new Set([...stillMade, ...plan.add])]);
    if (!existsSync(dirname(file))) mkdirSync(dirname(file), { recursive: true });
    // the CLI's own lock (a directory beside the file, stale after 5 s): it re-reads the file inside it, so
    // neither writer loses the other's pin
    const unlock = await cliLock(`${file}.lock`);
    if (!unlock)
      return {
        ok: false,
        added: [],
        removed: [],
        error: `${file}.lock is held (Claude Code is writing its pins): trying again at the next pass`,
      };
    let unchanged: boolean;
    try {
      const staged = stageFileSync(file, format(next));
      unchanged = before === null ? !existsSync(file) : stillHolds(file, before);
      if (unchanged) staged.commit();
      else staged.discard(); // another writer (the CLI, a person) changed it meanwhile: read it again
    } finally {
      unlock();
    }
    if (!unchanged) return 'again';
    writeMade(stateDir, [...new Set([...stillMade.filter((id) => !plan.remove.includes(id)), ...plan.add])]);
    deps.audit({ event: 'pins:changed', added: plan.add, removed: plan.remove });
    deps.log.info(
      { event: 'pins:changed', added: plan.add, removed: plan.remove },
      [
        plan.add.length ? `pinned ${plan.add.join(', ')} (a task still open: Claude Code's reaper skips a pinned session)` : '',
        plan.remove.length ? `took back sunset's pin of ${plan.remove.join(', ')} (its task is finished)` : '',
      ]
        .filter(Boolean)
        .join('; '),
    );
    return { ok: true, added: plan.add, removed: plan.remove };
  },
};

/** Claude Code's pins lock: `pins.json.lock`, a directory (mkdir is the test-and-set), stale 5 s after its last change. */
async function cliLock(path: string, waitMs = 2000): Promise<(() => void) | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(path);
      return () => {
        try {
          rmdirSync(path);
        } catch {
          /* broken as stale by another writer */
        }
      };
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') return null;
    }
    try {
      if (Date.now() - statSync(path).mtimeMs > 5000) {
        rmdirSync(path); // left by a writer that died holding it
        continue;
      }
    } catch {
      continue; // released meanwhile
    }
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 50));
  }
}
