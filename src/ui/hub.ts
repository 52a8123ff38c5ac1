/**
 * What the `mcpx ui` page needs from the daemon, shared by its listeners: the probe ring, the page's
 * address (the loopback TCP listener, opened on first use when `daemon.port` is off), and who may see it.
 *
 * Access follows the TCP rules of /v1 (loopback Host and Origin, checked for every request in
 * src/api/app.ts) with one addition a browser needs, since a page cannot send `Authorization`:
 * `mcpx ui` asks the daemon (over its socket, or with the bearer token) for a one-time login code;
 * `GET /ui/login?code=…` trades it for an HttpOnly, SameSite=Strict cookie naming a random page
 * session. That cookie opens only GET requests of the routes that admit it — the page's own
 * (./routes.ts) and the /v1 reads it makes, declared `page` (src/api/v1-routes.ts: /v1/events,
 * /v1/status, /v1/protocol, /v1/statecharts/…) — and only from the page's own origin; it never opens a
 * write, /mcp, or a tool call. Codes live 10 minutes and work once; sessions end with the daemon.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ProbeRing } from './probe-ring.js';

export const LOGIN_CODE_TTL_MS = 10 * 60_000;
export const UI_SESSION_TTL_MS = 12 * 3_600_000;
const MAX_CODES = 32;
const MAX_SESSIONS = 32;

export interface UiAddress {
  host: string;
  port: number;
}

export interface UiHubOptions {
  scrub?: (text: string) => string;
  /** The page's listener (opened on first use); none: the address the login request came to. */
  address?: () => Promise<UiAddress>;
  now?: () => number;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function cookieName(port: string | number): string {
  return `mcpx_ui_${String(port).replace(/[^0-9]/g, '') || 'x'}`;
}

function cookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

function portOf(host: string | undefined): string {
  const m = /:(\d+)$/.exec(host ?? '');
  return m ? m[1]! : '80';
}

export class UiHub {
  readonly probes: ProbeRing;
  /** The Stately inspector's page, when the daemon runs with --inspect. */
  inspectorUrl: string | null = null;
  private readonly codes = new Map<string, number>();
  private readonly sessions = new Map<string, number>();
  private readonly addressOf: (() => Promise<UiAddress>) | undefined;
  private readonly now: () => number;

  constructor(opts: UiHubOptions = {}) {
    this.probes = new ProbeRing(opts.scrub ? { scrub: opts.scrub } : {});
    this.addressOf = opts.address;
    this.now = opts.now ?? Date.now;
  }

  /** The page's listener, opened if need be; undefined when this hub has none of its own. */
  async address(): Promise<UiAddress | undefined> {
    return this.addressOf?.();
  }

  /** A new one-time login code. */
  newCode(): { code: string; expiresAt: string } {
    this.sweep();
    const code = randomBytes(24).toString('base64url');
    const expires = this.now() + LOGIN_CODE_TTL_MS;
    this.codes.set(code, expires);
    while (this.codes.size > MAX_CODES) this.codes.delete(this.codes.keys().next().value as string);
    return { code, expiresAt: new Date(expires).toISOString() };
  }

  /** Trades a login code (once) for a page session secret; undefined when the code is unknown, used or expired. */
  redeem(code: string): string | undefined {
    this.sweep();
    let found: string | undefined;
    for (const c of this.codes.keys()) if (same(c, code)) found = c;
    if (found === undefined) return undefined;
    this.codes.delete(found);
    const secret = randomBytes(32).toString('base64url');
    this.sessions.set(secret, this.now() + UI_SESSION_TTL_MS);
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    return secret;
  }

  /**
   * Whether a request without the bearer token to a route the page reads may go on: a read (GET,
   * HEAD) with a live page-session cookie, from the page's own origin.
   */
  admits(req: FastifyRequest): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const host = req.headers.host;
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`) return false;
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
    const secret = cookies(req.headers.cookie).get(cookieName(portOf(host)));
    if (!secret) return false;
    this.sweep();
    for (const s of this.sessions.keys()) if (same(s, secret)) return true;
    return false;
  }

  private sweep(): void {
    const now = this.now();
    for (const [c, t] of this.codes) if (t <= now) this.codes.delete(c);
    for (const [s, t] of this.sessions) if (t <= now) this.sessions.delete(s);
  }
}
