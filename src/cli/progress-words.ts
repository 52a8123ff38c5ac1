/**
 * What the progress line says, in words a person reads: the session chart's states (src/machines) are
 * the daemon's vocabulary, never shown as they are. A server run by a package runner (npx, uvx…) may be
 * downloading while mcpx waits for its first answer, so it is said to be "downloading or starting".
 */

/** What a server is (from GET /v1/servers), as far as the words need it. */
export interface ServerKind {
  transport: 'stdio' | 'http';
  /** The command's base name (stdio). */
  command?: string;
}

const PACKAGE_RUNNERS = new Set(['npx', 'uvx', 'bunx', 'pnpx', 'pipx', 'dlx']);

function runner(kind: ServerKind | undefined): string | undefined {
  const base = kind?.command
    ?.split(/[\\/]/)
    .pop()
    ?.replace(/\.(?:cmd|exe)$/i, '');
  return base !== undefined && PACKAGE_RUNNERS.has(base) ? base : undefined;
}

/**
 * A session state (`connecting.discovering`, `ready`, …) in words. `doing` is what the command waits for
 * once the server is ready ("calling sleep", "listing tools").
 */
export function stateWords(state: string | undefined, kind: ServerKind | undefined, doing: string): string {
  const top = (state ?? 'idle').split(/[.,]/)[0];
  const sub = state?.split('.')[1];
  const pkg = runner(kind);
  switch (top) {
    case 'idle':
    case 'connecting':
      if (kind?.transport === 'http') return 'connecting to the server';
      if (pkg) return `downloading or starting the server (${pkg}), waiting for its first answer`;
      return sub === undefined || sub === 'spawning' || sub === 'respawning' ? 'starting the server' : 'waiting for its first answer';
    case 'ready':
      return doing;
    case 'renewing':
      return 'reconnecting to the server';
    case 'failed':
      return 'could not start the server';
    case 'closed':
    case 'stopped':
      return 'the server stopped';
    default:
      return 'starting the server';
  }
}

/** A server's own progress notification: its message and ratio, e.g. "fetching page 2 (2/4)". */
export function progressWords(p: { progress: number; total?: number; message?: string }): string {
  const ratio = p.total !== undefined && p.total > 0 ? `${p.progress}/${p.total}` : `${p.progress}`;
  return p.message ? `${p.message} (${ratio})` : `progress ${ratio}`;
}
