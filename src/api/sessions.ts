/**
 * Browser sessions of the API's pages: an approver or operator signs in with
 * a token once, and the browser then carries a session cookie instead.
 *
 * Sessions live on the server (in this process's memory, 8 hours by
 * default): the cookie `agent_session` holds a random 32-byte id (HttpOnly,
 * SameSite=Strict, Path=/, Secure over https); the server keeps only the
 * SHA-256 of that id, the subject, the roles, the groups and the session's CSRF token.
 * The token that signed in is checked once and never kept.
 *
 * The inbox page signs people in and out; the codec server (`codec.ts`)
 * accepts the same session, so an operator signed in to the inbox can let
 * the Temporal UI decode payloads.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Flash } from './inbox-page';
import type { ApiPrincipal, ApiRole } from './tokens';

/** The session cookie's name. */
export const SESSION_COOKIE = 'agent_session';
/** How long a session lasts from sign-in, by default. */
export const DEFAULT_SESSION_TTL_MS = 8 * 60 * 60 * 1000;

/** A signed-in browser. */
export interface BrowserSession {
  subject: string;
  roles: ApiRole[];
  /** The groups the token that signed in gave (which approval policy rules let the person decide). */
  groups: string[];
  /** The synchronizer token the session's forms carry. */
  csrf: string;
  expiresAt: number;
  /** Shown once, on the next page (e.g. why a decision was refused). */
  flash?: Flash;
}

const sha256hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Whether `sent` is the session's CSRF token, compared in time that does not depend on where they differ. */
export function csrfMatches(session: BrowserSession, sent: string | undefined): boolean {
  if (sent === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(sent), digest(session.csrf));
}

/**
 * The request's `Origin` when it names another site than this host (a write a session cookie must not carry); undefined
 * when it names none or this one.
 */
export function foreignOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  return host === request.host ? undefined : origin;
}

/** The principal a session acts as: who signed in, with the roles and groups their token gave. */
export function sessionPrincipal(session: BrowserSession): ApiPrincipal {
  return { subject: session.subject, roles: new Set(session.roles), groups: new Set(session.groups) };
}

/** The sessions of one API process, keyed by the SHA-256 of their ids (the ids themselves are only in the cookies). */
export class BrowserSessions {
  private readonly sessions = new Map<string, BrowserSession>();

  constructor(private readonly ttlMs: number = DEFAULT_SESSION_TTL_MS) {}

  /** The session id the request's cookie carries, if any (valid or not). */
  cookieOf(request: FastifyRequest): string | undefined {
    const header = request.headers.cookie;
    return header ? parseCookie(header)[SESSION_COOKIE] : undefined;
  }

  /** The request's live session; an expired one is dropped. */
  of(request: FastifyRequest): BrowserSession | undefined {
    const id = this.cookieOf(request);
    if (!id) return undefined;
    const key = sha256hex(id);
    const session = this.sessions.get(key);
    if (session && session.expiresAt <= Date.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return session;
  }

  /**
   * Signs `principal` in: a new id at every sign-in (never one the browser
   * brought along), the browser's old session ends, and the cookie is set.
   */
  start(request: FastifyRequest, reply: FastifyReply, principal: ApiPrincipal): BrowserSession {
    const now = Date.now();
    for (const [key, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(key);
    const old = this.cookieOf(request);
    if (old) this.sessions.delete(sha256hex(old));
    const id = randomBytes(32).toString('base64url');
    const session: BrowserSession = {
      subject: principal.subject,
      roles: [...principal.roles],
      groups: [...principal.groups],
      csrf: randomBytes(32).toString('base64url'),
      expiresAt: now + this.ttlMs,
    };
    this.sessions.set(sha256hex(id), session);
    this.setCookie(request, reply, id, Math.floor(this.ttlMs / 1000));
    return session;
  }

  /** Signs the request's browser out: its session ends and its cookie is cleared. */
  end(request: FastifyRequest, reply: FastifyReply): void {
    const id = this.cookieOf(request);
    if (id) this.sessions.delete(sha256hex(id));
    this.setCookie(request, reply, '', 0);
  }

  private setCookie(request: FastifyRequest, reply: FastifyReply, value: string, maxAgeSeconds: number): void {
    reply.header(
      'set-cookie',
      stringifySetCookie({
        name: SESSION_COOKIE,
        value,
        httpOnly: true,
        sameSite: 'strict',
        path: '/',
        secure: request.protocol === 'https',
        maxAge: maxAgeSeconds,
      }),
    );
  }
}
