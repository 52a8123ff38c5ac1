/**
 * The front for `mcpx serve`, in the daemon: each `mcpx serve` opens one stream on the daemon's Unix
 * socket (`GET /v1/mcp-stream`, upgraded: src/api/serve-upgrade.ts) and copies its client's stdio
 * over it, so each stream here is one MCP client speaking newline-delimited JSON-RPC, as on stdio.
 *
 * Per stream, what a stdio MCP server does: the stdin gate (./stdin-gate.ts) reads it and hands each
 * message to the SDK (./stream-transport.ts), the SDK's `serveStdio` pins the caller's era (`initialize`: legacy; `server/discover` or a `_meta`-carrying
 * request: 2026-07-28), one front (./front.ts) over the controller answers, and the answers of one turn
 * leave in one write (./turn-batched-output.ts). When serve ends its side (its client closed stdin),
 * requests in flight are aborted, as on stdio, and the stream is closed. A stream is read only as fast as
 * its client takes the answers, and one whose client stops reading is cut off alone (./stream-flow.ts).
 */
import type { Socket } from 'node:net';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { silentLogger, type Logger } from '../log.js';
import { deepParamsRefusal } from './json-depth.js';
import type { Controller } from '../core/controller.js';
import { frontFactory } from './front.js';
import { modeConfig, type EntryMode } from './entry-mode.js';
import { MAX_LINE_BYTES, StdinGate } from './stdin-gate.js';
import { DEFAULT_UNREAD_LIMITS, type UnreadLimits } from './unread-guard.js';
import { StreamFlow } from './stream-flow.js';
import { StreamTransport } from './stream-transport.js';
import { TurnBatchedOutput } from './turn-batched-output.js';

export interface SocketEntryOptions {
  /** The daemon's core, which the front serves from. */
  controller: Controller;
  version: string;
  logger?: Logger;
  /** How long a 2026-07-28 caller has to answer a question round (`serve.questionTtl`), read for each new stream. */
  questionTtlSeconds?: () => number;
  /** Requests one stream may have in flight (`serve.maxInFlight`), read for each new stream. Default 64. */
  maxInFlight?: () => number;
  /** What may wait for a stream's reader (`daemon.maxUnreadBytes`, `daemon.unreadTimeout`), read for each new stream. */
  unreadLimits?: () => UnreadLimits;
}

interface Stream {
  socket: Socket;
  close(): Promise<void>;
}

export class SocketEntry {
  private readonly log: Logger;
  private readonly streams = new Set<Stream>();
  private closed = false;

  constructor(private readonly opts: SocketEntryOptions) {
    this.log = (opts.logger ?? silentLogger).child({ component: 'serve' });
  }

  /** Serves one `mcpx serve` stream; `head` is what arrived after the upgrade request. */
  accept(socket: Socket, head: Buffer, mode: EntryMode, session: string): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    const log = this.log.child({ session });
    socket.setNoDelay(true);
    socket.on('error', (err) => log.debug({ err }, 'serve stream failed'));
    if (head.length > 0) socket.unshift(head);
    const ttl = this.opts.questionTtlSeconds?.();
    const factory = frontFactory({
      controller: this.opts.controller,
      version: this.opts.version,
      logger: log,
      session,
      ...(ttl === undefined ? {} : { questionTtlSeconds: ttl }),
      ...modeConfig(mode),
    });
    // The stream keeps its config loaded while it lasts.
    const detach = this.opts.controller.attachCaller(mode.config, { id: session, kind: 'serve' });
    // The gate reads the stream: lines past the size limit, batches, non-JSON and legacy lifecycle breaches
    // are answered there; the rest reaches the SDK a message at a time, parsed once. Answers of one turn
    // leave together.
    const output = new TurnBatchedOutput(socket);
    // The stream is read as fast as its client takes the answers; one that stops reading is cut off, alone.
    const flow: StreamFlow = new StreamFlow(socket, {
      maxInFlight: this.opts.maxInFlight?.() ?? 64,
      release: () => gate.release(),
      unread: this.opts.unreadLimits?.() ?? DEFAULT_UNREAD_LIMITS,
      onOverflow: (o) => {
        log.warn({ reason: o.reason, queuedBytes: o.queued }, `closed a serve stream: ${o.message}`);
        socket.destroy();
      },
    });
    const transport = new StreamTransport(output, (message, ok) => flow.sent(message, ok));
    const gate = new StdinGate(socket, {
      write: (line) => flow.wrote(output.write(line)),
      deliver: (message) => {
        flow.received(message);
        transport.receive(message);
      },
      maxLineBytes: MAX_LINE_BYTES,
      logger: log,
      holding: () => flow.holding,
    });
    const handle = serveStdio(factory, { legacy: 'serve', transport, onerror: (err) => log.debug({ err }, 'serve stream') });
    // Deeper than what mcpx relays: answered here, before the SDK and the relay recurse through it (the /v1 rule).
    const deliver = transport.onmessage;
    transport.onmessage = (message) => {
      const deep = deepParamsRefusal(message);
      if (!deep) return deliver?.(message);
      if (!deep.answer) return undefined; // a notification: nothing to answer
      void transport
        // A null id (one mcpx could not read) is JSON-RPC's answer to an invalid request.
        .send({ jsonrpc: '2.0', id: deep.id as string | number, error: { code: deep.code, message: deep.message } })
        .catch((err: unknown) => log.debug({ err }, 'serve stream'));
      return undefined;
    };
    let closing: Promise<void> | undefined;
    const stream: Stream = {
      socket,
      close: () =>
        (closing ??= (async () => {
          this.streams.delete(stream);
          detach();
          flow.stop();
          output.flush();
          factory.close();
          await transport.close();
          await handle.close().catch(() => undefined);
          socket.end();
          socket.destroySoon();
        })()),
    };
    this.streams.add(stream);
    log.debug({ mode }, 'serve stream opened');
    // The gate reads the stream to its end whatever the SDK does, so this always comes.
    void gate.finished.then(() => stream.close());
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** Closes every stream (the daemon stops): each serve answers its client's requests in flight itself. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.streams].map(async (s) => {
        await s.close();
        s.socket.destroy();
      }),
    );
  }
}
