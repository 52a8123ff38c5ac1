/**
 * What the daemon's process ledger (src/daemon/orphans.ts) shares with the stdio transport, apart from it:
 * the ledger loads before the daemon listens, the transport (and what it loads) on first use.
 */
import { randomBytes } from 'node:crypto';

/**
 * Set in every child's environment (its descendants inherit it): names the mcpx process that started
 * it. A sweep after a crash checks it before signalling a process it did not start itself (a child of
 * an upstream whose leader is gone).
 */
export const SPAWN_TAG_VAR = 'MCPX_SPAWN_TAG';
export const SPAWN_TAG = randomBytes(16).toString('hex');

/** What the `mcpx:upstream-process` diagnostics channel carries. */
export type UpstreamProcessEvent =
  { type: 'spawn'; pid: number; pgid: number; start: number | null; tag: string; command: string } | { type: 'gone'; pid: number };
export const UPSTREAM_PROCESS_CHANNEL = 'mcpx:upstream-process';
