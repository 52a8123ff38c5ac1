/** The error codes that say no daemon answers on the socket: nothing there, refused, gone mid-request. */
const NOT_RUNNING = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** Whether `err` (or an error it was caused by) says no daemon answers on the socket. */
export function isNotRunning(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i += 1) {
    const code = (e as { code?: string }).code;
    if (code && NOT_RUNNING.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
