// A sweep's third step: the tmux server, only where it is needed — an interactive session's pane, the clients
// attached to it, a draft in its input box — in one call for the panes and the drafts of the panes the session files
// name (a sweep of the pipeline's, `tmux: 'if-needed'`, reads it only for rows whose verdict could turn on it).
import type { RosterRow } from './roster.js';
import { isInTree, type ProcTable } from './proc.js';
import type { SessionFile } from './sessions.js';
import { draftOnScreen, panesAndScreens, panesScreens, type Pane } from './tmux.js';
import { agentCliOf } from '../agents/clis.js';
import { findPane } from './files.js';
import { decide, type Evidence, type Policy } from '../doctrine/verdict.js';
import type { Built, Sweep } from './row-evidence.js';

export async function paneEvidence(s: Sweep, built: Built[]): Promise<void> {
  const procs = s.procs;
  const f = s.config.fleet;
  const wanting = built.filter((b) => b.tmux);
  if (wanting.length && procs) {
    const named = wanting.flatMap((b) => (b.sf?.paneId ? [b.sf.paneId] : []));
    const read = await panesAndScreens(f.tmuxSocket, named, s.config.probeTimeout);
    const screens = read.screens;
    if (!read.panes.ok) {
      s.probeErrors.tmux = read.panes.error;
      s.problems.push(read.panes.error);
      for (const b of wanting) b.failures.push('tmux');
    } else {
      const panes = read.panes.panes;
      const found = wanting.map((b) => ({ b, ...paneOf(panes, procs, b.row.pid!, b.sf) }));
      // a pane the files did not name (the test fleet's, a session file that names another): its draft in a second call
      const more = found.flatMap((x) => (x.pane && !screens.has(x.pane.paneId) ? [x.pane.paneId] : []));
      if (more.length) for (const [k, v] of await panesScreens(f.tmuxSocket, more, s.config.probeTimeout)) screens.set(k, v);
      for (const { b, pane, byFile, byTree } of found) {
        const sf = b.sf;
        const e = b.evidence;
        if (sf?.paneId && !byFile)
          b.paneNotes.push(
            byTree
              ? `its session file names tmux pane ${sf.paneId}, but ${byTree.paneId} holds it: typing into ${byTree.paneId}`
              : `its session file names tmux pane ${sf.paneId} (${sf.tmux}), which is not on the configured tmux server (fleet.tmuxSocket ${f.tmuxSocket ?? 'default'})`,
          );
        e.pane = pane
          ? {
              paneId: pane.paneId,
              dead: pane.dead,
              clients: pane.clients,
              sessionName: pane.sessionName,
              ...(byFile ? { from: 'session-file' } : { from: 'process-tree' }),
            }
          : null;
        if (pane) screenEvidence(b, screens.get(pane.paneId) ?? null);
        if (b.row.attached !== true) {
          e.attached = pane ? pane.clients > 0 : false;
          if (pane) e.attachedBy = 'tmux';
        }
      }
    }
  }
  // an interactive row that needed no tmux: a protection that never passes by itself holds it, whatever tmux shows
  for (const b of built)
    if (b.row.kind === 'interactive' && b.row.pid !== null && b.evidence.live && procs && !b.tmux) b.evidence.tmux = 'not-read';
}

/**
 * What its screen says: a person's draft in its input box (each CLI's own rule), and for an agent CLI beside Claude
 * Code its busy marker (a turn in flight: it is busy whatever its transcript said). Unread or no box seen: unknown.
 */
function screenEvidence(b: Built, screen: string | null): void {
  const e = b.evidence;
  if (!b.row.agent) {
    e.draft = screen === null ? null : draftOnScreen(screen);
    return;
  }
  const cli = agentCliOf(b.row.agent);
  e.draft = screen === null || !cli ? null : cli.draftOnScreen(screen);
  if (screen !== null && cli?.busyOnScreen(screen) === true) e.status = 'busy';
}

/**
 * Could this interactive row's verdict be anything but held by a protection that never passes by itself, whatever
 * tmux shows? Judged with tmux's most permissive word (in a pane, nobody attached, no draft): tmux's evidence only
 * ever adds protections, so when even that verdict is held for good (a task not done, a chain ended), so is the
 * real one, and the sweep needs no tmux call for it. Pure.
 */
export function couldAct(row: RosterRow, evidence: Evidence, starting: boolean, policy: Policy, at: number): boolean {
  const best: Evidence = {
    ...evidence,
    pane: { paneId: '%0', dead: false, clients: 0, sessionName: '' },
    draft: false,
    attached: row.attached === true,
  };
  const d = decide(
    { id: row.id, sessionId: row.sessionId, kind: row.kind, pid: row.pid, evidence: best, ...(starting ? { starting } : {}) },
    policy,
    at,
  );
  return d.verdict === 'eligible' || d.due?.passes !== false;
}

/** The pane that holds an interactive session: the one its session file names (when it holds the process), else the one whose tree does. */
function paneOf(
  panes: Pane[],
  procs: ProcTable,
  pid: number,
  sf: SessionFile | undefined,
): { pane: Pane | null; byFile?: Pane; byTree: Pane | null } {
  const byTree = findPane(panes, procs, pid);
  const named = sf?.paneId ? panes.find((p) => p.paneId === sf.paneId && !p.dead) : undefined;
  const byFile = named && isInTree(procs, named.panePid, pid) ? named : undefined;
  return { pane: byFile ?? byTree, byFile, byTree };
}
