// Pictures drawn on the server: memory by lane as an inline SVG bar chart, the sampler's samples over time,
// and a task's latched steps as a small timeline. No script, no external asset; every label escaped.
import { escapeHtml, html, type Html } from './html.js';
import { formatBytes, LANES, type Lane, type Report } from '../report/report.js';
import { IDLE_48H, type Sample } from '../report/sampler-census.js';
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
    const seg =
      w > 0
        ? html`<rect x="${x.toFixed(1)}" y="4" width="${Math.max(w, 1.5).toFixed(1)}" height="22" fill="${LANE_COLOURS[lane]}"><title>${LANE_WORDS[lane]}: ${formatBytes(m.bytes)}, ${pct(m.share)}</title></rect>`
        : html``;
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

// ------------------------------------------------------------------ the samples over time

const esc = escapeHtml;
const H = 3_600_000;
const gb = (b: number) => `${(b / 1024 ** 3).toFixed(b >= 10 * 1024 ** 3 ? 0 : 1)} GB`;
const hours = (ms: number) => (ms >= 48 * H ? `${(ms / (24 * H)).toFixed(1)} d` : `${(ms / H).toFixed(ms >= 10 * H ? 0 : 1)} h`);
const hhmm = (iso: string) => iso.slice(0, 16).replace('T', ' ');

/**
 * The sampler's samples over time, as an inline SVG string (no scripts, no external assets): memory by lane
 * in the lanes' colours above, and the longest transcript silence with the 48 h line. For the web's fleet
 * page (over-time.ts, as an image) and `sunset samples --svg`. Pure.
 */
export function samplesChartSvg(samples: Sample[], o: { width?: number } = {}): string {
  const W = o.width ?? 720;
  const PH = 170; // one panel's height
  const L = 64;
  const R = 16;
  const T = 28;
  const GAP = 54;
  const Hh = T + PH + GAP + PH + 40;
  const ok = [...samples].filter((s) => s.rosterOk).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const head = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${Hh}" viewBox="0 0 ${W} ${Hh}" role="img" aria-label="fleet samples: memory by lane and longest silence over time" font-family="system-ui, sans-serif" font-size="11">`;
  const title = `<title>fleet samples: memory by lane, longest transcript silence</title>`;
  if (!ok.length) {
    return `${head}${title}<text x="${W / 2}" y="${Hh / 2}" text-anchor="middle" fill="#666">no samples yet</text></svg>`;
  }
  const t0 = Date.parse(ok[0].at);
  const t1 = Date.parse(ok[ok.length - 1].at);
  const span = Math.max(1, t1 - t0);
  const x = (at: string) => (ok.length === 1 ? L + (W - L - R) / 2 : L + ((Date.parse(at) - t0) / span) * (W - L - R));
  const parts: string[] = [head, title];

  const panel = (
    top: number,
    label: string,
    maxV: number,
    fmt: (v: number) => string,
    series: Array<{ name: string; colour: string; values: Array<number | null> }>,
    refLine?: { v: number; label: string },
  ) => {
    const y = (v: number) => top + PH - (v / maxV) * PH;
    parts.push(`<text x="${L}" y="${top - 8}" font-weight="600" fill="#222">${esc(label)}</text>`);
    parts.push(`<rect x="${L}" y="${top}" width="${W - L - R}" height="${PH}" fill="none" stroke="#ccc"/>`);
    for (const f of [0, 0.5, 1]) {
      const v = maxV * f;
      parts.push(`<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#666">${esc(fmt(v))}</text>`);
      if (f > 0 && f < 1) parts.push(`<line x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`);
    }
    if (refLine && refLine.v <= maxV) {
      parts.push(
        `<line x1="${L}" x2="${W - R}" y1="${y(refLine.v).toFixed(1)}" y2="${y(refLine.v).toFixed(1)}" stroke="#c92a2a" stroke-dasharray="4 3"/>`,
      );
      parts.push(
        `<text x="${W - R - 4}" y="${(y(refLine.v) - 4).toFixed(1)}" text-anchor="end" fill="#c92a2a">${esc(refLine.label)}</text>`,
      );
    }
    let lx = L;
    for (const s of series) {
      // a gap where a value is missing: the line is broken, not drawn through
      const segs: string[][] = [[]];
      s.values.forEach((v, i) => {
        if (v === null) segs.push([]);
        else segs[segs.length - 1].push(`${x(ok[i].at).toFixed(1)},${y(v).toFixed(1)}`);
      });
      for (const seg of segs) {
        if (seg.length === 1) parts.push(`<circle cx="${seg[0].split(',')[0]}" cy="${seg[0].split(',')[1]}" r="2.5" fill="${s.colour}"/>`);
        else if (seg.length > 1) parts.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="1.8" points="${seg.join(' ')}"/>`);
      }
      if (series.length > 1) {
        parts.push(
          `<rect x="${lx}" y="${top + PH + 8}" width="10" height="10" fill="${s.colour}"/><text x="${lx + 14}" y="${top + PH + 17}" fill="#333">${esc(s.name)}</text>`,
        );
        lx += 24 + s.name.length * 6.5;
      }
    }
  };

  const laneSeries = LANES.map((l) => ({ name: l, colour: LANE_COLOURS[l], values: ok.map((s) => s.byLane?.[l]?.bytes ?? 0) }));
  const maxBytes = Math.max(1024 ** 3 / 4, ...laneSeries.flatMap((s) => s.values as number[]));
  panel(T, 'memory held by live sessions, by lane', maxBytes * 1.05, gb, laneSeries);

  const silences = ok.map((s) => s.silence?.longestMs ?? null);
  const maxSilence = Math.max(H, ...silences.filter((v): v is number => v !== null));
  const top2 = T + PH + GAP;
  panel(top2, 'longest transcript silence', maxSilence * 1.05, hours, [{ name: 'longest silence', colour: '#495057', values: silences }], {
    v: IDLE_48H,
    label: '48 h',
  });

  parts.push(`<text x="${L}" y="${Hh - 8}" fill="#666">${esc(hhmm(ok[0].at))} UTC</text>`);
  parts.push(
    `<text x="${W - R}" y="${Hh - 8}" text-anchor="end" fill="#666">${esc(hhmm(ok[ok.length - 1].at))} UTC · ${ok.length} samples</text>`,
  );
  parts.push('</svg>');
  return parts.join('');
}

// ------------------------------------------------------------------ a task's steps

const when = (at: string | null) =>
  at
    ? new Date(at)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')
    : 'not yet';

/** Dots joined by a line: filled for a latched step, hollow for one still ahead; the end says how it ended. */
export function timeline(steps: TimelineStep[], o: { labels?: boolean; now?: number } = {}): Html {
  const items = steps.map((st) => {
    const cls = ['step', st.done ? 'done' : 'ahead', st.label === 'gave up' ? 'gave-up' : st.label === 'exited' && st.done ? 'exited' : '']
      .filter(Boolean)
      .join(' ');
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
