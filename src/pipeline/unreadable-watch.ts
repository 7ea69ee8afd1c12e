// claude-code-unreadable's thin shell: every sweep on the CLI's word (the reconcile's, at start and every
// reconcileEvery) is handed to the pure decision (src/doctrine/unreadable.ts); this raises the one alarm through
// the AlarmStore when the decision says so, and closes it when Claude Code's files read again. The episode is
// kept in stateDir (stateDir/claude-code-unreadable.json), so a restart neither raises it twice nor forgets it.
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import type { PipelineDeps } from './deps.js';
import type { FleetSnapshot } from '../evidence/fleet.js';
import { claudeVersion } from '../evidence/claude-code.js';
import { alarmId } from '../store/alarms.js';
import { readJson, writeJsonAtomic } from '../store/state-files.js';
import { errorMessage } from '../errors.js';
import { nextUnreadable, unreadableMessage, type UnreadableState } from '../doctrine/unreadable.js';

export const ALARM_KIND = 'claude-code-unreadable' as const;

const stateFile = (stateDir: string) => join(stateDir, 'claude-code-unreadable.json');

/** The episode as last kept: null while Claude Code's files read (or none was ever found). */
export function readUnreadableState(stateDir: string): UnreadableState | null {
  const s = readJson<UnreadableState>(stateFile(stateDir));
  return s && typeof s.since === 'string' && s.finding && typeof s.finding === 'object' ? s : null;
}

/** The alarm raised for the episode, as `sunset alarms` lists it: its id and when; null while none is. */
export function unreadableAlarm(stateDir: string): { id: string; key: string; raisedAt: string; since: string } | null {
  const s = readUnreadableState(stateDir);
  return s?.key && s.raisedAt ? { id: alarmId(ALARM_KIND, s.key), key: s.key, raisedAt: s.raisedAt, since: s.since } : null;
}

/** One sweep through the decision; raises or closes the alarm as it says. Never throws for a sweep's trouble. */
export async function onUnreadableSweep(deps: PipelineDeps, snap: FleetSnapshot): Promise<void> {
  // only the CLI's word can say the files read again: a sweep on the files cannot see a session they do not show
  if (snap.rosterFrom !== 'cli' || !snap.roster.ok || !snap.claudeFiles) return;
  const { stateDir } = deps.config;
  const prev = readUnreadableState(stateDir);
  const { state, act } = nextUnreadable(
    prev,
    { finding: snap.claudeFiles.unreadable, checked: snap.claudeFiles.checked, at: snap.at },
    deps.config.windows.unreadableFor,
  );
  if (act.act === 'raise' && state) {
    const version = await claudeVersion(deps.config.fleet.claudeCommand, deps.config.probeTimeout);
    state.version = version;
    const f = state.finding;
    await deps.alarms.raise(ALARM_KIND, act.key, {
      taskId: null,
      sessionId: null,
      message: unreadableMessage(f, version),
      version,
      since: state.since,
      sessions: f.sessions,
      checked: f.checked,
      files: f.files,
      meanwhile: f.meanwhile,
    });
  } else if (act.act === 'clear' && prev) {
    const id = alarmId(ALARM_KIND, act.key);
    const why = `Claude Code's files read again (${snap.claudeFiles.checked} live background session${snap.claudeFiles.checked === 1 ? '' : 's'} looked at): closed by sunset`;
    deps.alarms.ack(id, { by: 'sunset', why, audit: deps.audit });
    deps.log.info({ event: 'claude-code:readable', alarmId: id, since: prev.since }, `claude-code-unreadable ${id}: ${why}`);
  }
  if (state === prev) return;
  if (state) writeJsonAtomic(stateFile(stateDir), state);
  else rmSync(stateFile(stateDir), { force: true });
}

/** Hear every sweep this process gathers (producers role; a dry run raises nothing). Returns the closer, or null. */
export function startUnreadableWatch(deps: PipelineDeps): (() => Promise<void>) | null {
  if (deps.dryRun || deps.config.fleet.claudeDir === null || !deps.fleet.onSweep) return null;
  let chain: Promise<void> = Promise.resolve();
  const off = deps.fleet.onSweep((snap) => {
    chain = chain
      .then(() => onUnreadableSweep(deps, snap))
      .catch((err) =>
        deps.log.warn({ event: 'claude-code:unreadable-failed', error: errorMessage(err) }, `claude-code-unreadable: ${errorMessage(err)}`),
      );
  });
  return async () => {
    off();
    await chain;
  };
}
