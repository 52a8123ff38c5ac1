/**
 * Incremental decoding of `text/event-stream` bodies: the response streams of Streamable HTTP and the
 * GET stream of the deprecated HTTP+SSE transport. Bounded: an event larger than the limit is reported
 * once and decoding stops.
 */
export interface SseEvent {
  /** The event type; "message" when the stream named none. */
  event: string;
  data: string;
  /** The last event id seen on the stream, if any. */
  id?: string;
}

export interface SseOverflow {
  limit: number;
  bytes: number;
}

export interface SseDecoderOptions {
  onEvent: (event: SseEvent) => void;
  /** Largest accepted event data, in bytes. Default: no limit. */
  maxEventBytes?: number;
  /** Called once when an event exceeds maxEventBytes; the decoder stops afterwards. */
  onOverflow?: (info: SseOverflow) => void;
}

const LF = 0x0a;
const CR = 0x0d;
/** Room for a field name in a line that is still being received ("data: " and then some). */
const LINE_SLACK = 64;

/**
 * Incremental text/event-stream decoder (WHATWG HTML §9.2.6): lines end in CRLF, LF or CR; `:` starts
 * a comment; `field: value` drops one leading space; `data` lines accumulate with "\n"; a blank line
 * dispatches. Works on bytes — CR/LF never occur inside a UTF-8 sequence — so a chunk may split a
 * character, and a 10 MB data line costs one copy. At end of input a pending event is still
 * dispatched (lenient: some servers omit the final blank line).
 */
export class SseDecoder {
  private readonly onEvent: (event: SseEvent) => void;
  private readonly onOverflow: ((info: SseOverflow) => void) | undefined;
  readonly maxEventBytes: number;
  private parts: Buffer[] = [];
  private partBytes = 0;
  private skipLF = false;
  private atStart = true;
  private data: string[] = [];
  private dataBytes = 0;
  private eventType = '';
  private lastId: string | undefined;
  private isStopped = false;
  private retryMs: number | undefined;

  constructor(options: SseDecoderOptions) {
    this.onEvent = options.onEvent;
    this.onOverflow = options.onOverflow;
    this.maxEventBytes = options.maxEventBytes ?? Number.POSITIVE_INFINITY;
  }

  get stopped(): boolean {
    return this.isStopped;
  }

  /** The last event id the stream set (resumption sends it as Last-Event-ID). */
  get lastEventId(): string | undefined {
    return this.lastId;
  }

  /** The reconnection time the stream's last valid `retry` field gave, in ms. */
  get retry(): number | undefined {
    return this.retryMs;
  }

  push(chunk: Uint8Array): void {
    if (this.isStopped || chunk.length === 0) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (buf[0] === LF) start = 1;
    }
    let nextLF = -2;
    let nextCR = -2;
    while (!this.isStopped && start < buf.length) {
      if (nextLF !== -1 && nextLF < start) nextLF = buf.indexOf(LF, start);
      if (nextCR !== -1 && nextCR < start) nextCR = buf.indexOf(CR, start);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (end === -1) {
        this.accumulate(buf.subarray(start));
        return;
      }
      this.finishLine(buf.subarray(start, end));
      if (buf[end] === CR) {
        if (end + 1 < buf.length) start = buf[end + 1] === LF ? end + 2 : end + 1;
        else {
          this.skipLF = true;
          start = end + 1;
        }
      } else {
        start = end + 1;
      }
    }
  }

  /** Input ended: a last unterminated line is processed and a pending event dispatched. */
  end(): void {
    if (this.isStopped) return;
    if (this.partBytes > 0) this.finishLine(Buffer.alloc(0));
    if (!this.isStopped) this.dispatch();
    this.isStopped = true;
  }

  private accumulate(piece: Buffer): void {
    this.parts.push(piece);
    this.partBytes += piece.length;
    if (this.partBytes > this.maxEventBytes + LINE_SLACK) this.overflow(this.partBytes);
  }

  private finishLine(tail: Buffer): void {
    let line: Buffer;
    if (this.parts.length === 0) line = tail;
    else {
      this.parts.push(tail);
      line = Buffer.concat(this.parts, this.partBytes + tail.length);
      this.parts = [];
      this.partBytes = 0;
    }
    if (this.atStart) {
      this.atStart = false;
      if (line.length >= 3 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3);
    }
    if (line.length === 0) {
      this.dispatch();
      return;
    }
    if (line[0] === 0x3a /* : */) return; // comment / keep-alive
    const colon = line.indexOf(0x3a);
    const field = (colon === -1 ? line : line.subarray(0, colon)).toString('utf8');
    let valueStart = colon === -1 ? line.length : colon + 1;
    if (colon !== -1 && line[valueStart] === 0x20) valueStart += 1;
    const valueBytes = line.length - valueStart;
    switch (field) {
      case 'data': {
        this.dataBytes += valueBytes + (this.data.length > 0 ? 1 : 0);
        if (this.dataBytes > this.maxEventBytes) {
          this.overflow(this.dataBytes);
          return;
        }
        this.data.push(line.toString('utf8', valueStart));
        break;
      }
      case 'event':
        this.eventType = line.toString('utf8', valueStart);
        break;
      case 'id': {
        const id = line.toString('utf8', valueStart);
        if (!id.includes('\0')) this.lastId = id;
        break;
      }
      case 'retry': {
        const value = line.toString('utf8', valueStart);
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      }
      default:
        break; // unknown fields
    }
  }

  private dispatch(): void {
    const hadData = this.data.length > 0;
    const data = this.data.length === 1 ? this.data[0]! : this.data.join('\n');
    const event = this.eventType === '' ? 'message' : this.eventType;
    this.data = [];
    this.dataBytes = 0;
    this.eventType = '';
    if (!hadData) return;
    this.onEvent(this.lastId === undefined ? { event, data } : { event, data, id: this.lastId });
  }

  private overflow(bytes: number): void {
    this.isStopped = true;
    this.parts = [];
    this.partBytes = 0;
    this.data = [];
    this.onOverflow?.({ limit: this.maxEventBytes, bytes });
  }
}
