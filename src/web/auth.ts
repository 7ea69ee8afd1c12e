// The web's locks (DESIGN §7): loopback or a configured token, the token for every POST, a refused
// foreign Origin (and, on loopback, a refused foreign Host: DNS rebinding), constant-time comparison.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createFileOnceSync } from '../store/atomic-file.js';
import { errorCode, errorMessage } from '../errors.js';

/** A web configuration sunset refuses to serve; the CLI maps it to exit code 2. */
export class WebConfigError extends Error {
  override name = 'WebConfigError';
  readonly exitCode = 2;
}

export const LOOPBACK_HOSTS: readonly string[] = Object.freeze(['127.0.0.1', 'localhost', '::1']);

export function isLoopback(host: string): boolean {
  return LOOPBACK_HOSTS.includes(host.toLowerCase().replace(/^\[|\]$/g, ''));
}

/** How a host is written in a URL or a Host header: IPv6 in brackets. */
export function urlHost(host: string): string {
  const h = host.replace(/^\[|\]$/g, '');
  return h.includes(':') ? `[${h}]` : h;
}

export const TOKEN_FILE = 'web-token';
export const COOKIE = 'sunset_token';

/**
 * The token: the configured one, else stateDir/web-token (mode 0600), generated at first start and
 * reused after. Two processes starting at once agree: the file is created exclusively.
 */
export function loadToken(
  stateDir: string,
  configured: string | null,
  o: { ephemeral?: boolean } = {},
): { token: string; source: 'config' | 'file' | 'generated' | 'ephemeral' } {
  if (configured) return { token: configured, source: 'config' };
  // a dry run writes nothing into stateDir: an existing token is used, else one for this run only
  if (o.ephemeral) {
    const existing = readToken(join(stateDir, TOKEN_FILE));
    return existing ? { token: existing, source: 'file' } : { token: randomBytes(32).toString('base64url'), source: 'ephemeral' };
  }
  const file = join(stateDir, TOKEN_FILE);
  mkdirSync(stateDir, { recursive: true });
  const existing = readToken(file);
  if (existing) return { token: existing, source: 'file' };
  const token = randomBytes(32).toString('base64url');
  if (!createFileOnceSync(file, `${token}\n`, { mode: 0o600 })) {
    const other = readToken(file);
    if (!other) throw new WebConfigError(`${file} exists but holds no token: remove it, and sunset makes a new one at the next start`);
    return { token: other, source: 'file' };
  }
  return { token, source: 'generated' };
}

function readToken(file: string): string | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw new WebConfigError(`${file} cannot be read (${errorCode(err) ?? errorMessage(err)}): sunset keeps the web token there`);
  }
  // a token file anyone else can read is no lock: tighten it
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const t = text.trim();
  return t.length >= 16 ? t : null;
}

/** Constant-time: hash both sides to one length first, so neither the length nor a prefix leaks. */
export function tokenMatches(given: string | null | undefined, token: string): boolean {
  if (typeof given !== 'string' || !given) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

export function bearer(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

export function cookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) {
      try {
        return decodeURIComponent(part.slice(i + 1).trim());
      } catch {
        return null; // a malformed cookie is no token
      }
    }
  }
  return null;
}

/** The names this server answers to: the bound host, and on loopback every loopback name. */
export function ownHosts(host: string, port: number): Set<string> {
  const names = isLoopback(host) ? [...LOOPBACK_HOSTS, host] : [host];
  return new Set(names.map((h) => `${urlHost(h)}:${port}`.toLowerCase()));
}

export function ownOrigins(host: string, port: number): Set<string> {
  return new Set([...ownHosts(host, port)].map((h) => `http://${h}`));
}

export type Refusal = { status: 401 | 403; error: string };

export interface LockOptions {
  host: string;
  port: number;
  token: string;
  loopback: boolean;
}

export interface RequestFacts {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

/** The routes a person needs to reach to give the token (off loopback, there is no other way in). */
const OPEN_OFF_LOOPBACK = new Set(['/login']);

/** Null when the request may go on; else why not. Pure over the request's facts. */
export function checkRequest(r: RequestFacts, o: LockOptions): Refusal | null {
  const h = (k: string) => {
    const v = r.headers[k];
    return Array.isArray(v) ? v[0] : v;
  };
  // DNS rebinding: a page on another site that resolves its own name to 127.0.0.1 sends its own Host
  if (o.loopback) {
    const host = h('host')?.toLowerCase();
    if (!host || !ownHosts(o.host, o.port).has(host))
      return {
        status: 403,
        error: `foreign host ${JSON.stringify(host ?? '')}: this server answers only to ${[...ownHosts(o.host, o.port)].join(', ')}`,
      };
  }
  // Off loopback (a wildcard or LAN bind) the server is reached by whatever name the Host header says;
  // there every route needs the token, which a page on another site does not have.
  const origin = h('origin');
  const own = ownOrigins(o.host, o.port);
  if (!o.loopback && h('host')) own.add(`http://${h('host')!.toLowerCase()}`);
  if (origin !== undefined && !own.has(origin.toLowerCase())) return { status: 403, error: `foreign origin ${JSON.stringify(origin)}` };

  const reading = r.method === 'GET' || r.method === 'HEAD';
  const needsToken = !reading || !o.loopback;
  if (!needsToken) return null;
  if (r.method === 'POST' && r.path === '/login') return null; // the body carries the token; checked there
  if (reading && OPEN_OFF_LOOPBACK.has(r.path)) return null;
  if (tokenMatches(bearer(h('authorization')), o.token)) return null;
  // a browser off loopback carries the token in a cookie set by /login: for reads only, never for a POST
  if (reading && tokenMatches(cookie(h('cookie'), COOKIE), o.token)) return null;
  return {
    status: 401,
    error: reading
      ? 'this server needs the token: Authorization: Bearer <token>, or sign in at /login'
      : 'every POST needs Authorization: Bearer <token>',
  };
}
