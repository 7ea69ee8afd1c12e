// The fleet page (/): every roster row, the verdict on it and why, the figures and memory by lane above, the
// task timelines below, rendered on the server as plain HTML (escaped by `html`), refreshed by the inline
// client script. Words come from REASONS, so a person reads why, not a code.
import { dueWords } from '../cli/verdict-words.js';
import { html, type Html } from './html.js';
import { laneChart, relative, timeline } from './charts.js';
import { reasonWords, type MemoryNow, type Row, type TaskTimeline } from './model.js';
import type { OverTime } from './over-time.js';
import { formatBytes, type Report } from '../report/report.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import type { ResumeEntry } from '../report/resume.js';
import { page, plural, redisBanner, rosterBanner, scroll, type RedisSeen } from './page-shell.js';
import { exitedSection, overTimeSection } from './fleet-history.js';
import { unreadableMessage, type UnreadableFinding, type UnreadableState } from '../doctrine/unreadable.js';
import { alarmId } from '../store/alarms.js';

const VERDICT_ORDER: Record<string, number> = { eligible: 0, protected: 1, gone: 2, record: 3 };
const cls = (s: string) => s.toLowerCase().replace(/[^a-z0-9-]/g, '');

function problems(list: string[]): Html {
  if (!list.length) return html``;
  return html`<details class="problems card"><summary>${list.length} problem${list.length === 1 ? '' : 's'} a person should hear about</summary><ul>${list.map((p) => html`<li>${p}</li>`)}</ul></details>`;
}

function reasonsCell(s: SessionView): Html {
  if (s.verdict === 'record') return html`<span class="sub">a roster record with no process: never asked, exited or counted</span>`;
  if (s.verdict === 'gone') return html`<span class="sub">its process has ended</span>`;
  if (s.verdict === 'eligible') {
    const n = s.next;
    const next = n ? `${n.step}${n.n ? ` ${n.n}` : ''}${n.at ? ` at ${n.at.slice(11, 19)} UTC` : ''}` : '';
    return html`<span>nothing protects it</span>${next ? html`<span class="sub">next: ${next}</span>` : ''}${reaperLine(s)}`;
  }
  return html`<ul class="reasons">${s.reasons.map((r) => html`<li>${reasonWords(r)}<code>${r}</code></li>`)}</ul>${s.notes.map((n) => html`<span class="sub note">${n}</span>`)}${s.due ? html`<span class="sub due" data-passes="${String(s.due.passes)}">${dueWords(s)}</span>` : ''}${reaperLine(s)}`;
}

/** The other reaper: when Claude Code's own daemon would retire this session. */
function reaperLine(s: SessionView): Html {
  const r = s.claudeReaper;
  if (!r) return html``;
  return html`<span class="sub reaper" data-at="${r.at ?? ''}">Claude Code's reaper: ${r.at ? `would retire it at ${r.at.slice(11, 19)} UTC` : `not while ${r.why}`}</span>`;
}

export function agentViewBanner(snap: Pick<FleetSnapshot, 'agentViews' | 'agentViewsOpen'>): Html {
  if (!snap.agentViews) return html``;
  // a view narrowed by --cwd lists (and so protects) only the background sessions under its folder
  const under = snap.agentViewsOpen.flatMap((v) => (v.cwd === null ? [] : [v.cwd]));
  if (under.length && under.length === snap.agentViewsOpen.length)
    return html`<div class="banner warn" id="agent-view" role="status"><b>A person has the agent view open</b> on ${under.map((d, i) => html`${i ? ', ' : ''}<code>${d}</code>`)} (<code>claude agents --cwd</code>): it lists only the background sessions under ${under.length > 1 ? 'those folders' : 'that folder'}, so they count as watched (<code>attach-unknown</code>) and none of them is asked or stopped until it closes; the others are judged as usual.</div>`;
  return html`<div class="banner warn" id="agent-view" role="status"><b>A person has the agent view open</b> (<code>claude agents</code>${snap.agentViews > 1 ? `, ${snap.agentViews} of them` : ''}): from it any background session can be opened, so every background session counts as watched (<code>attach-unknown</code>) and none is asked or stopped until it closes.</div>`;
}

function sessionRow(r: Row, now: number): Html {
  const s = r.s;
  const live = s.live === true;
  const ev = s.evidence;
  return html`<tr class="${live ? '' : 'muted'}" data-id="${s.id ?? s.sessionId}" data-session="${s.sessionId}" data-verdict="${s.verdict}">
<td data-sort="${s.label}"><b class="mono">${s.label}</b><span class="sub">${s.agent ? `${s.agent} · ` : ''}${s.kind}${s.pid !== null ? ` · pid ${s.pid}` : ''}</span></td>
<td data-sort="${s.taskId ?? ''}">${s.taskId ? html`<span class="mono">${s.taskId}</span> <span class="badge s-${cls(s.taskState ?? '')}">${s.taskState}</span>` : html`<span class="sub">${live ? 'untasked' : ''}</span>`}</td>
<td data-sort="${VERDICT_ORDER[s.verdict] ?? 9}"><span class="badge v-${s.verdict}${s.verdict === 'protected' && s.due && !s.due.passes ? ' held' : ''}" title="${s.verdict === 'protected' ? (s.due?.passes === false ? (s.reasons.includes('task-not-terminal') ? 'held: its task is still open — its chain begins when the task is finished' : 'held: it will not pass by itself — a person decides') : 'waiting: its protections pass on their own') : ''}">${s.verdict === 'protected' && s.due?.passes === false ? 'held' : s.verdict}</span></td>
<td>${reasonsCell(s)}</td>
<td class="num" data-sort="${live && ev.silenceMs !== null ? Math.round(ev.silenceMs) : ''}">${live ? relative(ev.silenceMs) : '—'}</td>
<td class="num" data-sort="${live && s.rssBytes !== null ? s.rssBytes : ''}">${live ? formatBytes(s.rssBytes) : '—'}</td>
<td data-sort="${r.step}">${r.step ? html`<span class="step-text">${r.step}</span>` : ''}${r.timeline ? timeline(r.timeline, { now }) : ''}</td>
</tr>`;
}

function overheadWords(o: NonNullable<Report['memory']['overhead']>): string {
  const k = o.byKind;
  return `beside its sessions Claude Code holds: daemon ${formatBytes(k.daemon.bytes)}, warm spares ${formatBytes(k.spare.bytes)}, people's clients ${formatBytes(k.clients.bytes)}, other ${formatBytes(k.other.bytes)}`;
}

function openAlarmsFigure(n: number): Html {
  const title = n ? `${plural(n, 'alarm')} no person has acknowledged: see Decisions` : 'no open alarm';
  return html`<a class="figure figure-link ${n ? 'bad' : ''}" id="open-alarms" href="/decisions#alarms-card" title="${title}"><b>${n}</b><span>open alarm${n === 1 ? '' : 's'} →</span></a>`;
}

function figure(value: string | number, label: string, tone = '', title?: string): Html {
  return html`<div class="figure ${tone}"${title ? html` title="${title}"` : ''}><b>${value}</b><span>${label}</span></div>`;
}

export interface FleetPageData {
  /** This process is a dry run: the steps shown are what it would do. */
  dryRun?: boolean;
  /** Redis as `sunset up` last saw it: away, the page says so. */
  redis?: RedisSeen;
  snap: FleetSnapshot;
  /** Built with `mem` (reportNow), so its memory figures carry the eligible give-back and the pressure flag. */
  report: Report;
  rows: Row[];
  tasks: TaskTimeline[];
  token: string | null;
  mem: MemoryNow;
  /** The resume ledger (loadResumeEntries), newest first. */
  exited: ResumeEntry[];
  /** Alarms no person has acknowledged yet: a figure that links to Decisions. */
  openAlarms?: number;
  overTime: OverTime;
  /** windows.sampleEvery, ms (0: the sampler is off). */
  sampleEvery: number;
  /** claude-code-unreadable: this sweep's finding, and the episode kept in stateDir. */
  unreadable?: { finding: UnreadableFinding | null; state: UnreadableState | null };
}

/**
 * claude-code-unreadable: what this sweep found of Claude Code's files, else the episode `sunset up` keeps open (a
 * sweep on the files may not see what the CLI's did). The alarm's id, once raised.
 */
export function unreadableBanner(u: FleetPageData['unreadable']): Html {
  const f = u?.finding ?? (u?.state?.key ? u.state.finding : null);
  if (!u || !f) return html``;
  const st = u.state;
  const alarm = st?.key
    ? html` Alarm <a class="mono" href="/decisions#alarms-card">${alarmId('claude-code-unreadable', st.key)}</a> raised ${st.raisedAt ?? ''}.`
    : html` No alarm yet: one is raised once this has lasted <code>windows.unreadableFor</code>.`;
  const when = u.finding ? '' : html` <span class="sub">(last seen ${st?.lastSeen ?? '?'} on the CLI's sweep)</span>`;
  return html`<div class="banner bad" id="claude-code-unreadable" role="alert"><b>Claude Code's files do not read as sunset knows them</b> (<code>claude-code-unreadable</code>). ${unreadableMessage(f, st?.version ?? null)}${alarm}${when}</div>`;
}

function pressureBanner(mem: MemoryNow): Html {
  if (!mem.pressure) return html``;
  return html`<div class="banner warn" id="pressure" role="status"><b>Under the memory floor — exits go largest first.</b> MemAvailable is ${formatBytes(mem.availableBytes)}, under <code>memoryFloorMB</code> (${formatBytes(mem.floorBytes)}). The doctrine does not bend: only the order of the sessions that may already leave changes.</div>`;
}

export function fleetPage(d: FleetPageData): string {
  const { snap, report } = d;
  const now = snap.at;
  const lanes = report.memory.byLane;
  const give = report.memory.eligible;
  const mem = d.mem;
  const rows = [...d.rows].sort(
    (a, b) =>
      (VERDICT_ORDER[a.s.verdict] ?? 9) - (VERDICT_ORDER[b.s.verdict] ?? 9) ||
      (b.s.rssBytes ?? -1) - (a.s.rssBytes ?? -1) ||
      (a.s.sessionId < b.s.sessionId ? -1 : 1),
  );
  const body = html`<h1>The fleet</h1>
<p class="lede">Every roster row, the verdict on it and why. A finished session leaves by its own exit path (<code>claude stop</code>, or <code>/exit</code> typed into its pane), never by a signal: released, then one message, then at most three exit requests, then a person decides.</p>
${d.dryRun ? html`<div class="banner warn" id="dry-run" role="status"><b>Dry run.</b> The steps below are what sunset would do (<code>would-…</code> in the log and audit), on a schedule of its own: nothing is released, asked, requested or exited, and nothing the real run reads is written.</div>` : ''}
${rosterBanner(snap)}${redisBanner(d.redis)}
${unreadableBanner(d.unreadable)}
${agentViewBanner(snap)}
${pressureBanner(mem)}
<div class="figures">
${figure(report.roster.live, 'live sessions')}
${figure(formatBytes(report.memory.totalBytes), 'held by live sessions')}
${report.memory.overhead ? figure(formatBytes(report.memory.overhead.bytes), 'fleet overhead', '', overheadWords(report.memory.overhead)) : ''}
${figure(`${give.sessions} · ${formatBytes(give.bytes)}`, 'eligible now · would give back', give.sessions ? 'ok' : '', `eligible now: ${plural(give.sessions, 'session')}, would give back ${formatBytes(give.bytes)}`)}
${figure(formatBytes(mem.availableBytes), mem.floorBytes === null ? 'MemAvailable · no floor' : `MemAvailable · floor ${formatBytes(mem.floorBytes)}`, mem.pressure ? 'bad' : '', mem.pressure ? 'under the memory floor — exits go largest first' : undefined)}
${figure(`${lanes.finished.sessions} · ${formatBytes(lanes.finished.bytes)}`, 'finished, still running')}
${figure(`${lanes['awaiting-human'].sessions} · ${formatBytes(lanes['awaiting-human'].bytes)}`, 'awaiting a human', lanes['awaiting-human'].sessions ? 'warn' : '')}
${figure(`${report.roster.records} · ${report.roster.gone}`, 'records · gone')}
${openAlarmsFigure(d.openAlarms ?? 0)}
</div>
<section class="card"><h2>Memory by lane</h2>${laneChart(report.memory)}
<p class="legend-note">Process-tree RSS of live sessions, by the state of the task that drives each. Lanes awaiting a human are a person's decision (<a href="/decisions">Decisions</a>); finished lanes are on their way out.</p></section>
${problems(snap.problems)}
<section class="card"><h2>Sessions <span class="sub">${snap.sessions.length} roster rows; click a heading to sort</span></h2>
${
  rows.length
    ? scroll(html`<table id="sessions" class="sortable"><thead><tr>
<th tabindex="0">Session</th><th tabindex="0">Task</th><th tabindex="0" data-type="number">Verdict</th><th tabindex="0">Why</th>
<th tabindex="0" class="num" data-type="number">Silent</th><th tabindex="0" class="num" data-type="number">Memory</th><th tabindex="0">Step</th>
</tr></thead><tbody>${rows.map((r) => sessionRow(r, now))}</tbody></table>`)
    : html`<p class="empty">${snap.roster.ok ? 'The roster is empty.' : 'No rows: the roster did not answer.'}</p>`
}
</section>
<section class="card"><h2>Task timelines <span class="sub">finished tasks, latest step first</span></h2>
${d.tasks.length ? html`<div class="tasks-grid">${d.tasks.map((t) => html`<div class="task-tl" data-task="${t.id}"><h3><span class="mono">${t.id}</span> <span class="badge s-${cls(t.state)}">${t.state}</span> <span class="sub">${t.step}${t.sessionId ? html` · session <span class="mono">${t.sessionId}</span>` : ''}</span></h3>${timeline(t.timeline, { labels: true, now })}</div>`)}</div>` : html`<p class="empty">No finished task has been released yet.</p>`}
</section>
${exitedSection(d.exited, now)}
${overTimeSection(d.overTime, d.sampleEvery)}`;
  return page({ title: 'Fleet', nav: 'fleet', host: snap.host, token: d.token, at: snap.at, body });
}
