/**
 * The one clamp between a duration and `setTimeout`, which fires at once (with a warning) for a delay past
 * 2^31 − 1 ms (about 24.8 days) and treats a negative one as 0. Durations a user may write are capped at
 * MAX_TIMER_MS where they are read (src/config/duration.ts); delays computed from deadlines pass through here.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** `ms` as setTimeout honours it: within 0 … MAX_TIMER_MS. */
export const timerDelay = (ms: number): number => Math.min(MAX_TIMER_MS, Math.max(0, ms));
