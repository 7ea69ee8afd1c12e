// The HTTP the web channels share: a POST with a deadline whose answer is told in words (never thrown), and a
// probe that only asks whether anything answers at the URL (a HEAD: any HTTP status is an answer; nothing is posted).
import { errorMessage } from '../../errors.js';
import type { Answer } from './types.js';

/** A URL as said in logs and answers: no user, password or query (a chat webhook's path is its secret: cut). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    const path = u.pathname.length > 24 ? `${u.pathname.slice(0, 12)}…` : u.pathname;
    return `${u.protocol}//${u.host}${path}`;
  } catch {
    return '(not a URL)';
  }
}

export async function post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Answer> {
  try {
    const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    const text = (await res.text().catch(() => '')).slice(0, 200).replace(/\s+/g, ' ').trim();
    return { ok: res.ok, status: res.status, detail: `HTTP ${res.status}${text ? `: ${text}` : ''}` };
  } catch (err) {
    return { ok: false, status: null, detail: `${shownUrl(url)}: ${causeOf(err)}` };
  }
}

/** A URL's origin alone (`https://hooks.example.com`): what the probe says of it, never its path, query or user. */
export function originOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(not a URL)';
  }
}

/**
 * The probe: an HTTP HEAD to the whole URL (a HEAD carries no body: nothing a person reads is sent; any HTTP
 * answer is an answer). Says only the URL's origin — a chat webhook's path is its secret.
 */
export async function reach(url: string, headers: Record<string, string>, timeoutMs: number): Promise<Answer> {
  try {
    const res = await fetch(url, { method: 'HEAD', headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await res.arrayBuffer().catch(() => undefined);
    return { ok: true, status: res.status, detail: `${originOf(url)} answers (HTTP ${res.status} to HEAD; nothing sent)` };
  } catch (err) {
    return { ok: false, status: null, detail: `${originOf(url)}: ${causeOf(err)}` };
  }
}

/** fetch says only "fetch failed": the cause (ECONNREFUSED, a timeout, a bad certificate) is what a person needs. */
function causeOf(err: unknown): string {
  const cause = (err as { cause?: unknown })?.cause;
  if ((err as { name?: string })?.name === 'TimeoutError') return 'no answer before the timeout (probeTimeout)';
  return cause ? errorMessage(cause) : errorMessage(err);
}
