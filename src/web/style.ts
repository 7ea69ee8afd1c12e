// The pages' stylesheet, inline: system fonts, no external asset.
export const CSS = `
:root { --ink:#1f2933; --muted:#616e7c; --line:#e4e7eb; --bg:#f5f7fa; --card:#fff; --ok:#047857; --warn:#b45309; --bad:#b91c1c; --accent:#c2410c; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; color:var(--ink); background:var(--bg); }
a { color:#1d4ed8; text-decoration:none; } a:hover { text-decoration:underline; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace; font-size:12.5px; }
header.top { display:flex; flex-wrap:wrap; align-items:center; gap:8px 28px; padding:10px 28px; background:#1f2933; color:#f5f7fa; }
header.top .brand { font-weight:700; font-size:17px; letter-spacing:.02em; }
header.top .brand span { color:#fb923c; }
header.top nav { display:flex; gap:4px; }
header.top nav a { color:#cbd2d9; padding:6px 12px; border-radius:6px; }
header.top nav a.here { background:#3e4c59; color:#fff; }
header.top nav a:hover { text-decoration:none; background:#323f4b; }
header.top .where { margin-left:auto; color:#9aa5b1; font-size:12.5px; }
header.top .where .stale { color:#fca5a5; }
main { padding:22px 28px 40px; max-width:1480px; }
h1 { font-size:22px; margin:0 0 4px; }
h2 { font-size:16px; margin:28px 0 10px; }
p.lede { color:var(--muted); margin:0 0 18px; max-width:880px; }
section.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:16px 18px; margin:0 0 18px; box-shadow:0 1px 2px rgba(15,23,42,.04); }
section.card > h2:first-child { margin-top:0; }
.figures { display:flex; flex-wrap:wrap; gap:12px; margin:0 0 18px; }
.figure { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:10px 16px; min-width:150px; }
.figure b { display:block; font-size:22px; line-height:1.2; }
.figure span { color:var(--muted); font-size:12.5px; }
.figure.warn b { color:var(--warn); } .figure.ok b { color:var(--ok); } .figure.bad b { color:var(--bad); }
a.figure-link { color:inherit; } a.figure-link:hover { text-decoration:none; border-color:#cbd2d9; } a.figure-link.bad { border-color:#fecaca; background:#fef2f2; }
.headline { font-size:20px; line-height:1.35; margin:0 0 6px; }
.headline b { color:var(--accent); }
.headline .aside { color:var(--muted); font-size:14px; }
.banner { border-radius:8px; padding:10px 14px; margin:0 0 16px; }
.banner.bad { background:#fef2f2; border:1px solid #fecaca; color:#7f1d1d; }
.banner.warn { background:#fff7ed; border:1px solid #fed7aa; color:#7c2d12; }
.banner.info { background:#eff6ff; border:1px solid #bfdbfe; color:#1e3a8a; }
table { border-collapse:collapse; width:100%; }
.table-scroll { overflow-x:auto; max-width:100%; -webkit-overflow-scrolling:touch; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); font-weight:600; white-space:nowrap; background:#fafbfc; }
table.sortable th { cursor:pointer; user-select:none; }
table.sortable th:hover { color:var(--ink); }
table.sortable th::after { content:" \\2195"; color:#cbd2d9; }
table.sortable th.nosort { cursor:default; }
table.sortable th.nosort::after { content:none; }
td.nowrap { white-space:nowrap; }
table.sortable th[aria-sort=ascending]::after { content:" \\2191"; color:var(--ink); }
table.sortable th[aria-sort=descending]::after { content:" \\2193"; color:var(--ink); }
td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
th.num { text-align:right; }
tr.muted td { color:#9aa5b1; }
tbody tr:hover td { background:#fafcff; }
.sub { display:block; color:var(--muted); font-size:12px; }
.badge { display:inline-block; padding:1px 8px; border-radius:999px; font-size:12px; font-weight:600; white-space:nowrap; }
.v-eligible { background:#d1fae5; color:#065f46; }
.v-protected { background:#fef3c7; color:#92400e; }
.v-protected.held { background:#e5e7eb; color:#374151; }
.due[data-passes="false"] { color:#6b7280; }
.v-gone { background:#e5e7eb; color:#374151; }
.v-record { background:#f1f5f9; color:#64748b; }
.s-awaiting-human { background:#ffedd5; color:#9a3412; }
.s-active { background:#dbeafe; color:#1e40af; }
.s-done, .s-abandoned, .s-parked { background:#ede9fe; color:#5b21b6; }
.k-session-will-not-exit { background:#fee2e2; color:#991b1b; }
.k-cap-reached { background:#fef3c7; color:#92400e; }
ul.reasons { margin:0; padding:0; list-style:none; }
ul.reasons li { margin:0 0 2px; }
ul.reasons li code { color:var(--muted); font-size:11px; margin-left:4px; }
.lane-chart { max-width:100%; height:auto; }
.lane-chart .lane-name { font-size:14px; fill:#1f2933; font-weight:600; }
.lane-chart .lane-value { font-size:13.5px; fill:#3e4c59; }
.lane-chart .lane-total { font-weight:700; fill:#1f2933; }
h2 .sub { display:inline; margin-left:10px; font-weight:400; font-size:12.5px; }
.legend-note { color:var(--muted); font-size:12.5px; margin:6px 0 0; }
ol.timeline { display:flex; list-style:none; margin:0; padding:0; align-items:flex-start; }
ol.timeline li { position:relative; display:flex; flex-direction:column; align-items:center; min-width:78px; font-size:11.5px; color:var(--muted); }
ol.timeline li::before { content:""; position:absolute; top:6px; left:-50%; width:100%; height:2px; background:#d9dee4; z-index:0; }
ol.timeline li:first-child::before { display:none; }
ol.timeline li.done::before { background:#7c3aed; }
ol.timeline .dot { width:14px; height:14px; border-radius:50%; border:2px solid #b8c0ca; background:#fff; z-index:1; }
ol.timeline li.done .dot { background:#7c3aed; border-color:#7c3aed; }
ol.timeline li.exited .dot { background:var(--ok); border-color:var(--ok); }
ol.timeline li.gave-up .dot { background:var(--bad); border-color:var(--bad); }
ol.timeline .tl-label { margin-top:3px; color:var(--ink); font-weight:600; }
ol.timeline.mini li { min-width:16px; }
ol.timeline.mini li::before { top:4px; }
ol.timeline.mini .dot { width:10px; height:10px; }
.step-text { font-weight:600; display:block; margin-bottom:4px; }
.tasks-grid { display:grid; grid-template-columns: repeat(auto-fill, minmax(min(560px, 100%), 1fr)); gap:10px 24px; }
.task-tl { min-width:0; overflow-x:auto; }
.task-tl h3 { overflow-wrap:anywhere; }
.task-tl { border-top:1px solid var(--line); padding:10px 0 6px; }
.task-tl h3 { font-size:13.5px; margin:0 0 8px; }
form.exit-form, form.ack-form { display:flex; flex-wrap:wrap; gap:6px 10px; align-items:center; }
form.ack-form { margin-top:8px; }
form.exit-form input[type=text], form.ack-form input[type=text] { padding:5px 8px; border:1px solid #cbd2d9; border-radius:6px; min-width:min(220px, 100%); max-width:100%; font:inherit; }
form.exit-form label { font-size:12.5px; color:var(--muted); display:flex; gap:4px; align-items:center; }
form.exit-form button { padding:5px 12px; border-radius:6px; border:1px solid #9a3412; background:#c2410c; color:#fff; font:inherit; font-weight:600; cursor:pointer; }
form.ack-form button { padding:5px 12px; border-radius:6px; border:1px solid #52606d; background:#fff; color:#1f2933; font:inherit; font-weight:600; cursor:pointer; }
form.exit-form button:disabled, form.ack-form button:disabled { opacity:.6; }
form.exit-form output, form.ack-form output { flex-basis:100%; font-size:12.5px; }
form.exit-form output.ok, form.ack-form output.ok { color:var(--ok); } form.exit-form output.bad, form.ack-form output.bad { color:var(--bad); }
#notices { position:fixed; right:18px; bottom:18px; max-width:460px; display:flex; flex-direction:column; gap:8px; z-index:10; }
.notice { transition:opacity .6s; }
.notice.fading { opacity:0; }
.notice { margin:0; padding:10px 14px; border-radius:8px; box-shadow:0 4px 12px rgba(15,23,42,.12); background:#fff; border-left:4px solid; }
.notice.ok { border-color:var(--ok); } .notice.bad { border-color:var(--bad); }
.empty { color:var(--muted); font-style:italic; margin:4px 0; }
details.problems summary { cursor:pointer; color:var(--warn); font-weight:600; }
details.problems li { color:#52606d; }
#exited-table td.resume { min-width:360px; max-width:560px; }
code.copy { display:block; user-select:all; cursor:text; background:#f5f7fa; border:1px solid var(--line); border-radius:6px; padding:3px 8px; margin:0 0 4px; white-space:pre-wrap; overflow-wrap:anywhere; color:#1f2933; }
code.copy:hover { border-color:#cbd2d9; background:#eef2f6; }
.over-time { display:flex; flex-wrap:wrap; gap:16px 36px; align-items:flex-start; }
.over-time figure { margin:0; flex:0 1 820px; min-width:0; }
.over-time figure img { display:block; max-width:100%; height:auto; }
.over-time figcaption { color:var(--muted); font-size:12px; margin-top:4px; }
dl.facts { flex:1 1 300px; display:grid; grid-template-columns:max-content 1fr; gap:10px 18px; margin:6px 0 0; align-content:start; }
dl.facts dt { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; padding-top:3px; white-space:nowrap; }
dl.facts dd { margin:0; }
dl.facts dd b { font-size:16px; }
dl.facts dd.warn b { color:var(--warn); }
.login { max-width:440px; margin:60px auto; }
.login input { width:100%; padding:8px; margin:8px 0 12px; font:inherit; border:1px solid #cbd2d9; border-radius:6px; }
.login button { padding:7px 16px; font:inherit; }
@media (max-width: 640px) {
  header.top { padding:8px 12px; gap:6px 14px; }
  header.top .where { margin-left:0; }
  main { padding:14px 10px 30px; }
  section.card { padding:12px 10px; }
  .figure { min-width:0; flex:1 1 140px; }
  #notices { left:10px; right:10px; bottom:10px; max-width:none; }
}
`;
