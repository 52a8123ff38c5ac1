/**
 * How long the daemon has run, from a monotonic clock. `startedAt` is a wall-clock time (shown as such);
 * the wall clock may be set back (or forward) while the daemon runs, and `Date.now() - startedAt` then
 * went negative in `/v1/status`. The start is anchored to the monotonic clock once, when this is called.
 */
export interface UptimeClocks {
  /** The wall clock (ms since the epoch). */
  wall: () => number;
  /** A monotonic clock (ms from any origin). */
  monotonic: () => number;
}

const SYSTEM: UptimeClocks = { wall: () => Date.now(), monotonic: () => performance.now() };

/** A function giving the ms since `startedAt` (wall), measured on the monotonic clock from now on; never negative. */
export function uptimeSince(startedAt: number, clocks: UptimeClocks = SYSTEM): () => number {
  const origin = clocks.monotonic() - Math.max(0, clocks.wall() - startedAt);
  return () => Math.max(0, Math.round(clocks.monotonic() - origin));
}
