// Pictures drawn on the server: memory by lane as an inline SVG bar chart, and a task's latched steps
// as a small timeline. No script, no external asset; every label escaped.
import { html, type Html } from './html.js';
import { formatBytes, LANES, type Lane, type Report } from '../report.js';
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

/** Memory held by live sessions, one bar per lane, each as wide as its share of the fleet's memory. */
export function laneChart(memory: Report['memory']): Html {
  const W = 760;
  const labelW = 190;
  const barW = 330;
  const rowH = 34;
  const H = LANES.length * rowH + 8;
  const rows = LANES.map((lane, i) => {
    const m = memory.byLane[lane];
    const y = 4 + i * rowH;
    const w = Math.max(m.bytes ? 2 : 0, Math.round(m.share * barW));
    const label = `${formatBytes(m.bytes)} · ${m.sessions} session${m.sessions === 1 ? '' : 's'} · ${pct(m.share)}`;
    return html`<g class="lane" data-lane="${lane}">
      <title>${LANE_WORDS[lane]}: ${label}</title>
      <text x="0" y="${y + 21}" class="lane-name">${LANE_WORDS[lane]}</text>
      <rect x="${labelW}" y="${y + 6}" width="${barW}" height="20" rx="4" fill="#eef1f5"></rect>
      <rect x="${labelW}" y="${y + 6}" width="${w}" height="20" rx="4" fill="${LANE_COLOURS[lane]}"></rect>
      <text x="${labelW + barW + 14}" y="${y + 21}" class="lane-value">${label}</text>
    </g>`;
  });
  return html`<svg class="lane-chart" role="img" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" aria-label="Memory by lane: ${formatBytes(memory.totalBytes)} in all">${rows}</svg>`;
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
