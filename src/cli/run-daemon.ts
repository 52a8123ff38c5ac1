/**
 * Runs the daemon in this process until it stops, then exits: `mcpx daemon` (./commands/daemon.ts), and
 * `mcpx daemon` with nothing after it, which ./main.ts runs without parsing a command line.
 */
import type { DaemonOptions } from '../daemon/daemon.js';
import { exitWhenWritten } from './exit.js';

export async function runDaemon(opts: Pick<DaemonOptions, 'configFlag' | 'flags' | 'inspect'>): Promise<never> {
  const { startDaemon } = await import('../daemon/daemon.js');
  const handle = await startDaemon({ ...opts, handleSignals: true });
  await handle.stopped;
  exitWhenWritten(0, 5_000);
  // Never settles: the process exits once its last log lines have left.
  return new Promise<never>(() => {});
}
