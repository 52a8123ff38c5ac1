/**
 * How every `mcpx` command ends: with its exit code, once what it wrote to stdout and stderr has left.
 * Into a pipe Node writes asynchronously (what the pipe cannot take at once waits in the stream), and
 * `process.exit` drops what still waits: `mcpx tools --json | jq` would read a cut JSON past 64 KiB.
 * Into a file or a terminal the writes are synchronous and nothing waits. A reader that went away
 * (EPIPE) ends the wait; a reader that stops reading holds the command, as it would hold `cat`.
 */
export function exitWhenWritten(code: number, maxWaitMs?: number): void {
  // A process that must end (the daemon, once stopped) waits for its readers only so long.
  if (maxWaitMs !== undefined) setTimeout(() => process.exit(code), maxWaitMs).unref();
  let waiting = 1;
  const done = (): void => {
    if (--waiting === 0) process.exit(code);
  };
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength === 0 || stream.destroyed) continue;
    waiting++;
    let once = false;
    const settle = (): void => {
      if (once) return;
      once = true;
      done();
    };
    // The reader went away: what waits can never be written (an unhandled 'error' would throw instead).
    stream.once('error', settle);
    // Callbacks run in write order: this one once everything written before it has left.
    stream.write('', settle);
  }
  done();
}
