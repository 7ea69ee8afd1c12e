// A chat's incoming webhook (Slack's shape, which Mattermost, Rocket.Chat, Discord's /slack endpoint and others
// take): `text` for notifications and clients without blocks, and blocks — a header, the message, a digest's lanes
// (at most MAX_LANES), and a context line with the idempotency key (also in the header and a JSON field).
import type { ChannelConfig } from '../../config.js';
import { formatBytes } from '../../report/report.js';
import { post, reach } from './http.js';
import type { ChannelAdapter, DigestLane, Outgoing } from './types.js';

type Chat = Extract<ChannelConfig, { type: 'chat' }>;

/** Slack: at most 50 blocks a message, 3,000 characters a section, 150 a header. */
const MAX_LANES = 40;
const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
/** mrkdwn treats &, < and > as markup. */
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function laneLine(l: DigestLane): string {
  const waited = l.waitedMs === null ? 'waiting (since unknown)' : `waiting ${hours(l.waitedMs)}`;
  const mem = l.live ? formatBytes(l.rssBytes) : 'no session running';
  return `${l.taskId}: ${waited}, ${mem}${l.asks ? ` — asks: ${l.asks}` : ''}`;
}

export function hours(ms: number): string {
  const h = ms / 3_600_000;
  return h >= 48 ? `${Math.floor(h / 24)} d` : h >= 1 ? `${Math.floor(h)} h` : `${Math.max(0, Math.floor(ms / 60_000))} min`;
}

export function chatBody(m: Outgoing): Record<string, unknown> {
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: cut(m.title, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: cut(esc(m.text), 3000) } },
  ];
  for (const l of (m.lanes ?? []).slice(0, MAX_LANES))
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: cut(`<${l.link}|${esc(l.taskId)}>${esc(laneLine(l).slice(l.taskId.length))}`, 3000) },
    });
  if ((m.lanes?.length ?? 0) > MAX_LANES)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `… and ${m.lanes!.length - MAX_LANES} more on the Decisions page` } });
  const where = m.link ? ` · <${m.link}|Decisions>` : '';
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: cut(`sunset on ${esc(m.host)} · ${m.kind} · id ${m.idempotencyKey}${where}`, 3000) }],
  });
  return { text: cut(`${m.title}: ${m.text}`, 3000), blocks, idempotencyKey: m.idempotencyKey };
}

export const chatChannel: ChannelAdapter<Chat> = {
  type: 'chat',
  send: (c, m, o) =>
    post(c.url, { 'content-type': 'application/json', 'idempotency-key': m.idempotencyKey }, JSON.stringify(chatBody(m)), o.timeoutMs),
  probe: (c, o) => reach(c.url, {}, o.timeoutMs),
};
