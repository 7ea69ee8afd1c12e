// The frame every page shares (head, nav, the one client script), the pieces both pages use (the Redis and
// roster banners, a table that scrolls, counted words), and the sign-in page, which is the frame and a form.
// Apart from the pages (fleet-page.ts, decisions-page.ts) so that each reads as what it shows.
import { html, raw, type Html } from './html.js';
import { CSS } from './style.js';
import { CLIENT_JS } from './client.js';
import type { FleetSnapshot } from '../evidence/fleet.js';

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
export const scroll = (table: Html) => html`<div class="table-scroll">${table}</div>`;

/** Redis as `sunset up` last saw it: away, a page says so. */
export interface RedisSeen {
  up: boolean;
  where: string;
  since?: string;
  error?: string;
}

export function redisBanner(r: RedisSeen | undefined): Html {
  if (!r || r.up) return html``;
  return html`<div class="banner bad" role="alert" id="redis-down"><b>Redis does not answer</b> (${r.where}, since ${r.since?.replace('T', ' ').slice(0, 19) ?? '?'} UTC: ${r.error ?? 'unreachable'}). Nothing is scheduled or carried out until it does, and an exit asked for here is refused, not kept for later; sunset keeps trying.</div>`;
}

export function rosterBanner(snap: FleetSnapshot): Html {
  if (snap.roster.ok) return html``;
  return html`<div class="banner bad" role="alert"><b>The roster did not answer:</b> ${snap.roster.error}. Nothing is judged, asked or exited until it does (missing evidence protects).</div>`;
}

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function loginPage(host: string, error?: string): string {
  const body = html`<section class="card login"><h1>Sign in</h1>
<p class="lede">This sunset listens off loopback, so every page needs its token (<code>web.token</code> in the config).</p>
${error ? html`<div class="banner bad" role="alert">${error}</div>` : ''}
<form method="post" action="/login"><label for="token">Token</label><input id="token" name="token" type="password" autocomplete="current-password" required><button type="submit">Sign in</button></form></section>`;
  return page({ title: 'Sign in', nav: 'login', host, token: null, at: null, body });
}
