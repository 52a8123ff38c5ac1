/**
 * Backpressure on one `mcpx serve` stream in the daemon (./socket-entry.ts): what a client sends becomes
 * work only as fast as it takes the answers. The daemon stops reading the stream (the socket paused: the
 * kernel's buffers fill, serve's writes wait, and so do its client's) while
 *
 * - the stream's output waits for its reader (the socket's buffer is past its high-water mark), until it
 *   drains; or
 * - `serve.maxInFlight` of its requests are in flight (answered, or cancelled by the client, frees one),
 *   unless the daemon waits for the client's answer to a question of its own: that answer must be read.
 *
 * The stdin gate stops at the line that reached a bound, and keeps the rest of what it read until then.
 * And it cuts the stream off (./unread-guard.ts) when what waits for its reader passes
 * `daemon.maxUnreadBytes`, or has waited `daemon.unreadTimeout` with nothing taken. Other streams are
 * not touched. The cost per message is a set entry for a request's id and a few property reads.
 */
import type { Socket } from 'node:net';
import { UnreadGuard, type UnreadLimits, type UnreadOverflow } from './unread-guard.js';

type Id = string | number;

export interface StreamFlowOptions {
  maxInFlight: number;
  /** Reads the stream on after a hold (the stdin gate's `release`: what it read meanwhile first). */
  release: () => void;
  unread: UnreadLimits;
  onOverflow: (o: UnreadOverflow) => void;
}

export class StreamFlow {
  /** The client's requests the SDK has and has not answered. */
  private readonly inFlight = new Set<Id>();
  /** The daemon's requests to the client (questions) not answered yet. */
  private questions = 0;
  private paused = false;
  private waitingForDrain = false;
  private readonly guard: UnreadGuard;
  private readonly max: number;
  private readonly release: () => void;

  constructor(
    private readonly socket: Socket,
    opts: StreamFlowOptions,
  ) {
    this.max = opts.maxInFlight;
    this.release = opts.release;
    this.guard = new UnreadGuard(socket, opts.unread, opts.onOverflow);
  }

  /** A message from the client, on its way to the SDK. */
  received(m: { id?: unknown; method?: unknown; params?: unknown }): void {
    const id = m.id;
    if (typeof m.method === 'string') {
      if (typeof id === 'string' || typeof id === 'number') {
        this.inFlight.add(id);
        if (this.inFlight.size >= this.max) this.update();
      } else if (m.method === 'notifications/cancelled') {
        // A cancelled request gets no answer from the SDK: it is no longer in flight.
        const rid = (m.params as { requestId?: unknown } | undefined)?.requestId;
        if ((typeof rid === 'string' || typeof rid === 'number') && this.inFlight.delete(rid)) this.update();
      }
    } else if (id !== undefined && id !== null && this.questions > 0) {
      this.questions--;
      this.update();
    }
  }

  /** A message to the client, just written (`ok`: whether the socket took it at once). */
  sent(m: object, ok: boolean): void {
    if ('method' in m) {
      if ('id' in m) this.questions++;
    } else if ('id' in m) {
      const id = (m as { id: unknown }).id;
      if ((typeof id === 'string' || typeof id === 'number') && this.inFlight.delete(id) && ok && this.paused) this.update();
    }
    if (!ok) this.wrote(false);
  }

  /** Any write to the client (an answer of the stdin gate's too). */
  wrote(ok: boolean): void {
    if (ok) return;
    this.guard.check();
    this.update();
  }

  /** The stream is closing: nothing more to hold or watch. */
  stop(): void {
    this.guard.stop();
    this.socket.off('drain', this.onDrain);
  }

  private update(): void {
    const full = this.socket.writableNeedDrain;
    const hold = full || (this.inFlight.size >= this.max && this.questions === 0);
    if (full && !this.waitingForDrain) {
      this.waitingForDrain = true;
      this.socket.once('drain', this.onDrain);
    }
    if (hold === this.paused) return;
    this.paused = hold;
    if (hold) this.socket.pause();
    else this.release();
  }

  /** Whether the stream is held: the stdin gate asks after each line. */
  get holding(): boolean {
    return this.paused;
  }

  private readonly onDrain = (): void => {
    this.waitingForDrain = false;
    this.update();
  };
}
