/**
 * Newline-delimited JSON framing for stdio upstreams.
 *
 * The decoder works on Buffers, not strings: a chunk boundary may fall inside a multi-byte UTF-8
 * character, so bytes are collected per line and decoded only once the whole line is present.
 * A long line is kept as a list of chunk Buffers and concatenated once when its newline arrives,
 * so a 10 MB message costs one copy, not a quadratic series of string concatenations.
 */

const LF = 0x0a;
const CR = 0x0d;

export interface NdjsonOverflow {
  /** The configured limit, in bytes of line content (the `\n`, and a `\r` before it, do not count). */
  limit: number;
  /** How many bytes of the offending line had been seen when the limit was crossed. */
  bytes: number;
}

export interface NdjsonDecoderOptions {
  /** Called once per complete, non-blank line, in order, without its line ending. */
  onLine: (line: string) => void;
  /** Largest accepted line, in bytes. Default: no limit. */
  maxLineBytes?: number;
  /** Called at most once, when a line exceeds maxLineBytes. The decoder stops decoding afterwards. */
  onOverflow?: (info: NdjsonOverflow) => void;
}

export class NdjsonDecoder {
  readonly maxLineBytes: number;
  private readonly onLine: (line: string) => void;
  private readonly onOverflow: ((info: NdjsonOverflow) => void) | undefined;
  /** Pieces of the current, not yet terminated line. */
  private parts: Buffer[] = [];
  private partBytes = 0;
  private isStopped = false;

  constructor(options: NdjsonDecoderOptions) {
    const max = options.maxLineBytes ?? Number.POSITIVE_INFINITY;
    if (!(max > 0)) throw new RangeError(`maxLineBytes must be positive, got ${String(options.maxLineBytes)}`);
    this.maxLineBytes = max;
    this.onLine = options.onLine;
    this.onOverflow = options.onOverflow;
  }

  /** True once the decoder overflowed or end() was called; further input is ignored. */
  get stopped(): boolean {
    return this.isStopped;
  }

  /** Bytes of the current incomplete line held in memory. */
  get bufferedBytes(): number {
    return this.partBytes;
  }

  /**
   * Feed one chunk. Complete lines are handed to onLine synchronously, before push returns.
   * If onLine throws, the exception propagates and the rest of the chunk is dropped; callers that
   * must not lose lines should catch inside onLine.
   */
  push(chunk: Uint8Array): void {
    if (this.isStopped || chunk.length === 0) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    while (!this.isStopped) {
      const nl = buf.indexOf(LF, start);
      if (nl === -1) {
        if (start < buf.length) this.accumulate(buf.subarray(start));
        return;
      }
      this.finishLine(buf.subarray(start, nl));
      start = nl + 1;
    }
  }

  /** The input ended: a final line without a trailing newline is still delivered. */
  end(): void {
    if (this.isStopped) return;
    if (this.partBytes > 0) this.finishLine(Buffer.alloc(0));
    this.isStopped = true;
    this.parts = [];
    this.partBytes = 0;
  }

  private accumulate(piece: Buffer): void {
    this.parts.push(piece);
    this.partBytes += piece.length;
    // One extra byte of slack: the line may yet turn out to end in "\r\n", and "\r" does not count.
    if (this.partBytes > this.maxLineBytes + 1) this.overflow(this.partBytes);
  }

  private finishLine(tail: Buffer): void {
    let line: Buffer;
    if (this.parts.length === 0) {
      line = tail;
    } else {
      this.parts.push(tail);
      line = Buffer.concat(this.parts, this.partBytes + tail.length);
      this.parts = [];
      this.partBytes = 0;
    }
    let length = line.length;
    if (length > 0 && line[length - 1] === CR) length -= 1;
    if (length > this.maxLineBytes) {
      this.overflow(length);
      return;
    }
    if (length === 0) return;
    let text = line.toString('utf8', 0, length);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a byte-order mark some Windows tools emit
    if (!/\S/.test(text)) return; // blank (or whitespace-only) lines are ignored
    this.onLine(text);
  }

  private overflow(bytes: number): void {
    this.isStopped = true;
    this.parts = [];
    this.partBytes = 0;
    this.onOverflow?.({ limit: this.maxLineBytes, bytes });
  }
}

const LINE_SEPARATORS = /[\u2028\u2029]/;
const LINE_SEPARATORS_ALL = /[\u2028\u2029]/g;

/**
 * One message as an NDJSON line. JSON.stringify never emits a raw newline; U+2028 and U+2029
 * (legal inside JSON strings, but treated as line breaks by some line readers, e.g. Python's
 * str.splitlines) are escaped as well, which keeps the output valid JSON.
 */
export function encode(message: unknown): string {
  const json = JSON.stringify(message);
  if (json === undefined) throw new TypeError('cannot encode a value JSON.stringify ignores (undefined, a function or a symbol)');
  // Rare: one scan finds none, and only then is the string rewritten.
  return (LINE_SEPARATORS.test(json) ? json.replace(LINE_SEPARATORS_ALL, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029')) : json) + '\n';
}
