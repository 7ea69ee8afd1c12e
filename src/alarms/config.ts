import { z } from 'zod';
import { argv, duration } from '../config-fields.js';

// Alarms (issue 30, items 1 and 2): where they go (channels: one adapter each, src/alarms/channels/), how a
// failed delivery is tried again (the alarm-delivery queue), and the digest of the lanes awaiting a person.
/** The kinds a channel can ask for: every alarm kind, and `digest`. */
export const ALARM_KINDS = ['session-will-not-exit', 'cap-reached', 'claude-code-unreadable'] as const;
export const CHANNEL_KINDS = [...ALARM_KINDS, 'digest'] as const;
const channelName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'takes a name of letters, digits, ".", "_" and "-" (at most 64)')
  .optional();
/** null = every alarm kind, and no digest (a channel opts in to it by naming it). */
const channelKinds = z.array(z.enum(CHANNEL_KINDS)).min(1).nullable().default(null);
const httpUrl = z.url({ protocol: /^https?$/, error: 'takes an http:// or https:// URL' });
const channelSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('webhook'), name: channelName, url: httpUrl, kinds: channelKinds }),
  z.strictObject({ type: z.literal('chat'), name: channelName, url: httpUrl, kinds: channelKinds }),
  z.strictObject({
    type: z.literal('ntfy'),
    name: channelName,
    /** The topic's URL (https://ntfy.sh/my-topic). */
    url: httpUrl,
    /** The environment variable that holds the access token (never the token itself: it is never logged). */
    tokenEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'takes the name of an environment variable')
      .nullable()
      .default(null),
    priority: z.enum(['min', 'low', 'default', 'high', 'max', 'urgent']).default('high'),
    tags: z.array(z.string().regex(/^[^,\r\n]{1,64}$/, 'takes tags without commas or line breaks')).default(['warning']),
    kinds: channelKinds,
  }),
  z.strictObject({ type: z.literal('command'), name: channelName, argv, kinds: channelKinds }),
]);
export type ChannelConfig = z.output<typeof channelSchema>;
export const alarmsSchema = z
  .strictObject({
    /** Today's generic JSON webhook: one channel named `webhook`, every alarm kind. */
    webhook: z.string().url().nullable().default(null),
    /** Today's command (the alarm's JSON on stdin): one channel named `command`, every alarm kind. */
    command: argv.nullable().default(null),
    /** Any number more, of any type, each with the kinds it wants. */
    channels: z.array(channelSchema).default([]),
    /** The first retry of a failed delivery waits this long; each next one twice as long, at most an hour. */
    retryDelay: duration.default(10_000),
    /** The digest of the lanes awaiting a person: at most this often, and only when the list changed. null = never. */
    digestEvery: duration.nullable().default(24 * 3_600_000),
    /** The web's address as a person reaches it, for the links in alarms and the digest; null = http://web.host:web.port. */
    webUrl: httpUrl.nullable().default(null),
  })
  .superRefine((a, ctx) => {
    const seen = new Set(['webhook', 'command']);
    for (const [i, c] of a.channels.entries()) {
      if (c.name === undefined) continue;
      if (seen.has(c.name))
        ctx.addIssue({
          code: 'custom',
          path: ['channels', i, 'name'],
          message: `takes a name no other channel has (${JSON.stringify(c.name)} is another's, or kept for alarms.webhook / alarms.command)`,
        });
      seen.add(c.name);
    }
  });

/** A secret named in the config by the environment variable that holds it (an ntfy token): read when used, never kept in the config. */
export function envSecret(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const v = env[name];
  return v === undefined || v === '' ? null : v;
}
