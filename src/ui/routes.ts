/**
 * The `mcpx ui` page as a fastify plugin (registered by src/api/app.ts, under its access hook):
 *
 *   POST /v1/ui/login              a one-time login code and the page's address (socket, or bearer token)
 *   GET  /ui/login?code=…          trades the code for the page cookie, then redirects to /ui/ (from
 *                                  another site or a file: a page of its own that goes on to /ui/)
 *   GET  /ui/                      the page
 *   GET  /ui/assets/app.js         its script
 *   GET  /ui/assets/mermaid.min.js Mermaid, the build's copy in dist/assets (no CDN)
 *   GET  /ui/api/state             what the page draws (./view.ts)
 *
 * The page loads nothing from anywhere but the daemon (its Content-Security-Policy says so too) and
 * follows /v1/events for live updates. Its GET routes admit the page's cookie in place of the bearer
 * token (route config, read by src/api/app.ts's access hook); /ui/login admits anyone (the code is
 * the credential), and so do /ui and /ui/ themselves, which answer a browser without a session with a
 * page saying to run `mcpx ui` again (they hold no data: that comes from the reads).
 */
import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Controller } from '../core/controller.js';
import { cookieName, UI_SESSION_TTL_MS, type UiHub } from './hub.js';
import { localMermaid } from './statechart-page.js';

// The page, its script and its state view load on the first request for them: most daemons never
// serve the page, and loading them is part of every start otherwise.
const page = () => import('./page.js');
const view = () => import('./view.js');

export const UI_MERMAID_URL = '/ui/assets/mermaid.min.js';

export interface UiRoutesOptions {
  controller: Controller;
  hub: UiHub;
  listener: 'socket' | 'tcp';
}

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY');
}

/**
 * A refusal a person reads: a stale login address or a bookmarked page opened without a live session
 * lands here in a browser, so it is a page (401) that says how to get in again, not JSON.
 */
const refused = (reply: FastifyReply, why: string) =>
  pageHeaders(reply)
    .code(401)
    // As every other 401: a caller without the credential does not keep its connection open.
    .header('connection', 'close')
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html>\n<html lang="en">\n<meta charset="utf-8">\n<title>mcpx ui: log in again</title>\n` +
        `<style>body{font:16px/1.5 system-ui,sans-serif;max-width:640px;margin:60px auto;padding:0 20px;color:#1d1d1f}code{background:#f3f4f6;padding:2px 6px;border-radius:4px}</style>\n` +
        `<h1>This page needs a new login address</h1>\n<p id="why">${why}</p>\n` +
        `<p>Run <code>mcpx ui</code> again (or <code>mcpx ui --open</code>) and open the address it prints: each address works once, for 10 minutes, and logs this browser in for as long as the daemon runs.</p>\n</html>\n`,
    );

/** Requests to the page that neither the token nor the page's cookie admits: answered with `refused`. */
const notLoggedIn = new WeakSet<FastifyRequest>();

export const uiRoutes: FastifyPluginAsync<UiRoutesOptions> = async (app: FastifyInstance, opts: UiRoutesOptions) => {
  const { controller, hub, listener } = opts;
  // A read of the page: its cookie stands in for the token (src/ui/hub.ts).
  const pageRead = { config: { admitsWithoutToken: (req: FastifyRequest) => hub.admits(req) } };

  app.post('/v1/ui/login', async (req, reply) => {
    let address = await hub.address();
    if (!address && listener === 'tcp') {
      const host = req.headers.host ?? '';
      const m = /^(.*):(\d+)$/.exec(host);
      if (m) address = { host: m[1]!, port: Number(m[2]) };
    }
    if (!address) {
      return reply.code(501).send({ ok: false, error: { code: 'MCPX_NOT_IMPLEMENTED', message: 'this daemon has no loopback TCP listener for the page' } });
    }
    const { code, expiresAt } = hub.newCode();
    const host = address.host.includes(':') ? `[${address.host}]` : address.host;
    const base = `http://${host}:${address.port}`;
    return { ok: true, url: `${base}/ui/login?code=${code}`, page: `${base}/ui/`, expiresAt, inspector: hub.inspectorUrl };
  });

  app.get('/ui/login', { config: { admitsWithoutToken: () => true } }, async (req, reply) => {
    const code = (req.query as { code?: unknown }).code;
    const secret = typeof code === 'string' && code.length > 0 && code.length < 200 ? hub.redeem(code) : undefined;
    if (!secret) return refused(reply, 'This login address is unknown, expired or already used.');
    const port = /:(\d+)$/.exec(req.headers.host ?? '')?.[1] ?? '80';
    reply.header('set-cookie', `${cookieName(port)}=${secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(UI_SESSION_TTL_MS / 1000)}`);
    // Sent on from another page (`mcpx ui --open`'s login file is a file:// page): a redirect would carry
    // that cross-site start to /ui/, where the page refuses it and SameSite=Strict withholds the cookie.
    // A page of the daemon's own moves the browser on instead, a same-origin navigation.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'none' && site !== 'same-origin') {
      return pageHeaders(reply)
        .code(200)
        .type('text/html; charset=utf-8')
        .send(
          '<!doctype html>\n<meta charset="utf-8">\n<meta http-equiv="refresh" content="0;url=/ui/">\n<title>mcpx ui</title>\n<p>Logged in. <a href="/ui/">Open the page</a></p>\n',
        );
    }
    return reply.code(303).header('location', '/ui/').header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').send();
  });

  // The page's own address admits anyone past the token check (the Host/Origin check still applies) so that
  // a browser without a session (a bookmark, a daemon restarted) gets `refused`, a page, instead of JSON.
  // It holds nothing: what it shows comes from the reads below, which the cookie must open.
  const pageItself = {
    config: {
      admitsWithoutToken: (req: FastifyRequest) => {
        if (!hub.admits(req)) notLoggedIn.add(req);
        return true;
      },
    },
  };

  app.get('/ui', { config: { admitsWithoutToken: () => true } }, async (_req, reply) => reply.code(301).header('location', '/ui/').send());

  app.get('/ui/', pageItself, async (req, reply) =>
    notLoggedIn.has(req)
      ? refused(reply, 'This browser is not logged in to the page (its login ended, or the daemon started again).')
      : pageHeaders(reply)
          .type('text/html; charset=utf-8')
          .send((await page()).UI_PAGE),
  );

  app.get('/ui/assets/app.js', pageRead, async (_req, reply) =>
    pageHeaders(reply)
      .type('text/javascript; charset=utf-8')
      .send((await page()).UI_SCRIPT),
  );

  app.get(UI_MERMAID_URL, pageRead, async (_req, reply) => {
    const file = localMermaid();
    if (!file)
      return reply.code(404).send({
        ok: false,
        error: { code: 'MCPX_NOT_FOUND', message: "the build's copy of mermaid (dist/assets/mermaid.min.js) is missing: run npm run build" },
      });
    return reply
      .header('cache-control', 'private, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .type('text/javascript; charset=utf-8')
      .send(createReadStream(file));
  });

  app.get('/ui/api/state', pageRead, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    return (await view()).uiState(controller, hub);
  });
};
