// Pictures drawn on the server: memory by lane as an inline SVG bar chart, and a task's latched steps
// as a small timeline. No script, no external asset; every label escaped.
import { html, type Html } from './html.js';
import { formatBytes, LANES, type Lane, type Report } from '../report/report.js';
import type { TimelineStep } from './model.js';

export const LANE_COLOURS: Record<Lane, string> = {
  'awaiting-human': '#d97706',
  active: '#2563eb',
  finished: '#7c3aed',
  untasked: '#64748b',
};

export const LANE_WORDS: Record<Lane, string> = {
  'awaiting-human': 'awaiting a human',
  active: 'active',
  finished: 'finished, still running',
  untasked: 'untasked',
};

export function pct(share: number): string {
  if (!share) return '0 %';
  const p = share * 100;
  return `${p < 1 ? p.toFixed(1) : Math.round(p)} %`;
}

/**
 * Memory held by live sessions: one stacked bar for the whole fleet, split by lane, then a row per lane
 * with its bar (scaled to the largest lane, so small lanes stay readable) and its figures.
 */
export function laneChart(memory: Report['memory']): Html {
  const W = 800;
  const barX = 200;
  const barW = 360;
  const top = 34;
  const rowH = 32;
  const H = top + 14 + LANES.length * rowH;
  const largest = Math.max(1, ...LANES.map((l) => memory.byLane[l].bytes));
  let x = barX;
  const stack = LANES.map((lane) => {
    const m = memory.byLane[lane];
    const w = memory.totalBytes ? (m.bytes / memory.totalBytes) * barW : 0;
    const seg = w > 0 ? html`<rect x="${x.toFixed(1)}" y="4" width="${Math.max(w, 1.5).toFixed(1)}" height="22" fill="${LANE_COLOURS[lane]}"><title>${LANE_WORDS[lane]}: ${formatBytes(m.bytes)}, ${pct(m.share)}</title></rect>` : html``;
    x += w;
    return seg;
  });
  const rows = LANES.map((lane, i) => {
    const m = memory.byLane[lane];
    const y = top + 14 + i * rowH;
    const w = m.bytes ? Math.max(3, Math.round((m.bytes / largest) * barW)) : 0;
    const label = `${formatBytes(m.bytes)} · ${m.sessions} session${m.sessions === 1 ? '' : 's'} · ${pct(m.share)}`;
    return html`<g class="lane" data-lane="${lane}">
      <title>${LANE_WORDS[lane]}: ${label}</title>
      <rect x="0" y="${y + 5}" width="12" height="12" rx="3" fill="${LANE_COLOURS[lane]}"></rect>
      <text x="20" y="${y + 16}" class="lane-name">${LANE_WORDS[lane]}</text>
      ${w ? html`<rect x="${barX}" y="${y + 3}" width="${w}" height="16" rx="3" fill="${LANE_COLOURS[lane]}" fill-opacity="0.85"></rect>` : html`<line x1="${barX}" y1="${y + 11}" x2="${barX + 40}" y2="${y + 11}" stroke="#cbd2d9" stroke-dasharray="3 3"></line>`}
      <text x="${barX + barW + 16}" y="${y + 16}" class="lane-value">${label}</text>
    </g>`;
  });
  return html`<svg class="lane-chart" role="img" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" aria-label="Memory by lane: ${formatBytes(memory.totalBytes)} in all">
    <text x="0" y="20" class="lane-name">the whole fleet</text>
    <rect x="${barX}" y="4" width="${barW}" height="22" rx="4" fill="#eef1f5"></rect>${stack}
    <text x="${barX + barW + 16}" y="20" class="lane-value lane-total">${formatBytes(memory.totalBytes)} in all</text>
    <line x1="0" y1="${top + 4}" x2="${W}" y2="${top + 4}" stroke="#e4e7eb"></line>
    ${rows}</svg>`;
}

const when = (at: string | null) => (at ? new Date(at).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : 'not yet');

/** Dots joined by a line: filled for a latched step, hollow for one still ahead; the end says how it ended. */
export function timeline(steps: TimelineStep[], o: { labels?: boolean; now?: number } = {}): Html {
  const items = steps.map((st) => {
    const cls = ['step', st.done ? 'done' : 'ahead', st.label === 'gave up' ? 'gave-up' : st.label === 'exited' && st.done ? 'exited' : ''].filter(Boolean).join(' ');
    const ago = st.at && o.now ? ` (${relative(o.now - Date.parse(st.at))} ago)` : '';
    return html`<li class="${cls}" title="${st.label}: ${when(st.at)}${ago}"><span class="dot"></span>${o.labels ? html`<span class="tl-label">${st.label}</span><span class="tl-time">${st.at && o.now ? `${relative(o.now - Date.parse(st.at))} ago` : st.done ? '' : '—'}</span>` : ''}</li>`;
  });
  return html`<ol class="timeline${o.labels ? '' : ' mini'}">${items}</ol>`;
}

/** "3 min", "4.5 h", "11 days": the size a person reads at a glance. */
export function relative(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return 'unknown';
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${(s / 3600).toFixed(s < 36000 ? 1 : 0)} h`;
  return `${Math.round(s / 86400)} days`;
}
