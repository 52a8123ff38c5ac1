/**
 * What the daemon writes to an `mcpx serve` stream (./stream-transport.ts, ./socket-entry.ts): the
 * answers written in one turn of the event loop leave in one write. The answers of calls that finish together (their daemon answers read in
 * the same turn) would otherwise cost a system call each, about a sixth of serve's CPU per call at 16 in
 * flight. The first answer of a turn corks the stream and the turn's end (setImmediate, right after the
 * I/O that produced the answers) uncorks it; order, backpressure (`write` returns false past the stream's
 * high-water mark, then `drain`) and errors stay the stream's own.
 *
 * A request or notification to the caller (a message with a `method`) goes out at once, with whatever
 * waits before it: a client may handle a notification only after the responses read in the same chunk,
 * and the SDK's client then drops a progress notification whose call it has already seen answered.
 */
import type { Writable } from 'node:stream';

type Listener = (...args: unknown[]) => void;

/** The part of a Writable that a transport uses (the SDK's StdioServerTransport too), over `out`. */
export class TurnBatchedOutput {
  private held = false;

  constructor(private readonly out: Writable) {}

  /** Writes what waits now (the turn's end, a message to the caller, the process's exit). */
  readonly flush = (): void => {
    if (!this.held) return;
    this.held = false;
    this.out.uncork();
  };

  write(chunk: string): boolean {
    // A message with a method is a request or a notification (a response has none at its top level; a
    // result that mentions one only costs its batching).
    if (chunk.includes('"method":')) {
      const ok = this.out.write(chunk);
      this.flush();
      return ok;
    }
    if (!this.held) {
      this.held = true;
      this.out.cork();
      setImmediate(this.flush);
    }
    return this.out.write(chunk);
  }

  on(event: string, listener: Listener): this {
    this.out.on(event, listener);
    return this;
  }

  once(event: string, listener: Listener): this {
    this.out.once(event, listener);
    return this;
  }

  off(event: string, listener: Listener): this {
    this.out.off(event, listener);
    return this;
  }

  listeners(event: string): ((...args: unknown[]) => unknown)[] {
    return this.out.listeners(event) as ((...args: unknown[]) => unknown)[];
  }

  /** For the transport's constructor, which names a Writable. */
  asWritable(): Writable {
    return this as unknown as Writable;
  }
}
