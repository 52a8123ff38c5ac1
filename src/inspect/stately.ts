/**
 * `mcpx daemon --inspect[=PORT]`: every pool and session actor streamed to the Stately inspector.
 *
 * Loaded only with `--inspect` (src/daemon/daemon.ts imports this module dynamically). Two parts:
 *
 * - A relay of mcpx's own on 127.0.0.1:PORT (not `@statelyai/inspect/server`, which listens on every
 *   interface and opens a browser by itself): an HTTP page that frames Stately's inspector viewer
 *   (https://stately.ai/inspect — served from the web; nothing else here is) and forwards the events
 *   to it, and a WebSocket endpoint `/relay` that takes events from the daemon and hands them to the
 *   pages. Host must be loopback, a browser's Origin must be the relay's own, and every WebSocket
 *   needs the relay's random token (the page gets it from its URL fragment, which no server sees).
 * - `@statelyai/inspect`'s WebSocket inspector (`createWebSocketInspector`) in the daemon, pointed at
 *   that relay, never at the hosted Sky relay. Each actor gets its own inspector session id
 *   (`pool:<server>`, `session:<server>:<instance>`; xstate numbers every root actor `x:0`). Context and
 *   events are sanitized (./sanitize.ts) and every frame passes the secret scrubber. The package's
 *   socket loop retries forever, even after `stop()`; the connection is therefore driven here, and
 *   `stop()` ends it for good.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { InspectionEvent } from 'xstate';
import { WebSocket, WebSocketServer } from 'ws';
import { McpxError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { InspectSource } from '../pool/types.js';
import { DEFAULT_INSPECT_PORT, STATELY_VIEWER_URL } from './constants.js';
import { sanitize, sanitizeEvent } from './sanitize.js';

export { DEFAULT_INSPECT_PORT, STATELY_VIEWER_URL };

/** Events the relay keeps for a page that connects late (the daemon's actors were created before it). */
const RELAY_BACKLOG = 1000;

export interface StatelyInspectorOptions {
  port?: number;
  scrub?: (text: string) => string;
  logger?: Logger;
  /** Retry delay of the daemon's connection to its relay; default 1 s. */
  retryMs?: number;
}

export interface StatelyInspector {
  /** The page to open: the relay's viewer page, with the token in its fragment. */
  readonly url: string;
  readonly port: number;
  /** The xstate inspection hook (ServerPoolDeps['inspect']). */
  inspect(event: InspectionEvent, source: InspectSource): void;
  /** For tests: is the daemon's socket open, is a reconnect scheduled, how many connections were tried. */
  connection(): { open: boolean; retryPending: boolean; stopped: boolean; attempts: number };
  /** For tests: the relay drops every connection (as a relay restart would); the daemon's side reconnects. */
  dropConnections(): void;
  /** Ends the connection loop and closes the relay. */
  stop(): Promise<void>;
}

interface AdapterInternals {
  ws?: WebSocket;
  status: string;
  deferredEvents: unknown[];
  safeStringify: (v: unknown) => string;
  start(): void;
  stop(): void;
  send(event: unknown): void;
}

const LOOPBACK_HOST = /^(127(?:\.\d{1,3}){3}|localhost|\[::1\])(?::\d+)?$/i;

function sameToken(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The relay's page: frames Stately's viewer and forwards the relay's events to it. */
function viewerPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mcpx · Stately inspector</title>
<style>html,body{height:100%;margin:0}iframe{width:100%;height:100%;border:0}#note{position:fixed;bottom:0;left:0;font:12px system-ui;background:#fffbe6;padding:2px 6px}</style>
</head>
<body>
<iframe id="inspector" src="${STATELY_VIEWER_URL}"></iframe>
<div id="note">mcpx relay on this machine; the viewer above is Stately's page from ${STATELY_VIEWER_URL}</div>
<script>
  const frame = document.getElementById('inspector');
  const token = decodeURIComponent(location.hash.slice(1));
  const buffer = [];
  let connected = false;
  window.addEventListener('message', (e) => {
    if (e.source === frame.contentWindow && e.data && e.data.type === '@statelyai.connected') {
      connected = true;
      for (const ev of buffer.splice(0)) frame.contentWindow.postMessage(ev, '*');
    }
  });
  const ws = new WebSocket('ws://' + location.host + '/relay?role=viewer&token=' + encodeURIComponent(token));
  ws.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    if (connected) frame.contentWindow.postMessage(ev, '*'); else buffer.push(ev);
  };
  ws.onclose = () => { document.getElementById('note').textContent = 'the mcpx relay closed (daemon stopped, or a wrong token in the address)'; };
</script>
</body>
</html>
`;
}

/** Starts the relay and the inspector; resolves once the relay listens. @throws McpxError MCPX_BAD_SETTING when the port is taken. */
export async function startStatelyInspector(opts: StatelyInspectorOptions = {}): Promise<StatelyInspector> {
  const log = (opts.logger ?? silentLogger).child({ component: 'inspect' });
  const scrub = opts.scrub ?? ((t: string) => t);
  const token = randomBytes(24).toString('base64url');
  const retryMs = opts.retryMs ?? 1000;

  // ---- the relay ----
  const backlog: string[] = [];
  const viewers = new Set<WebSocket>();
  const server: Server = createServer((req, res) => {
    if (!LOOPBACK_HOST.test(req.headers.host ?? '')) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('mcpx answers only loopback requests\n');
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (path === '/' || path === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end(viewerPage());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 * 1024 });
  let port = 0;
  const refuse = (socket: Duplex, status: number, why: string) => {
    log.warn({ why }, 'refused a connection to the inspector relay');
    socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (!LOOPBACK_HOST.test(req.headers.host ?? '')) return refuse(socket, 403, 'Host is not loopback');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://127.0.0.1:${port}` && origin !== `http://localhost:${port}`)
      return refuse(socket, 403, `Origin ${origin} is not the relay's page`);
    if (url.pathname !== '/relay' || !sameToken(url.searchParams.get('token'), token)) return refuse(socket, 401, 'no or a wrong token');
    const role = url.searchParams.get('role') === 'source' && origin === undefined ? 'source' : 'viewer';
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (role === 'viewer') {
        viewers.add(ws);
        for (const m of backlog) ws.send(m);
        ws.on('close', () => viewers.delete(ws));
        ws.on('message', () => undefined); // viewers only listen
      } else {
        ws.on('message', (data) => {
          const msg = data.toString();
          backlog.push(msg);
          if (backlog.length > RELAY_BACKLOG) backlog.shift();
          for (const v of viewers) if (v.readyState === WebSocket.OPEN) v.send(msg);
        });
      }
      ws.on('error', () => undefined);
    });
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        new McpxError(
          'MCPX_BAD_SETTING',
          `--inspect: cannot listen on 127.0.0.1:${opts.port ?? DEFAULT_INSPECT_PORT} (${err.code ?? err.message}); choose another port with --inspect=PORT`,
          { data: { port: opts.port ?? DEFAULT_INSPECT_PORT } },
        ),
      );
    };
    server.once('error', onError);
    server.listen({ host: '127.0.0.1', port: opts.port ?? DEFAULT_INSPECT_PORT }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  // ---- the inspector ----
  const { createWebSocketInspector } = await import('@statelyai/inspect');
  const sourceUrl = `ws://127.0.0.1:${port}/relay?role=source&token=${token}`;
  const inspector = createWebSocketInspector({
    url: sourceUrl,
    autoStart: false,
    maxDeferredEvents: 500,
    filter: (e) => e.type === '@xstate.actor' || e.type === '@xstate.event' || e.type === '@xstate.snapshot',
    sanitizeContext: (ctx: unknown) => sanitize(ctx, { scrub }),
    sanitizeEvent: (ev: { type: string }) => sanitizeEvent(ev, { scrub }),
  } as Parameters<typeof createWebSocketInspector>[0]);
  const adapter = (inspector as unknown as { adapter: AdapterInternals }).adapter;
  // Belt and braces: whatever the sanitizers missed, a known secret never leaves in a frame.
  const stringify = adapter.safeStringify.bind(adapter);
  adapter.safeStringify = (v: unknown) => scrub(stringify(v));

  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let current: WebSocket | undefined;
  let attempts = 0;
  const connect = () => {
    retry = undefined;
    if (stopped) return;
    attempts++;
    const ws = new WebSocket(sourceUrl);
    current = ws;
    adapter.ws = ws;
    ws.on('open', () => {
      if (stopped) return ws.close();
      adapter.status = 'open';
      for (const e of adapter.deferredEvents.splice(0)) ws.send(adapter.safeStringify(e));
    });
    ws.on('error', () => undefined); // 'close' follows
    ws.on('close', () => {
      if (current === ws) current = undefined;
      adapter.status = 'closed';
      if (!stopped && !retry) {
        retry = setTimeout(connect, retryMs);
        retry.unref();
      }
    });
  };
  // The package's start() loops on errors with no way out; this connection is ours to end.
  adapter.start = connect;
  adapter.stop = () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    retry = undefined;
    current?.terminate();
    adapter.status = 'closed';
  };
  inspector.start();

  const idOf = (source: InspectSource) => (source.actor === 'pool' ? `pool:${source.server}` : `session:${source.server}:${source.instance}`);
  const url = `http://127.0.0.1:${port}/#${token}`;
  log.info(
    { url: `http://127.0.0.1:${port}/`, viewer: STATELY_VIEWER_URL },
    'Stately inspector relay ready: open the address in the daemon\'s log line "inspector page" (its viewer is Stately\'s web page)',
  );
  log.info({ page: url }, 'inspector page');

  return {
    url,
    port,
    inspect(ev, source) {
      if (stopped || (ev.type !== '@xstate.actor' && ev.type !== '@xstate.event' && ev.type !== '@xstate.snapshot')) return;
      const sid = idOf(source);
      const ref = ev.actorRef as unknown as { logic?: unknown; getSnapshot(): unknown };
      const actorRef = { id: sid, sessionId: sid, logic: ref.logic, _parent: undefined, getSnapshot: () => ref.getSnapshot() };
      inspector.inspect.next?.({
        ...ev,
        actorRef,
        rootId: sid,
        ...(ev.type === '@xstate.event' ? { sourceRef: undefined } : {}),
      } as unknown as InspectionEvent);
    },
    connection() {
      return { open: current?.readyState === WebSocket.OPEN, retryPending: retry !== undefined, stopped, attempts };
    },
    dropConnections() {
      for (const c of wss.clients) c.terminate();
    },
    async stop() {
      if (stopped) return;
      inspector.stop();
      for (const v of viewers) v.terminate();
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
