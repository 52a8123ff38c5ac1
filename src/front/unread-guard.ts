/**
 * A bound on what waits for a caller that does not read: an `mcpx serve` stream, a `/mcp` or `/v1`
 * answer, an event stream. A write that the caller's socket cannot take at once waits in the daemon's
 * memory; a caller that stops reading would have the daemon hold everything written to it since, and,
 * fed long enough (a client of `mcpx serve` that sends calls and never reads), run out of heap — every
 * other caller with it.
 *
 * The guard is told after a write that did not go through at once (`check`), and cuts the caller off
 * (`onOverflow`, once) when what waits for it passes `maxBytes` (`daemon.maxUnreadBytes`), or when it has
 * not caught up (no `drain`) for `timeoutMs` (`daemon.unreadTimeout`). A caller that reads, however
 * slowly, catches up whenever its writer waits for it. Its cost on the write path is a length read.
 */
import type { Settings } from '../config/settings.js';

/** The part of a Writable (a socket, an HTTP response) the guard watches. */
export interface Drainable {
  readonly writableLength: number;
  readonly writableNeedDrain: boolean;
  once(event: 'drain', listener: () => void): unknown;
  off(event: 'drain', listener: () => void): unknown;
}

export interface UnreadLimits {
  /** Bytes that may wait for the caller. */
  maxBytes: number;
  /** How long the caller may leave them unread (no drain). */
  timeoutMs: number;
}

export const DEFAULT_UNREAD_LIMITS: UnreadLimits = { maxBytes: 64 * 1024 * 1024, timeoutMs: 60_000 };

/** The limits as the settings say now: read for each new stream or answer. */
export function unreadLimits(settings: Settings): UnreadLimits {
  return { maxBytes: settings.get('daemon.maxUnreadBytes'), timeoutMs: settings.get('daemon.unreadTimeout') };
}

export interface UnreadOverflow {
  /** `bytes`: past maxBytes; `timeout`: not caught up for timeoutMs. */
  reason: 'bytes' | 'timeout';
  /** Bytes waiting when it was cut off. */
  queued: number;
  /** One sentence, for the daemon's log and the caller's error. */
  message: string;
}

const MIB = 1024 * 1024;
const mib = (n: number): string => `${Math.round((n / MIB) * 10) / 10} MiB`;

export class UnreadGuard {
  private timer: NodeJS.Timeout | undefined;
  private tripped = false;

  constructor(
    private readonly out: Drainable,
    private readonly limits: UnreadLimits,
    private readonly onOverflow: (o: UnreadOverflow) => void,
  ) {}

  /** After a write the caller's socket did not take at once. */
  check(): void {
    if (this.tripped) return;
    const queued = this.out.writableLength;
    if (queued > this.limits.maxBytes) {
      this.trip('bytes', queued, `${mib(queued)} of answers wait unread, over the bound of ${mib(this.limits.maxBytes)} (daemon.maxUnreadBytes)`);
      return;
    }
    if (this.timer === undefined && this.out.writableNeedDrain) {
      this.timer = setTimeout(this.onTimeout, this.limits.timeoutMs);
      this.timer.unref();
      this.out.once('drain', this.onDrain);
    }
  }

  /** The caller is gone (or done): nothing more to watch. */
  stop(): void {
    this.tripped = true;
    this.clear();
  }

  private clear(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.out.off('drain', this.onDrain);
  }

  private readonly onDrain = (): void => {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  };

  private readonly onTimeout = (): void => {
    this.timer = undefined;
    this.out.off('drain', this.onDrain);
    if (this.tripped || !this.out.writableNeedDrain) return;
    const queued = this.out.writableLength;
    this.trip('timeout', queued, `${mib(queued)} of answers waited unread for ${Math.round(this.limits.timeoutMs / 1000)} s (daemon.unreadTimeout)`);
  };

  private trip(reason: UnreadOverflow['reason'], queued: number, what: string): void {
    this.tripped = true;
    this.clear();
    this.onOverflow({ reason, queued, message: `the caller does not read its answers: ${what}; closed` });
  }
}
