// The fleet page's two sections on what has already happened: the sessions sunset exited, each with how to
// bring it back, and the sampler's census over time. Apart from fleet-page.ts, which shows the fleet now.
import { html, type Html } from './html.js';
import { pct, relative } from './charts.js';
import { resumeLines } from './model.js';
import { CHART_WIDTH, type OverTime } from './over-time.js';
import { formatBytes } from '../report/report.js';
import { formatDuration } from '../duration.js';
import type { ResumeEntry } from '../report/resume.js';
import { plural, scroll } from './page-shell.js';

/** Shown on the page; `sunset exited` and GET /api/exited list every one. */
export const EXITED_SHOWN = 30;
const utc = (iso: string | null) => (iso ? `${iso.replace('T', ' ').slice(0, 16)} UTC` : '?');

/** Whether it can still be resumed, and from where: its transcript, sunset's kept copy (with its size), or gone. */
function resumableCell(e: ResumeEntry): Html {
  const copy = e.kept
    ? html`<span class="sub">copy kept: ${formatBytes(e.kept.gzBytes)}${e.kept.until ? `, until ${utc(e.kept.until)}` : ''}</span>`
    : '';
  const word = e.resumeFrom ?? 'unknown';
  return html`<td class="nowrap resumable ${word === 'gone' ? 'gone' : ''}" data-sort="${word}">${word === 'gone' ? html`<b>gone</b>` : word}${copy}</td>`;
}

function exitedRow(e: ResumeEntry, now: number): Html {
  return html`<tr data-session="${e.sessionId}"><td class="nowrap" data-sort="${e.at}">${relative(now - Date.parse(e.at))} ago<span class="sub">${utc(e.at)}</span></td>
<td class="nowrap" data-sort="${e.id ?? e.sessionId}"><b class="mono">${e.id ?? e.sessionId.slice(0, 8)}</b><span class="sub">${e.kind ?? 'kind unknown'}</span></td>
<td class="nowrap" data-sort="${e.taskId ?? ''}">${e.taskId ? html`<span class="mono">${e.taskId}</span>` : html`<span class="sub">untasked</span>`}</td>
<td>${e.why}</td>
<td class="num" data-sort="${e.rssFreedBytes ?? ''}">${e.rssFreedBytes === null ? '—' : formatBytes(e.rssFreedBytes)}</td>
${resumableCell(e)}
<td class="resume">${resumeCell(e)}</td></tr>`;
}

/** The commands that bring it back, only those that work: both from its transcript; `sunset resume` alone from the kept copy; none when gone. */
function resumeCell(e: ResumeEntry): Html | string {
  const lines = resumeLines(e);
  if (!lines)
    return e.outcome === 'exited' && e.resumeFrom === 'gone'
      ? html`<span class="sub">cannot be resumed: no transcript and no kept copy</span>`
      : '';
  const sunset = html`<code class="copy" title="click to select, then copy">${lines.sunset}</code>`;
  if (!lines.shell) return html`${sunset}<span class="sub">puts sunset's kept copy of the transcript back first</span>`;
  return html`<code class="copy" title="click to select, then copy">${lines.shell}</code>${sunset}${e.cwd ? '' : html`<span class="sub">its folder is not known: run it where the session worked</span>`}`;
}

/** The kept copies' size: once Claude Code's cleanupPeriodDays deletes a transcript, <code>sunset resume</code> puts sunset's copy back. */
function keptNote(exited: ResumeEntry[]): Html {
  const copies = new Map(exited.filter((e) => e.kept).map((e) => [e.sessionId, e.kept!.gzBytes]));
  const bytes = [...copies.values()].reduce((a, b) => a + b, 0);
  return html`${plural(copies.size, 'compressed copy', 'compressed copies')} of their transcripts kept (${formatBytes(bytes)}): once Claude Code's <code>cleanupPeriodDays</code> deletes a transcript, <code>sunset resume</code> puts the copy back; <code>sunset exited --forget ID</code> lets one go.`;
}

export function exitedSection(entries: ResumeEntry[], now: number): Html {
  const exited = entries.filter((e) => e.outcome === 'exited');
  const gaveUp = entries.filter((e) => e.outcome === 'gave-up').length;
  const shown = exited.slice(0, EXITED_SHOWN);
  return html`<section class="card" id="exited"><h2>Exited — and how to bring each back <span class="sub">${exited.length > shown.length ? `the newest ${shown.length} of ${exited.length}; sunset exited lists every one` : 'newest first'}</span></h2>
${
  shown.length
    ? scroll(html`<table id="exited-table" class="sortable"><thead><tr><th tabindex="0">When</th><th tabindex="0">Session</th><th tabindex="0">Task</th><th tabindex="0">Why</th><th tabindex="0" class="num" data-type="number">Freed</th><th tabindex="0">Resumable from</th><th class="nosort">Bring it back</th></tr></thead>
<tbody>${shown.map((e) => exitedRow(e, now))}</tbody></table>`)
    : html`<p class="empty">No session has exited yet.</p>`
}
<p class="legend-note">A graceful exit keeps the conversation: either command resumes it (once Claude Code deleted the transcript, only <code>sunset resume</code>) — <code>sunset resume</code> goes through the cap, in a new tmux window for an interactive session. ${keptNote(exited)}${gaveUp ? html` ${plural(gaveUp, 'session')} sunset gave up on ${gaveUp === 1 ? 'is' : 'are'} still running: see <a href="/decisions">Decisions</a>.` : ''}</p>
</section>`;
}

export function overTimeSection(o: OverTime, sampleEvery: number): Html {
  const every = sampleEvery > 0 ? formatDuration(sampleEvery) : null;
  const head = html`<h2>Over time <span class="sub">${every ? `the sampler's census of the fleet, every ${every}` : 'the sampler is off (windows.sampleEvery is 0)'}</span></h2>`;
  const s = o.summary;
  if (!s.count) {
    return html`<section class="card" id="over-time">${head}<p class="empty">No samples yet: <code>sunset up</code> records one every <code>windows.sampleEvery</code>${every ? ` (${every} here)` : ''}; <code>sunset samples --take</code> takes one now.</p></section>`;
  }
  const usable = s.count - s.failed;
  const idle = s.idle48h;
  const facts: Array<[string, Html | string, string?]> = [
    [
      'samples',
      html`<b>${s.count}</b> over ${relative(s.span.ms)}<span class="sub">${utc(s.span.from)} → ${utc(s.span.to)}${s.failed ? ` · ${s.failed} with the roster failing, left out` : ''}</span>`,
    ],
    [
      'live sessions',
      s.live.max === null ? 'unknown' : html`<b>${s.live.min}</b> – <b>${s.live.max}</b><span class="sub">median ${s.live.median}</span>`,
    ],
    ['peak memory', html`<b>${formatBytes(s.rss.peakBytes)}</b><span class="sub">at ${utc(s.rss.peakAt)}</span>`],
    [
      'longest silence',
      s.longestSilence.ms === null
        ? 'unknown'
        : html`<b>${relative(s.longestSilence.ms)}</b><span class="sub">${s.longestSilence.sessionId ? html`session <span class="mono">${s.longestSilence.sessionId}</span>, ` : ''}at ${utc(s.longestSilence.at)}</span>`,
    ],
    [
      'idle ≥ 48 h',
      idle.samples
        ? html`<b>${idle.samples}</b> of ${plural(usable, 'sample')} (${pct(idle.share)}) had a session silent 48 h or more<span class="sub">first ${utc(idle.first)}, last ${utc(idle.last)}</span>`
        : html`<b>none</b> of ${plural(usable, 'sample')}<span class="sub">no session has sat silent 48 h in a sample so far</span>`,
      idle.samples ? 'warn' : '',
    ],
    ['exits · asks', html`<b>${s.exits}</b> · <b>${s.asks}</b><span class="sub">counted between samples</span>`],
  ];
  const note = o.charted.thinnedTo
    ? ` (one sample in ${Math.ceil(o.charted.samples / o.charted.thinnedTo)} of ${o.charted.samples} drawn)`
    : '';
  return html`<section class="card" id="over-time">${head}
<div class="over-time">${o.chart ? html`<figure><img src="${o.chart}" width="${CHART_WIDTH}" alt="Memory held by live sessions by lane, and the longest transcript silence against the 48 h line, over ${plural(o.charted.samples, 'sample')}">${o.charted.windowed || note ? html`<figcaption>${o.charted.windowed ? 'The last 7 days' : 'Every sample kept'}${note}; the figures beside it cover every sample kept.</figcaption>` : ''}</figure>` : html`<p class="empty">No sample with a roster answer to draw.</p>`}
<dl class="facts">${facts.map(([k, v, tone]) => html`<dt>${k}</dt><dd class="${tone ?? ''}" data-fact="${k}">${v}</dd>`)}</dl></div>
<p class="legend-note">ADR-0010's open question — does a session ever sit idle for 48 hours in steady state? — is answered by the <i>idle ≥ 48 h</i> line as the samples accumulate (<code>sunset samples</code> for the full summary).</p>
</section>`;
}
