// What `sunset verdict --json` prints (DESIGN §8), and the API's sessions: one object per roster row.
import type { FleetSnapshot, SessionView } from './fleet.js';

/** The JSON `sunset verdict --json` prints for one session (DESIGN §8). */
export function sessionJson(s: SessionView) {
  // field by field, in this order (no spread mid-literal: V8 makes such an object in dictionary mode, ~6 KB a row)
  const o: Record<string, unknown> = {
    id: s.id,
    sessionId: s.sessionId,
    label: s.label,
    name: s.name,
    kind: s.kind,
    // the agent CLI that runs it (docs/agents/): claude-code, codex, gemini
    agent: s.agent ?? 'claude-code',
    pid: s.pid,
    live: s.live,
    taskId: s.taskId,
    taskState: s.taskState,
    verdict: s.verdict,
    reasons: s.reasons,
    notes: s.notes,
    // when its next step is due and what it waits for, protected sessions too (passes: false = a person decides)
    due: s.due ?? null,
  };
  // the other reaper: when Claude Code's own daemon would retire it (background sessions)
  if (s.claudeReaper) o.claudeReaper = s.claudeReaper;
  o.next = s.next;
  o.evidence = s.evidence;
  o.rssBytes = s.live ? s.rssBytes : null;
  return o;
}

export function snapshotJson(f: FleetSnapshot) {
  return {
    at: new Date(f.at).toISOString(),
    host: f.host,
    ...(f.roster.ok ? {} : { error: f.roster.error }),
    sessions: f.sessions.map(sessionJson),
    ...(f.agentViews ? { agentViews: f.agentViews, agentViewsOpen: f.agentViewsOpen } : {}),
    overhead: f.overhead,
    // Claude Code's files that do not read as sunset knows them (null: they read, or were not read)
    claudeCodeUnreadable: f.claudeFiles?.unreadable ?? null,
    problems: f.problems,
  };
}
