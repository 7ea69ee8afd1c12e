// The decisions page (/decisions): what sunset leaves to a person — the lanes awaiting a human, the open
// alarms with an Acknowledge form, and an exit request form for any session. Apart from the fleet page.
import { html, type Html } from './html.js';
import { pct, relative } from './charts.js';
import { reasonWords } from './model.js';
import { formatBytes, type Report } from '../report/report.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import type { ListedAlarm } from '../store/alarms.js';
import { page, plural, redisBanner, rosterBanner, scroll, type RedisSeen } from './page-shell.js';

export interface DecisionsPageData {
  redis?: RedisSeen;
  snap: FleetSnapshot;
  report: Report;
  /** Every alarm with its id and acknowledgement (Alarms.listed()): the open ones are listed. */
  alarms: ListedAlarm[];
  token: string | null;
  /** A dry run changes nothing: its page offers no acknowledgement. */
  dryRun?: boolean;
}

function ackForm(a: ListedAlarm): Html {
  return html`<form class="ack-form" data-alarm="${a.id}" autocomplete="off">
<input type="text" name="reason" maxlength="500" placeholder="reason (audited)" aria-label="reason for acknowledging alarm ${a.id}">
<button type="submit">Acknowledge</button><output></output></form>`;
}

function exitForm(id: string, protectedHow: string | null): Html {
  return html`<form class="exit-form" data-id="${id}" autocomplete="off">
<input type="text" name="reason" maxlength="500" required placeholder="reason (audited)" aria-label="reason for the exit of ${id}">
${protectedHow ? html`<label title="${protectedHow}"><input type="checkbox" name="override"> override: my decision</label>` : ''}
<button type="submit">Request exit</button><output></output></form>`;
}

function liveView(snap: FleetSnapshot, sessionId: string | null | undefined): SessionView | null {
  if (!sessionId) return null;
  return snap.sessions.find((s) => (s.sessionId === sessionId || s.id === sessionId) && s.live === true) ?? null;
}

export function decisionsPage(d: DecisionsPageData): string {
  const { snap, report } = d;
  const now = snap.at;
  const waiting = report.awaitingHuman;
  const held = waiting.filter((w) => w.live);
  const heldBytes = held.reduce((n, w) => n + (w.rssBytes ?? 0), 0);
  const share = report.memory.totalBytes ? heldBytes / report.memory.totalBytes : 0;
  const oldest = waiting.find((w) => w.waitedMs !== null);
  const known = d.alarms.filter(
    (a) => a.kind === 'session-will-not-exit' || a.kind === 'cap-reached' || a.kind === 'claude-code-unreadable',
  );
  const alarms = known.filter((a) => !a.ack).sort((a, b) => (a.at < b.at ? 1 : -1));
  const acked = known.length - alarms.length;

  // the header counts the lanes the table lists; the memory is what their running sessions hold
  const idle = waiting.length - held.length;
  const headline = waiting.length
    ? html`<p class="headline"><b>${formatBytes(heldBytes)}</b> across <b>${waiting.length}</b> lane${waiting.length === 1 ? '' : 's'} awaiting a human, <b>${pct(share)}</b> of the fleet's ${formatBytes(report.memory.totalBytes)}.${idle ? html` <span class="aside">(${idle === waiting.length ? (idle === 1 ? 'its session is not running' : 'none has a running session') : `${idle} of them ${idle === 1 ? 'has' : 'have'} no running session`}.)</span>` : ''}${oldest ? html` The oldest, <span class="mono">${oldest.taskId}</span>, has waited <b>${relative(oldest.waitedMs)}</b>.` : ''}</p>`
    : html`<p class="headline">No lane is awaiting a human.</p>`;

  const alarmRows = alarms.map((a) => {
    const v = liveView(snap, a.sessionId);
    return html`<tr data-kind="${a.kind}" data-alarm="${a.id}"><td data-sort="${a.at}">${relative(now - Date.parse(a.at))} ago<span class="sub">${a.at.replace('T', ' ').slice(0, 19)} UTC</span></td>
<td><span class="badge k-${a.kind}">${a.kind}</span><span class="sub mono">${a.id}</span></td>
<td>${a.message}${a.taskId ? html`<span class="sub">task <span class="mono">${a.taskId}</span></span>` : ''}${a.sessionId ? html`<span class="sub">session <span class="mono">${a.sessionId}</span></span>` : ''}</td>
<td class="num" data-sort="${v?.rssBytes ?? ''}">${v ? formatBytes(v.rssBytes) : a.kind === 'cap-reached' ? '' : 'not running'}</td>
<td>${v ? exitForm(v.sessionId, v.verdict === 'protected' ? v.reasons.map(reasonWords).join('; ') : null) : ''}${d.dryRun ? '' : ackForm(a)}</td></tr>`;
  });

  const laneRows = waiting.map((w) => {
    const v = liveView(snap, w.sessionId);
    return html`<tr id="lane-${w.taskId}" data-task="${w.taskId}"><td class="nowrap" data-sort="${w.taskId}"><span class="mono">${w.taskId}</span></td>
<td data-sort="${v?.label ?? ''}">${v ? html`<span class="mono">${v.label}</span><span class="sub">${v.kind} · pid ${v.pid}</span>` : html`<span class="sub">${w.sessionId ? 'not running' : 'no session named'}</span>`}</td>
<td class="num" data-sort="${w.rssBytes ?? ''}">${w.live ? formatBytes(w.rssBytes) : '—'}</td>
<td class="num" data-sort="${w.waitedMs ?? ''}"><b>${relative(w.waitedMs)}</b><span class="sub">since ${w.waitingSince ? w.waitingSince.replace('T', ' ').slice(0, 16) : '?'} UTC, from ${w.waitingSinceFrom}</span></td>
<td>${v ? exitForm(v.sessionId, v.verdict === 'protected' ? v.reasons.map(reasonWords).join('; ') : null) : ''}</td></tr>`;
  });

  const body = html`<h1>Decisions</h1>
<p class="lede">What sunset leaves to a person. It never acts on a lane awaiting a human, nor goes past three exit requests: bounding those is your decision. A request made here goes through the same rate-limited queue as <code>sunset exit</code>, is judged on fresh evidence, and is recorded with your reason.</p>
${rosterBanner(snap)}${redisBanner(d.redis)}
<section class="card"><h2>Lanes awaiting a human <span class="sub">oldest first</span></h2>
${headline}
${waiting.length ? scroll(html`<table id="awaiting" class="sortable"><thead><tr><th tabindex="0">Task</th><th tabindex="0">Session</th><th tabindex="0" class="num" data-type="number">Memory</th><th tabindex="0" class="num" data-type="number">Waited</th><th class="nosort">Decide</th></tr></thead><tbody>${laneRows}</tbody></table>`) : ''}
</section>
<section class="card" id="alarms-card"><h2 id="alarms-head">Alarms <span class="sub">${alarms.length ? `${plural(alarms.length, 'open alarm')}: sessions that will not exit, and refused starts` : 'sessions that will not exit, and refused starts'}</span></h2>
${alarms.length ? scroll(html`<table id="alarms" class="sortable"><thead><tr><th tabindex="0">When</th><th tabindex="0">Kind</th><th tabindex="0">What</th><th tabindex="0" class="num" data-type="number">Memory</th><th class="nosort">Decide</th></tr></thead><tbody>${alarmRows}</tbody></table>`) : html`<p class="empty">${acked ? 'No open alarms.' : 'No alarms.'}</p>`}
<p class="legend-note">${acked ? `${plural(acked, 'alarm')} acknowledged, not listed: ` : ''}an alarm you have dealt with is closed by <i>Acknowledge</i> (or <code>sunset alarms ack ID</code>): it stays in the log, with who closed it and why (<code>sunset alarms --all</code>). What to do with each kind: docs/operations.md.</p>
</section>
<section class="card"><h2>Any session</h2>
<form class="exit-form" autocomplete="off"><input type="text" name="id" required placeholder="session id or sessionId" aria-label="session id">
<input type="text" name="reason" maxlength="500" required placeholder="reason (audited)" aria-label="reason">
<label><input type="checkbox" name="override"> override its protection: my decision</label><button type="submit">Request exit</button><output></output></form>
<p class="legend-note">A record, a session that has gone, or an interactive session in no tmux pane cannot be reached by any override.</p>
</section>`;
  return page({ title: 'Decisions', nav: 'decisions', host: snap.host, token: d.token, at: snap.at, body });
}
