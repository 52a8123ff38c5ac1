/**
 * What an `mcpx serve` client sends, before the SDK reads it (in the daemon, on each serve stream:
 * ./socket-entry.ts; serve itself only copies the client's stdin there): every client line is parsed
 * once here, what the SDK would take badly is answered here instead, and the rest is handed on parsed
 * (./stream-transport.ts), a message at a time.
 *
 * - A line over the limit (10 MiB, the SDK's own buffer bound) is dropped as it arrives, never buffered
 *   whole, and answered with -32600 (with its `id`, read as the line passes: ../transports/line-scanner.ts). The SDK's read
 *   buffer would otherwise overflow and close the transport: serve would never read again, answer
 *   nothing, and — stdin paused — not see stdin end either.
 * - A line that is not JSON gets the JSON-RPC parse error (-32700); the SDK skips it without a word.
 * - A batch (an array) gets -32600: MCP has had no JSON-RPC batches since 2025-06-18, and the SDK's
 *   stdio transport drops one silently.
 * - Legacy lifecycle (2025-11-25 "Lifecycle"): before `initialize` only pings are served, any other
 *   request gets the SDK's own HTTP answer for it, -32000 "Bad Request: Server not initialized"; a
 *   second `initialize` gets -32600 "Invalid Request: Server already initialized". A message carrying
 *   the 2026-07-28 envelope (`_meta` protocolVersion) needs no handshake and passes untouched, as does
 *   everything once the connection's era is settled.
 *
 * The input is always read to its end (a hold only defers it), so the end of the client's stdin is always seen.
 */
import type { Readable } from 'node:stream';
import type { Logger } from '../log.js';
import { LineScanner, type LineFacts } from '../transports/line-scanner.js';

export const MAX_LINE_BYTES = 10 * 1024 * 1024;
const NEWLINE = Buffer.from('\n');
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

export interface StdinGateOptions {
  /** Writes one JSON-RPC message line to the client (stdout). */
  write: (line: string) => void;
  /** Hands on one message the gate let through (a JSON object, parsed). */
  deliver: (message: object) => void;
  maxLineBytes?: number;
  logger?: Logger;
  /** Checked after each line: while true the gate reads no further, and what it has read waits for `release` (flow control). */
  holding?: () => boolean;
}

type Phase = 'fresh' | 'legacy' | 'settled';

function claimsEnvelope(params: unknown): boolean {
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  return typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META in meta;
}

export class StdinGate {
  private readonly max: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** While an oversized line is being dropped: its top level read as it passes (for its id), and how long it is so far. */
  private dropping: { scanner: LineScanner; facts: LineFacts | undefined; bytes: number } | undefined;
  private phase: Phase = 'fresh';
  private ended = false;
  /** What was read but waits while the gate holds (undefined: not holding). */
  private rest: Buffer | undefined;
  private releasing = false;
  private resolveFinished!: () => void;
  /** Resolves when stdin has ended (or closed, or failed). */
  readonly finished: Promise<void> = new Promise((resolve) => (this.resolveFinished = resolve));

  constructor(
    private readonly input: Readable,
    private readonly opts: StdinGateOptions,
  ) {
    this.max = opts.maxLineBytes ?? MAX_LINE_BYTES;
    input.on('data', this.onData);
    input.once('end', this.end);
    input.once('close', this.end);
    input.on('error', (err) => {
      opts.logger?.debug({ err }, 'stdin failed');
      this.end();
    });
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.consume(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  };

  /** Reads on after a hold: what waited first, then the input again (unless the gate holds again). */
  release(): void {
    if (this.releasing) return;
    const rest = this.rest;
    if (rest !== undefined) {
      this.releasing = true;
      this.rest = undefined;
      this.consume(rest);
      this.releasing = false;
      if (this.rest !== undefined) return; // held again
    }
    if (!this.ended) this.input.resume();
  }

  private consume(chunk: Buffer): void {
    let buf = chunk;
    while (buf.length > 0) {
      const nl = buf.indexOf(0x0a);
      const part = nl === -1 ? buf : buf.subarray(0, nl);
      if (this.dropping) {
        this.dropping.scanner.push(part);
        this.dropping.bytes += part.length;
      } else if (this.pendingBytes + part.length > this.max) {
        const dropping: NonNullable<StdinGate['dropping']> = {
          scanner: new LineScanner((facts) => (dropping.facts = facts)),
          facts: undefined,
          bytes: this.pendingBytes + part.length,
        };
        for (const p of [...this.pending, part]) dropping.scanner.push(p);
        this.dropping = dropping;
        this.pending = [];
        this.pendingBytes = 0;
      } else {
        this.pending.push(part);
        this.pendingBytes += part.length;
      }
      if (nl === -1) return;
      buf = buf.subarray(nl + 1);
      this.lineEnded();
      if (this.opts.holding?.()) {
        // The rest of this chunk waits too: a chunk can hold hundreds of short requests.
        this.rest = buf;
        this.input.pause();
        return;
      }
    }
  }

  private lineEnded(): void {
    if (this.dropping) {
      const { scanner, bytes } = this.dropping;
      scanner.push(NEWLINE);
      const id = this.dropping.facts?.id ?? null;
      this.dropping = undefined;
      this.opts.logger?.warn({ bytes, max: this.max, id }, 'refused a message over the size limit');
      this.error(id, -32600, `Invalid Request: the message is ${bytes} bytes, over mcpx serve's limit of ${this.max} bytes per message`);
      return;
    }
    const line = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    this.handle(line);
  }

  private handle(line: Buffer): void {
    const text = line.toString('utf8').replace(/\r$/, '');
    if (text.trim() === '') return;
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.error(null, -32700, 'Parse error: the line is not JSON');
      return;
    }
    if (Array.isArray(msg)) {
      this.error(null, -32600, 'Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each message on its own line');
      return;
    }
    if (typeof msg !== 'object' || msg === null) {
      this.error(null, -32600, 'Invalid Request: a JSON-RPC message is an object');
      return;
    }
    const m = msg as { id?: unknown; method?: unknown; params?: unknown };
    const isRequest = typeof m.method === 'string' && m.id !== undefined;
    if (typeof m.method === 'string' && this.phase !== 'settled') {
      if (this.phase === 'fresh') {
        if (claimsEnvelope(m.params))
          this.phase = 'settled'; // 2026-07-28: no handshake; the SDK checks the rest
        else if (m.method === 'initialize' && isRequest) this.phase = 'legacy';
        else if (!isRequest) {
          // A legacy notification before initialize has nothing to act on, and would pin the SDK's era.
          this.opts.logger?.debug({ method: m.method }, 'dropped a notification sent before initialize');
          return;
        } else if (m.method !== 'ping') {
          this.error(
            m.id,
            -32000,
            'Bad Request: Server not initialized (a 2025-era caller sends initialize first; a 2026-07-28 caller sends _meta with the protocol version)',
          );
          return;
        }
      } else if (m.method === 'initialize' && isRequest && !claimsEnvelope(m.params)) {
        this.error(m.id, -32600, 'Invalid Request: Server already initialized');
        return;
      }
    }
    if (!this.ended) this.opts.deliver(m);
  }

  private error(id: unknown, code: number, message: string): void {
    this.opts.write(`${JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } })}\n`);
  }

  private readonly end = (): void => {
    if (this.ended) return;
    this.ended = true;
    this.input.off('data', this.onData);
    this.resolveFinished();
  };
}
