/**
 * `mcpx serve`: a pipe between the MCP client's stdio and its stream in the daemon, where the front
 * answers it (../front/socket-entry.ts). Bytes are copied both ways as they come; of each message only the top
 * level is read (../transports/line-scanner.ts), to keep what the daemon cannot keep for itself, since it is what
 * goes away:
 *
 * - **The client's open requests.** When the stream closes under them (the daemon died, or stopped),
 *   each is answered here: a `tools/call` with an `isError` result saying the daemon went away and that
 *   the call was not retried (a tool may have side effects), any other request with a JSON-RPC error —
 *   except what is safe to send again (the handshake, pings, listings), which goes to the next daemon,
 *   once, and a `subscriptions/listen`, which waits for the next stream.
 * - **The client's era.** Its `initialize` (once answered) or the `_meta` of its first 2026-07-28
 *   request. The next stream (a daemon found or started when the client next sends something) is opened
 *   in that era: the `initialize` and `notifications/initialized` sent again, or a `server/discover`
 *   with that `_meta`, and the answer swallowed, so the client never sees a second handshake. What the
 *   client sends meanwhile waits for it.
 * - **The daemon's open questions** (elicitation, sampling, roots): when their stream closes the client
 *   is told they are cancelled, and an answer to one that comes later is dropped, never handed to the
 *   next daemon, whose questions have ids of their own.
 *
 * A ping with no stream open is answered here (it needs no daemon). When the client closes stdin, serve
 * ends its side of the stream (the daemon aborts what is in flight, as a stdio server does) and exits
 * once the daemon has closed it.
 */
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../log.js';
import { LineScanner, type LineFacts } from '../transports/line-scanner.js';
import { SEPARATOR } from '../catalog/separator.js';
import { isObject } from '../is-object.js';

type Id = string | number;

export interface PipeOptions {
  input: Readable;
  output: Writable;
  /** Opens a stream to the daemon, starting one when none answers; rejects with an McpxError. */
  open: () => Promise<{ socket: Socket; head: Buffer }>;
  /** `--passthrough`: the one server every name belongs to. */
  passthrough?: string;
  logger: Logger;
}

/** A request of the client's with no answer yet. */
interface Open {
  id: Id;
  method: string;
  /** The line, unless it was too long to keep (sent again if the request is safe to repeat; a tool's name read from it). */
  line?: Buffer;
  /** The stream it went to; none while it waits for one. */
  stream?: Stream;
  /** Sent again after a stream closed under it (at most once, a listen stream excepted). */
  resent?: boolean;
}

interface Stream {
  socket: Socket;
  scanner: LineScanner;
  /** The daemon's requests to the client on this stream that the client has not answered. */
  asked: Map<string, Id>;
  closed: boolean;
}

/** What may go to another daemon when the stream closed before the answer came: nothing upstream sees it. */
const REPEATABLE = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'subscriptions/listen',
]);
/** A client line kept whole (to be parsed, held or sent again) up to this; longer ones are streamed through. */
const KEEP_BYTES = 1024 * 1024;
/** How long the next daemon has to answer the handshake sent again. */
const REPLAY_MS = 20_000;
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
const NEWLINE = Buffer.from('\n');

const keyOf = (id: Id) => (typeof id === 'number' ? `n:${id}` : `s:${id}`);
function parseObject(line: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(line.toString('utf8'));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined; // the daemon answers it with a parse error
  }
}
const envelopeOf = (params: unknown): Record<string, unknown> | undefined => {
  const meta = isObject(params) ? params['_meta'] : undefined;
  return isObject(meta) && typeof meta[PROTOCOL_VERSION_META] === 'string' ? meta : undefined;
};

export class Pipe {
  private readonly opts: PipeOptions;
  private readonly log: Logger;
  private stream: Stream | undefined;
  private phase: 'open' | 'opening' | 'closed' = 'closed';
  private readonly open = new Map<string, Open>();
  /** Client lines that wait for a stream (with the request each is, if one). */
  private held: Array<{ line: Buffer; entry?: Open }> = [];
  /** The client's line being read: its bytes while it is short enough to keep, where it was streamed otherwise. */
  private line: { parts: Buffer[]; bytes: number; kept: boolean; sentTo?: Stream } = { parts: [], bytes: 0, kept: true };
  private lineFacts: LineFacts | undefined;
  /** What the chunk being read sends the open stream. */
  private outgoing: Buffer[] = [];
  private readonly clientScanner = new LineScanner((f) => (this.lineFacts = f));
  /** The client's era: its answered initialize (and whether it sent initialized), or its first envelope. */
  private era: { initialize: Record<string, unknown>; initialized: boolean } | { meta: Record<string, unknown> } | undefined;
  private initializing: { key: string; params: Record<string, unknown> } | undefined;
  /** While a stream is opened again: the id of the handshake answer to swallow, and the lines read before it. */
  private swallow: { id: string; settle: (err?: Error) => void; buf: Buffer } | undefined;
  private replays = 0;
  /** In the daemon's chunk being read: where its first message with a method ended (-1: none). */
  private cut = -1;
  /** What waits a turn behind a message with a method (below). */
  private later: Buffer[] | undefined;
  /** The last write to the client ended mid-line (a stream that closed mid-answer). */
  private outputMidLine = false;
  private ending = false;
  private ended!: () => void;
  /** Settles when the client has gone and the stream is closed. */
  readonly finished = new Promise<void>((resolve) => (this.ended = resolve));

  constructor(opts: PipeOptions, first: { socket: Socket; head: Buffer }) {
    this.opts = opts;
    this.log = opts.logger.child({ component: 'serve' });
    this.attach(first.socket, first.head);
    this.phase = 'open';
    opts.input.on('data', this.onInput);
    opts.input.once('end', this.onInputEnd);
    opts.input.once('close', this.onInputEnd);
    opts.input.on('error', (err) => {
      this.log.debug({ err }, 'stdin failed');
      this.onInputEnd();
    });
    opts.output.on('error', (err) => {
      this.log.debug({ err }, 'stdout failed');
      this.onInputEnd();
    });
  }

  // ---- the client's side ----

  private readonly onInput = (chunk: Buffer | string): void => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let at = 0;
    while (at < buf.length) {
      const nl = buf.indexOf(0x0a, at);
      const end = nl === -1 ? buf.length : nl + 1;
      this.linePart(buf.subarray(at, end), nl !== -1);
      at = end;
    }
    // What this chunk sends the stream leaves in one write: most often the chunk itself, one request.
    const out = this.outgoing;
    const s = this.stream;
    if (out.length === 0 || !s) return;
    this.outgoing = [];
    const ok = s.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    if (!ok && !this.opts.input.isPaused()) {
      // The daemon reads slower than the client writes: stdin waits (it is read to its end all the same).
      this.opts.input.pause();
      const resume = () => {
        s.socket.off('drain', resume);
        s.socket.off('close', resume);
        this.opts.input.resume();
      };
      s.socket.on('drain', resume);
      s.socket.on('close', resume);
    }
  };

  /** Bytes for the open stream, sent once the chunk they came in has been read. */
  private send(bytes: Buffer): void {
    this.outgoing.push(bytes);
  }

  private linePart(part: Buffer, complete: boolean): void {
    const l = this.line;
    l.bytes += part.length;
    this.clientScanner.push(part);
    if (l.kept) {
      if (l.bytes <= KEEP_BYTES) l.parts.push(part);
      else {
        // Too long to keep: streamed to the open stream from here (a line over the daemon's limit is refused there).
        l.kept = false;
        const s = this.phase === 'open' ? this.stream : undefined;
        if (s) for (const p of l.parts) this.send(p);
        if (s) l.sentTo = s;
        l.parts = [];
      }
    }
    if (!l.kept && l.sentTo && l.sentTo === this.stream && !l.sentTo.closed) this.send(part);
    if (complete) this.lineEnded();
  }

  private lineEnded(): void {
    const l = this.line;
    const facts = this.lineFacts ?? { bytes: 0 };
    this.line = { parts: [], bytes: 0, kept: true };
    this.lineFacts = undefined;
    const text = l.kept ? (l.parts.length === 1 ? l.parts[0]! : Buffer.concat(l.parts)) : undefined;
    // The whole message is read only until the client's era is known, and for what the pipe keeps of it.
    const needed = this.era === undefined || facts.method === 'initialize' || facts.method === 'notifications/cancelled';
    const msg = text && needed ? parseObject(text) : undefined;
    const { id, method } = facts;
    let entry: Open | undefined;
    if (method !== undefined && typeof id !== 'object' && id !== undefined) {
      const params = msg?.['params'];
      entry = { id, method, ...(text ? { line: text } : {}) };
      this.open.set(keyOf(id), entry);
      if (this.era === undefined) {
        const envelope = envelopeOf(params);
        if (envelope) this.era = { meta: Object.fromEntries(Object.entries(envelope).filter(([k]) => k.startsWith('io.modelcontextprotocol/'))) };
        else if (method === 'initialize' && !this.initializing && isObject(params)) this.initializing = { key: keyOf(id), params };
      }
    } else if (method !== undefined) {
      if (method === 'notifications/initialized' && this.era && 'initialize' in this.era) this.era.initialized = true;
      if (method === 'notifications/cancelled') {
        const params = msg?.['params'];
        const rid = isObject(params) ? params['requestId'] : undefined;
        if (typeof rid === 'string' || typeof rid === 'number') this.open.delete(keyOf(rid));
      }
      if (this.phase === 'closed') return; // nothing to tell a daemon that is not there
    } else if (id !== undefined && id !== null) {
      // The client's answer to one of the daemon's questions: only the stream that asked it may have it.
      const asked = this.stream?.asked;
      if (!asked?.delete(keyOf(id))) {
        this.log.debug({ id }, 'dropped an answer to a question whose daemon stream closed');
        if (!l.sentTo) return;
      }
    }
    if (l.sentTo) {
      // Streamed as it came; cut off if its stream closed meanwhile (never sent whole anywhere).
      if (!entry) return;
      if (l.sentTo.closed || l.sentTo !== this.stream) this.answerGone(entry, GONE_MIDWAY);
      else entry.stream = l.sentTo;
      return;
    }
    if (!text) {
      if (entry) this.answerGone(entry, { code: 'MCPX_DAEMON_UNAVAILABLE', message: `${GONE}; the request was too long to hold while a daemon was reached` });
      return;
    }
    this.deliver(text, entry);
  }

  private deliver(line: Buffer, entry: Open | undefined): void {
    if (this.phase === 'open' && this.stream) {
      this.send(line);
      if (entry) entry.stream = this.stream;
      return;
    }
    if (this.phase === 'closed' && entry?.method === 'ping') {
      this.open.delete(keyOf(entry.id));
      this.write(Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: entry.id, result: {} })}\n`));
      return;
    }
    this.held.push({ line, ...(entry ? { entry } : {}) });
    if (this.phase === 'closed') this.reopen();
  }

  private readonly onInputEnd = (): void => {
    if (this.ending) return;
    this.ending = true;
    this.opts.input.off('data', this.onInput);
    const s = this.stream;
    if (!s || this.phase !== 'open') {
      this.stream = undefined;
      s?.socket.destroy();
      this.ended();
      return;
    }
    // The daemon aborts what is in flight and closes its side; a daemon that does not is not waited for long.
    // While answers still come (the client reads them slowly, or waits to: its stdout full), the wait goes on: they are its.
    s.socket.end();
    let read = s.socket.bytesRead;
    const giveUp = (): void => {
      if (s.closed) return;
      const progress = s.socket.bytesRead !== read;
      read = s.socket.bytesRead;
      if (progress || this.opts.output.writableNeedDrain || s.socket.isPaused()) setTimeout(giveUp, 2_000).unref();
      else {
        this.log.debug({ bytesRead: read }, 'the daemon did not close the stream after stdin ended; closing it');
        s.socket.destroy();
      }
    };
    setTimeout(giveUp, 2_000).unref();
  };

  // ---- the daemon's side ----

  private attach(socket: Socket, head: Buffer): Stream {
    const s: Stream = {
      socket,
      asked: new Map(),
      closed: false,
      scanner: new LineScanner((f, end) => this.daemonLine(s, f, end)),
    };
    this.stream = s;
    socket.on('data', (chunk: Buffer) => this.onDaemonData(s, chunk));
    socket.on('error', (err) => this.log.debug({ err }, 'the daemon stream failed'));
    socket.once('close', () => this.onStreamClosed(s));
    if (head.length > 0) this.onDaemonData(s, head);
    return s;
  }

  private onDaemonData(s: Stream, chunk: Buffer): void {
    if (s !== this.stream) return;
    if (this.swallow) {
      this.swallowing(s, chunk);
      return;
    }
    this.cut = -1;
    s.scanner.push(chunk);
    if (this.later) {
      this.later.push(chunk);
      return;
    }
    if (this.cut === -1 || this.cut >= chunk.length) {
      this.write(chunk);
      return;
    }
    // A message with a method (a progress notification, a question) leaves at once, and what came after it
    // in the same read a turn later, as the daemon wrote them: a client handles a notification only after
    // the answers read with it, and the SDK's client drops progress for a call it has seen answered.
    this.write(chunk.subarray(0, this.cut));
    this.later = [chunk.subarray(this.cut)];
    setImmediate(this.flushLater);
  }

  /** What was held behind a message with a method, written now. */
  private readonly flushLater = (): void => {
    const later = this.later;
    this.later = undefined;
    if (later) this.write(later.length === 1 ? later[0]! : Buffer.concat(later));
  };

  /** What a message from the daemon means here: an answer closes a request, a request is a question asked. */
  private daemonLine(s: Stream, f: LineFacts, end: number): void {
    if (f.method !== undefined && this.cut === -1) this.cut = end;
    if (f.id === undefined || f.id === null) return;
    if (f.method !== undefined) {
      s.asked.set(keyOf(f.id), f.id);
      return;
    }
    if (f.answer === undefined) return;
    const key = keyOf(f.id);
    const entry = this.open.get(key);
    if (entry?.stream === s) this.open.delete(key);
    if (this.initializing?.key === key) {
      if (f.answer === 'result') this.era = { initialize: this.initializing.params, initialized: false };
      this.initializing = undefined;
    }
  }

  /** Reads a reopened stream line by line until the handshake's answer, which the client must not see. */
  private swallowing(s: Stream, chunk: Buffer): void {
    const w = this.swallow!;
    w.buf = w.buf.length === 0 ? chunk : Buffer.concat([w.buf, chunk]);
    let at = 0;
    for (;;) {
      const nl = w.buf.indexOf(0x0a, at);
      if (nl === -1) break;
      const line = w.buf.subarray(at, nl + 1);
      at = nl + 1;
      let id: unknown;
      try {
        id = (JSON.parse(line.toString('utf8')) as { id?: unknown }).id;
      } catch {
        id = undefined;
      }
      if (id === w.id) {
        const rest = w.buf.subarray(at);
        this.swallow = undefined;
        w.settle();
        if (rest.length > 0) this.onDaemonData(s, rest);
        return;
      }
      this.write(line);
      s.scanner.push(line);
    }
    w.buf = w.buf.subarray(at);
    if (w.buf.length > KEEP_BYTES) w.settle(new Error('the daemon sent something else than the handshake answer'));
  }

  private write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.outputMidLine = chunk[chunk.length - 1] !== 0x0a;
    const s = this.stream;
    if (this.opts.output.write(chunk) || !s || s.socket.isPaused()) return;
    // The client reads slower than the daemon writes: the stream waits.
    s.socket.pause();
    this.opts.output.once('drain', () => s.socket.resume());
  }

  private onStreamClosed(s: Stream): void {
    s.closed = true;
    if (s !== this.stream) return;
    this.stream = undefined;
    this.swallow?.settle(new Error('the daemon closed the stream'));
    this.flushLater();
    if (this.ending) {
      this.log.debug({ bytesRead: s.socket.bytesRead, waiting: this.opts.output.writableLength }, 'the daemon closed the stream after stdin ended');
      this.ended();
      return;
    }
    // The client was not reading what the stream sent it: the daemon cuts such a stream off (daemon.maxUnreadBytes,
    // daemon.unreadTimeout), and what it answers now is what the client reads next.
    const unread = this.opts.output.writableNeedDrain;
    if (unread) this.log.warn({}, `the daemon closed the stream: ${CUT_OFF.message}`);
    else this.log.info({}, 'the daemon stream closed');
    // An answer cut off mid-line is ended, so what follows reads as lines (the cut one does not parse).
    if (this.outputMidLine) this.write(NEWLINE);
    for (const id of s.asked.values())
      this.write(Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: GONE } })}\n`));
    let again = false;
    for (const [key, entry] of this.open) {
      if (entry.stream !== s) continue;
      delete entry.stream;
      if (entry.method === 'subscriptions/listen') continue; // sent again with the next stream, whenever that is
      const repeatable = REPEATABLE.has(entry.method) && entry.line !== undefined;
      if (repeatable && !entry.resent && !unread) {
        entry.resent = true;
        again = true;
        continue;
      }
      this.open.delete(key);
      this.answerGone(
        entry,
        unread
          ? CUT_OFF
          : repeatable
            ? { code: 'MCPX_DAEMON_UNAVAILABLE', message: `${GONE} twice during this request (it was sent again once)` }
            : GONE_MIDWAY,
      );
    }
    if (this.phase === 'open') this.phase = 'closed';
    // A listing or a handshake in flight is waited for: a daemon now. Otherwise the next request brings one.
    if (again) this.reopen();
  }

  /** Finds (or starts) a daemon, opens a stream in the client's era, and sends what waited. */
  private reopen(): void {
    if (this.phase !== 'closed' || this.ending) return;
    this.phase = 'opening';
    void (async () => {
      let s: Stream | undefined;
      try {
        const { socket, head } = await this.opts.open();
        if (this.ending) {
          socket.destroy();
          return;
        }
        s = this.attach(socket, head);
        await this.replay(s);
      } catch (err) {
        if (s) {
          this.stream = undefined;
          s.socket.destroy();
        }
        this.phase = 'closed';
        const e = err as { code?: unknown; message?: unknown };
        const why = {
          code: typeof e.code === 'string' && e.code.startsWith('MCPX_') ? e.code : 'MCPX_DAEMON_UNAVAILABLE',
          message: typeof e.message === 'string' ? e.message : String(err),
        };
        this.log.warn({ err }, 'could not reach a daemon');
        this.failWaiting(why);
        return;
      }
      if (this.ending) {
        s.socket.end();
        return;
      }
      this.phase = 'open';
      this.log.info({}, 'a daemon stream is open again');
      s.socket.cork();
      // First what the last stream left unanswered (sent before what waited), then what waited.
      const waiting = new Set(this.held.map((h) => h.entry));
      for (const entry of this.open.values()) {
        if (entry.stream !== undefined || !entry.line || waiting.has(entry)) continue;
        s.socket.write(entry.line);
        entry.stream = s;
      }
      for (const h of this.held.splice(0)) {
        s.socket.write(h.line);
        if (h.entry) h.entry.stream = s;
      }
      s.socket.uncork();
    })();
  }

  /** The client's handshake on a new stream, its answer swallowed. */
  private async replay(s: Stream): Promise<void> {
    const era = this.era;
    if (era === undefined) return;
    const id = `mcpx-serve-replay-${++this.replays}`;
    const answered = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.swallow?.settle(new Error(`the daemon did not answer the handshake within ${REPLAY_MS / 1000} s`)), REPLAY_MS);
      this.swallow = {
        id,
        buf: Buffer.alloc(0),
        settle: (err) => {
          clearTimeout(timer);
          this.swallow = undefined;
          if (err) reject(err);
          else resolve();
        },
      };
    });
    const request =
      'initialize' in era
        ? { jsonrpc: '2.0', id, method: 'initialize', params: era.initialize }
        : { jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: era.meta } };
    s.socket.write(`${JSON.stringify(request)}\n`);
    await answered;
    if ('initialize' in era && era.initialized) s.socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    // The held initialized of the client itself would be a second one.
    this.held = this.held.filter((h) => !(h.entry === undefined && h.line.includes('"notifications/initialized"')));
  }

  /** No daemon: every request waiting for one is answered (a listen stream waits on), and what else waited is dropped. */
  private failWaiting(why: { code: string; message: string }): void {
    for (const [key, entry] of this.open) {
      if (entry.stream !== undefined || entry.method === 'subscriptions/listen') continue;
      this.open.delete(key);
      this.answerGone(entry, why);
    }
    this.held = this.held.filter((h) => h.entry?.method === 'subscriptions/listen');
  }

  /** Answers a request the daemon will not: a tool result the client shows, or a JSON-RPC error. */
  private answerGone(entry: Open, why: { code: string; message: string }): void {
    this.open.delete(keyOf(entry.id));
    // The server, as the front would name it: the one passed through, else the tool's or prompt's prefix.
    const params = entry.line && (entry.method === 'tools/call' || entry.method === 'prompts/get') ? parseObject(entry.line)?.['params'] : undefined;
    const name = isObject(params) && typeof params['name'] === 'string' ? params['name'] : undefined;
    const server = this.opts.passthrough ?? (name !== undefined && name.includes(SEPARATOR) ? name.slice(0, name.indexOf(SEPARATOR)) : undefined);
    const text = `mcpx: ${server === undefined ? '' : `${server}: `}${why.code}: ${why.message}`;
    const answer =
      entry.method === 'tools/call'
        ? { jsonrpc: '2.0', id: entry.id, result: { content: [{ type: 'text', text }], isError: true } }
        : { jsonrpc: '2.0', id: entry.id, error: { code: -32603, message: text, data: { code: why.code, ...(server === undefined ? {} : { server }) } } };
    if (this.outputMidLine) this.write(NEWLINE);
    this.write(Buffer.from(`${JSON.stringify(answer)}\n`));
  }
}

const GONE = 'the mcpx daemon went away';
const GONE_MIDWAY = {
  code: 'MCPX_DAEMON_UNAVAILABLE',
  message: `${GONE} during this request; it was not retried, since a tool may have side effects (the next request starts a new daemon)`,
};
/** The daemon closed the stream while its client left the answers unread. */
const CUT_OFF = {
  code: 'MCPX_TRANSPORT_CLOSED',
  message:
    'this client did not read its answers, so the mcpx daemon closed its stream (daemon.maxUnreadBytes, daemon.unreadTimeout); the request was not retried (the next request opens a new stream)',
};
