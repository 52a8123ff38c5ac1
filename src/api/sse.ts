/**
 * The daemon's one server-sent-events writer: `GET /v1/events` and every streamed answer (`Accept:
 * text/event-stream` on /v1/request, /v1/catalog, GET /v1/ask/:id) write their frames here. A stream
 * hijacks its reply, so fastify's onSend scrubber never sees it: each frame is scrubbed here instead,
 * and nothing is written once the response ended. A caller that stops reading is cut off alone
 * (../front/unread-guard.ts): a feed writes whatever happens, whether or not anyone takes it.
 */
import type { FastifyReply } from 'fastify';
import type { Logger } from '../log.js';
import { DEFAULT_UNREAD_LIMITS, UnreadGuard, type UnreadLimits } from '../front/unread-guard.js';

export interface SseStream {
  /** One frame: `id: <id>` (when given), `event: <event>`, `data: <data as JSON>`. */
  send(event: string, data: unknown, id?: number): void;
  /** A comment line, which EventSource ignores (a feed's greeting, its heartbeat). */
  comment(text: string): void;
  /** Ends the response; also when the caller goes away. Idempotent. */
  close(): void;
  /** Called once, when the stream ends (closed here, by the caller, or by the daemon closing). */
  onClose(fn: () => void): void;
}

export interface SseOptions {
  /**
   * A feed (`/v1/events`): open until the caller leaves or the daemon closes, so it says
   * `Connection: keep-alive`, sends a `: ping` comment every 15 s and is ended by `closeAll`.
   * Otherwise an answer: progress frames and a last one, then closed by its route.
   */
  feed?: boolean;
}

const HEARTBEAT_MS = 15_000;

export class SseWriter {
  private readonly feeds = new Set<SseStream>();

  constructor(
    private readonly scrub: (text: string) => string,
    /** What may wait for a stream's reader, read for each new stream. */
    private readonly limits: () => UnreadLimits = () => DEFAULT_UNREAD_LIMITS,
    private readonly log?: Logger,
  ) {}

  /** Takes the reply over (hijacked) and answers 200 `text/event-stream`. */
  open(reply: FastifyReply, opts: SseOptions = {}): SseStream {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      ...(opts.feed ? { connection: 'keep-alive' } : {}),
      'x-accel-buffering': 'no',
    });
    const scrub = this.scrub;
    const url = reply.request.url.split('?')[0];
    // The connection is watched, not the response: the last frame may still wait in it once the response has ended.
    const guard = new UnreadGuard(res.socket ?? res, this.limits(), (o) => {
      this.log?.warn({ url, reason: o.reason, queuedBytes: o.queued }, `closed an event stream: ${o.message}`);
      res.destroy();
    });
    const write = (text: string) => {
      if (!res.writableEnded && !res.destroyed && !res.write(text)) guard.check();
    };
    const closers: Array<() => void> = [];
    let ping: NodeJS.Timeout | undefined;
    let closed = false;
    const stream: SseStream = {
      send: (event, data, id) => write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${scrub(JSON.stringify(data))}\n\n`),
      comment: (text) => write(`: ${text}\n\n`),
      close: () => {
        if (closed) return;
        closed = true;
        if (ping) clearInterval(ping);
        this.feeds.delete(stream);
        for (const fn of closers) fn();
        if (!res.writableEnded) res.end();
      },
      onClose: (fn) => {
        if (closed) fn();
        else closers.push(fn);
      },
    };
    if (opts.feed) {
      ping = setInterval(() => stream.comment('ping'), HEARTBEAT_MS);
      ping.unref();
      this.feeds.add(stream);
      reply.request.raw.once('close', stream.close);
    }
    res.once('close', stream.close);
    // Closed once what it wrote has left (or the caller went away).
    res.once('close', () => guard.stop());
    return stream;
  }

  /** Ends every open feed (the daemon is closing: they would hold it open). */
  closeAll(): void {
    for (const feed of [...this.feeds]) feed.close();
  }
}
