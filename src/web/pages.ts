// The fleet and decisions pages, rendered on the server as plain HTML (escaped by `html`), refreshed by
// the inline client script. Words come from REASONS, so a person reads why, not a code.
import { dueWords } from '../cli/verdict-words.js';
import { html, raw, type Html } from './html.js';
import { CSS } from './style.js';
import { CLIENT_JS } from './client.js';
import { laneChart, pct, relative, timeline } from './charts.js';
import { reasonWords, resumeLines, type MemoryNow, type Row, type TaskTimeline } from './model.js';
import { CHART_WIDTH, type OverTime } from './over-time.js';
import { formatBytes, type Report } from '../report/report.js';
import { formatDuration } from '../duration.js';
import type { FleetSnapshot, SessionView } from '../evidence/fleet.js';
import type { ListedAlarm } from '../store/alarms.js';
import type { ResumeEntry } from '../report/resume.js';

type Nav = 'fleet' | 'decisions' | 'login';

interface Shell {
  title: string;
  nav: Nav;
  host: string;
  token: string | null;
  at: number | null;
  body: Html;
}

const NAV: Array<[Nav | 'queues' | 'metrics', string, string]> = [
  ['fleet', '/', 'Fleet'],
  ['decisions', '/decisions', 'Decisions'],
  ['queues', '/queues', 'Queues'],
  ['metrics', '/metrics', 'Metrics'],
];

export function page(o: Shell): string {
  const iso = o.at ? new Date(o.at).toISOString() : '';
  return `<!doctype html>\n${html`<html lang="en"><head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
${o.token ? html`<meta name="sunset-token" content="${o.token}">` : ''}
<title>${o.title} · sunset · ${o.host}</title>
<style>${raw(CSS)}</style>
</head><body>
<header class="top"><div class="brand">sun<span>set</span></div>
<nav>${NAV.map(([k, href, label]) => html`<a href="${href}"${k === o.nav ? raw(' class="here" aria-current="page"') : ''}>${label}</a>`)}</nav>
<div class="where">host <b>${o.host}</b>${o.at ? html` · <span id="updated">updated ${iso.slice(11, 19)} UTC</span>` : ''}</div></header>
<main id="live" data-at="${iso}">${o.body}</main>
<div id="notices" aria-live="polite"></div>
${o.nav === 'login' ? '' : html`<script>${raw(CLIENT_JS)}</script>`}
</body></html>`}`;
}

/** A table scrolls sideways inside its card when the screen is narrower than it (a phone). */
const scroll = (table: Html) => html`<div class="table-scroll">${table}</div>`;

const VERDICT_ORDER: Record<string, number> = { eligible: 0, protected: 1, gone: 2, record: 3 };
const cls = (s: string) => s.toLowerCase().replace(/[^a-z0-9-]/g, '');

function redisBanner(r: FleetPageData['redis']): Html {
  if (!r || r.up) return html``;
  return html`<div class="banner bad" role="alert" id="redis-down"><b>Redis does not answer</b> (${r.where}, since ${r.since?.replace('T', ' ').slice(0, 19) ?? '?'} UTC: ${r.error ?? 'unreachable'}). Nothing is scheduled or carried out until it does, and an exit asked for here is refused, not kept for later; sunset keeps trying.</div>`;
}

function rosterBanner(snap: FleetSnapshot): Html {
  if (snap.roster.ok) return html``;
  return html`<div class="banner bad" role="alert"><b>The roster did not answer:</b> ${snap.roster.error}. Nothing is judged, asked or exited until it does (missing evidence protects).</div>`;
}

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

function agentViewBanner(snap: FleetSnapshot): Html {
  if (!snap.agentViews) return html``;
  return html`<div class="banner warn" id="agent-view" role="status"><b>A person has the agent view open</b> (<code>claude agents</code>${snap.agentViews > 1 ? `, ${snap.agentViews} of them` : ''}): from it any background session can be opened, so every background session counts as watched (<code>attach-unknown</code>) and none is asked or stopped until it closes.</div>`;
}

function sessionRow(r: Row, now: number): Html {
  const s = r.s;
  const live = s.live === true;
  const ev = s.evidence;
  return html`<tr class="${live ? '' : 'muted'}" data-id="${s.id ?? s.sessionId}" data-session="${s.sessionId}" data-verdict="${s.verdict}">
<td data-sort="${s.label}"><b class="mono">${s.label}</b><span class="sub">${s.kind}${s.pid !== null ? ` · pid ${s.pid}` : ''}</span></td>
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
  redis?: { up: boolean; where: string; since?: string; error?: string };
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
}

/** Shown on the page; `sunset exited` and GET /api/exited list every one. */
export const EXITED_SHOWN = 30;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const utc = (iso: string | null) => (iso ? `${iso.replace('T', ' ').slice(0, 16)} UTC` : '?');

function pressureBanner(mem: MemoryNow): Html {
  if (!mem.pressure) return html``;
  return html`<div class="banner warn" id="pressure" role="status"><b>Under the memory floor — exits go largest first.</b> MemAvailable is ${formatBytes(mem.availableBytes)}, under <code>memoryFloorMB</code> (${formatBytes(mem.floorBytes)}). The doctrine does not bend: only the order of the sessions that may already leave changes.</div>`;
}

function exitedRow(e: ResumeEntry, now: number): Html {
  const lines = resumeLines(e);
  return html`<tr data-session="${e.sessionId}"><td class="nowrap" data-sort="${e.at}">${relative(now - Date.parse(e.at))} ago<span class="sub">${utc(e.at)}</span></td>
<td class="nowrap" data-sort="${e.id ?? e.sessionId}"><b class="mono">${e.id ?? e.sessionId.slice(0, 8)}</b><span class="sub">${e.kind ?? 'kind unknown'}</span></td>
<td class="nowrap" data-sort="${e.taskId ?? ''}">${e.taskId ? html`<span class="mono">${e.taskId}</span>` : html`<span class="sub">untasked</span>`}</td>
<td>${e.why}</td>
<td class="num" data-sort="${e.rssFreedBytes ?? ''}">${e.rssFreedBytes === null ? '—' : formatBytes(e.rssFreedBytes)}</td>
<td class="resume">${lines ? html`<code class="copy" title="click to select, then copy">${lines.shell}</code><code class="copy" title="click to select, then copy">${lines.sunset}</code>${e.cwd ? '' : html`<span class="sub">its folder is not known: run it where the session worked</span>`}` : ''}</td></tr>`;
}

function exitedSection(entries: ResumeEntry[], now: number): Html {
  const exited = entries.filter((e) => e.outcome === 'exited');
  const gaveUp = entries.filter((e) => e.outcome === 'gave-up').length;
  const shown = exited.slice(0, EXITED_SHOWN);
  return html`<section class="card" id="exited"><h2>Exited — and how to bring each back <span class="sub">${exited.length > shown.length ? `the newest ${shown.length} of ${exited.length}; sunset exited lists every one` : 'newest first'}</span></h2>
${shown.length ? scroll(html`<table id="exited-table" class="sortable"><thead><tr><th tabindex="0">When</th><th tabindex="0">Session</th><th tabindex="0">Task</th><th tabindex="0">Why</th><th tabindex="0" class="num" data-type="number">Freed</th><th class="nosort">Bring it back</th></tr></thead>
<tbody>${shown.map((e) => exitedRow(e, now))}</tbody></table>`) : html`<p class="empty">No session has exited yet.</p>`}
<p class="legend-note">A graceful exit keeps the conversation: either command resumes it — <code>sunset resume</code> goes through the cap, in a new tmux window for an interactive session.${gaveUp ? html` ${plural(gaveUp, 'session')} sunset gave up on ${gaveUp === 1 ? 'is' : 'are'} still running: see <a href="/decisions">Decisions</a>.` : ''}</p>
</section>`;
}

function overTimeSection(o: OverTime, sampleEvery: number): Html {
  const every = sampleEvery > 0 ? formatDuration(sampleEvery) : null;
  const head = html`<h2>Over time <span class="sub">${every ? `the sampler's census of the fleet, every ${every}` : 'the sampler is off (windows.sampleEvery is 0)'}</span></h2>`;
  const s = o.summary;
  if (!s.count) {
    return html`<section class="card" id="over-time">${head}<p class="empty">No samples yet: <code>sunset up</code> records one every <code>windows.sampleEvery</code>${every ? ` (${every} here)` : ''}; <code>sunset samples --take</code> takes one now.</p></section>`;
  }
  const usable = s.count - s.failed;
  const idle = s.idle48h;
  const facts: Array<[string, Html | string, string?]> = [
    ['samples', html`<b>${s.count}</b> over ${relative(s.span.ms)}<span class="sub">${utc(s.span.from)} → ${utc(s.span.to)}${s.failed ? ` · ${s.failed} with the roster failing, left out` : ''}</span>`],
    ['live sessions', s.live.max === null ? 'unknown' : html`<b>${s.live.min}</b> – <b>${s.live.max}</b><span class="sub">median ${s.live.median}</span>`],
    ['peak memory', html`<b>${formatBytes(s.rss.peakBytes)}</b><span class="sub">at ${utc(s.rss.peakAt)}</span>`],
    ['longest silence', s.longestSilence.ms === null ? 'unknown' : html`<b>${relative(s.longestSilence.ms)}</b><span class="sub">${s.longestSilence.sessionId ? html`session <span class="mono">${s.longestSilence.sessionId}</span>, ` : ''}at ${utc(s.longestSilence.at)}</span>`],
    [
      'idle ≥ 48 h',
      idle.samples
        ? html`<b>${idle.samples}</b> of ${plural(usable, 'sample')} (${pct(idle.share)}) had a session silent 48 h or more<span class="sub">first ${utc(idle.first)}, last ${utc(idle.last)}</span>`
        : html`<b>none</b> of ${plural(usable, 'sample')}<span class="sub">no session has sat silent 48 h in a sample so far</span>`,
      idle.samples ? 'warn' : '',
    ],
    ['exits · asks', html`<b>${s.exits}</b> · <b>${s.asks}</b><span class="sub">counted between samples</span>`],
  ];
  const note = o.charted.thinnedTo ? ` (one sample in ${Math.ceil(o.charted.samples / o.charted.thinnedTo)} of ${o.charted.samples} drawn)` : '';
  return html`<section class="card" id="over-time">${head}
<div class="over-time">${o.chart ? html`<figure><img src="${o.chart}" width="${CHART_WIDTH}" alt="Memory held by live sessions by lane, and the longest transcript silence against the 48 h line, over ${plural(o.charted.samples, 'sample')}">${o.charted.windowed || note ? html`<figcaption>${o.charted.windowed ? 'The last 7 days' : 'Every sample kept'}${note}; the figures beside it cover every sample kept.</figcaption>` : ''}</figure>` : html`<p class="empty">No sample with a roster answer to draw.</p>`}
<dl class="facts">${facts.map(([k, v, tone]) => html`<dt>${k}</dt><dd class="${tone ?? ''}" data-fact="${k}">${v}</dd>`)}</dl></div>
<p class="legend-note">ADR-0010's open question — does a session ever sit idle for 48 hours in steady state? — is answered by the <i>idle ≥ 48 h</i> line as the samples accumulate (<code>sunset samples</code> for the full summary).</p>
</section>`;
}

export function fleetPage(d: FleetPageData): string {
  const { snap, report } = d;
  const now = snap.at;
  const lanes = report.memory.byLane;
  const give = report.memory.eligible;
  const mem = d.mem;
  const rows = [...d.rows].sort(
    (a, b) => (VERDICT_ORDER[a.s.verdict] ?? 9) - (VERDICT_ORDER[b.s.verdict] ?? 9) || (b.s.rssBytes ?? -1) - (a.s.rssBytes ?? -1) || (a.s.sessionId < b.s.sessionId ? -1 : 1),
  );
  const body = html`<h1>The fleet</h1>
<p class="lede">Every roster row, the verdict on it and why. A finished session leaves by its own exit path (<code>claude stop</code>, or <code>/exit</code> typed into its pane), never by a signal: released, then one message, then at most three exit requests, then a person decides.</p>
${d.dryRun ? html`<div class="banner warn" id="dry-run" role="status"><b>Dry run.</b> The steps below are what sunset would do (<code>would-…</code> in the log and audit), on a schedule of its own: nothing is released, asked, requested or exited, and nothing the real run reads is written.</div>` : ''}
${rosterBanner(snap)}${redisBanner(d.redis)}
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
${rows.length ? scroll(html`<table id="sessions" class="sortable"><thead><tr>
<th tabindex="0">Session</th><th tabindex="0">Task</th><th tabindex="0" data-type="number">Verdict</th><th tabindex="0">Why</th>
<th tabindex="0" class="num" data-type="number">Silent</th><th tabindex="0" class="num" data-type="number">Memory</th><th tabindex="0">Step</th>
</tr></thead><tbody>${rows.map((r) => sessionRow(r, now))}</tbody></table>`) : html`<p class="empty">${snap.roster.ok ? 'The roster is empty.' : 'No rows: the roster did not answer.'}</p>`}
</section>
<section class="card"><h2>Task timelines <span class="sub">finished tasks, latest step first</span></h2>
${d.tasks.length ? html`<div class="tasks-grid">${d.tasks.map((t) => html`<div class="task-tl" data-task="${t.id}"><h3><span class="mono">${t.id}</span> <span class="badge s-${cls(t.state)}">${t.state}</span> <span class="sub">${t.step}${t.sessionId ? html` · session <span class="mono">${t.sessionId}</span>` : ''}</span></h3>${timeline(t.timeline, { labels: true, now })}</div>`)}</div>` : html`<p class="empty">No finished task has been released yet.</p>`}
</section>
${exitedSection(d.exited, now)}
${overTimeSection(d.overTime, d.sampleEvery)}`;
  return page({ title: 'Fleet', nav: 'fleet', host: snap.host, token: d.token, at: snap.at, body });
}

export interface DecisionsPageData {
  redis?: FleetPageData['redis'];
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
  const known = d.alarms.filter((a) => a.kind === 'session-will-not-exit' || a.kind === 'cap-reached');
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
    return html`<tr data-task="${w.taskId}"><td class="nowrap" data-sort="${w.taskId}"><span class="mono">${w.taskId}</span></td>
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

export function loginPage(host: string, error?: string): string {
  const body = html`<section class="card login"><h1>Sign in</h1>
<p class="lede">This sunset listens off loopback, so every page needs its token (<code>web.token</code> in the config).</p>
${error ? html`<div class="banner bad" role="alert">${error}</div>` : ''}
<form method="post" action="/login"><label for="token">Token</label><input id="token" name="token" type="password" autocomplete="current-password" required><button type="submit">Sign in</button></form></section>`;
  return page({ title: 'Sign in', nav: 'login', host, token: null, at: null, body });
}

