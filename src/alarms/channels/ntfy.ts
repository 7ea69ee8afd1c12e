// ntfy (a push service for phones): the message text POSTed to the topic's URL, its title, priority, tags and
// a link (Click) in ntfy's headers; the token, when the config names the environment variable holding it, as a
// bearer token — read when sending, never logged nor said. The idempotency key is in its header (ntfy's body is
// the text a person reads, so it has no JSON field).
import type { ChannelConfig } from '../../config.js';
import { envSecret } from '../../config.js';
import { post, reach } from './http.js';
import type { Answer, ChannelAdapter, Outgoing, SendOptions } from './types.js';
import { laneLine } from './chat.js';

type Ntfy = Extract<ChannelConfig, { type: 'ntfy' }>;

/** HTTP headers are ASCII-safe in Latin-1 only: anything else in a title goes as ntfy's RFC 2047 form. */
const headerSafe = (s: string) => (/^[\x20-\x7e]*$/.test(s) ? s : `=?UTF-8?B?${Buffer.from(s, 'utf8').toString('base64')}?=`);

export function ntfyRequest(c: Ntfy, m: Outgoing): { headers: Record<string, string>; body: string } {
  const digest = m.kind === 'digest';
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'idempotency-key': m.idempotencyKey,
    title: headerSafe(m.title.slice(0, 200)),
    // a digest is news, not an emergency: it goes at the default priority whatever the channel's
    priority: digest ? 'default' : c.priority,
    tags: (digest ? ['hourglass'] : c.tags).join(','),
  };
  if (m.link) headers.click = m.link;
  const lanes = (m.lanes ?? []).map((l) => `• ${laneLine(l)}`);
  return { headers, body: [m.text, ...lanes].join('\n').slice(0, 4000) };
}

function auth(c: Ntfy, o: SendOptions): { headers: Record<string, string> } | { missing: string } {
  if (!c.tokenEnv) return { headers: {} };
  const token = envSecret(c.tokenEnv, o.env);
  return token ? { headers: { authorization: `Bearer ${token}` } } : { missing: c.tokenEnv };
}

const noToken = (name: string): Answer => ({
  ok: false,
  status: null,
  detail: `the environment variable ${name} (tokenEnv) is not set`,
  unsetEnv: name,
});

export const ntfyChannel: ChannelAdapter<Ntfy> = {
  type: 'ntfy',
  async send(c, m, o) {
    const a = auth(c, o);
    if ('missing' in a) return noToken(a.missing);
    const r = ntfyRequest(c, m);
    return post(c.url, { ...r.headers, ...a.headers }, r.body, o.timeoutMs);
  },
  async probe(c, o) {
    const a = auth(c, o);
    if ('missing' in a) return noToken(a.missing);
    return reach(c.url, a.headers, o.timeoutMs);
  },
};
