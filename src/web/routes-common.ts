// What every route of the web shares: the pipeline's deps and the token, the fleet as the pages and the API
// read it, and how a page is sent. Apart from server.ts so that each area's routes (routes-*.ts) stand alone.
import type { FastifyReply } from 'fastify';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { FleetSnapshot } from '../evidence/fleet.js';
import { CLIENT_JS_HASH } from './client.js';

export interface WebContext {
  deps: PipelineDeps;
  /** The web's token (web.token, or one generated into stateDir): the pages carry it for their POSTs; /login takes it. */
  token: string;
  stateDir: string;
  /** config.maxExitRequests */
  max: number;
  /** The fleet, at most READ_AGE_MS old. */
  snapshot(): Promise<FleetSnapshot>;
}

const PAGE_CSP = `default-src 'none'; script-src ${CLIENT_JS_HASH}; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;
/** Pages and API answers may use evidence this old: a refresh every few seconds costs one sweep, shared. */
export const READ_AGE_MS = 2000;
/** The longest reason a person may give (an acknowledgement's, an exit request's). */
export const MAX_REASON = 500;

export function sendPage(reply: FastifyReply, body: string) {
  return reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8').send(body);
}

/** A page or answer built on a roster that did not answer is a 503 (with what could be shown). */
export const rosterStatus = (snap: FleetSnapshot) => (snap.roster.ok ? 200 : 503);
