/**
 * The progress line of `mcpx call` and `mcpx tools` while a server is slow to start (an npx download,
 * a slow probe): on a TTY, a spinner on stderr naming the server and its probe state, fed by the
 * daemon's `session.state` events. Nothing at all when stdout or stderr is not a TTY (MCPX_PROGRESS=1
 * forces it on, MCPX_PROGRESS=0 off). It appears only after a short delay, so fast calls stay quiet.
 */
import type { DaemonClient } from './client.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function progressEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const forced = env['MCPX_PROGRESS'];
  if (forced === '1' || forced === 'true') return true;
  if (forced === '0' || forced === 'false') return false;
  return process.stdout.isTTY === true && process.stderr.isTTY === true;
}

export interface Progress {
  /** Settles once the event stream is open (bounded), so the request that follows cannot outrun it. */
  ready: Promise<void>;
  stop(): void;
}

/** Follows the start of `server` (all servers when undefined) while a request is pending. */
export function startProgress(client: DaemonClient, server: string | undefined, opts: { delayMs?: number; out?: NodeJS.WritableStream } = {}): Progress {
  const out = opts.out ?? process.stderr;
  const started = Date.now();
  const states = new Map<string, string>();
  let frame = 0;
  let shown = false;
  let stopped = false;
  const query = `?type=session.state,server.start,server.stop${server === undefined ? '' : `&server=${encodeURIComponent(server)}`}`;
  const follow = client.follow(query, (type, data) => {
    const e = data as { server?: string; state?: string; era?: string | null };
    if (!e.server) return;
    if (type === 'session.state' && e.state) states.set(e.server, e.state);
    else if (type === 'server.start') states.set(e.server, `ready (${e.era ?? 'unknown era'})`);
  });
  // What is starting already (another caller may have started it): seed from /v1/status.
  const seeded = follow.ready.then(async () => {
    try {
      const { body } = await client.request<{ servers?: Array<{ server: string; instances: Array<{ sessionState: string | null; state: string }> }> }>(
        'GET',
        '/v1/status',
      );
      for (const s of body.servers ?? []) {
        if (server !== undefined && s.server !== server) continue;
        const i = s.instances.find((x) => x.state === 'starting') ?? s.instances[0];
        if (i && !states.has(s.server)) states.set(s.server, i.sessionState ?? i.state);
      }
    } catch {
      // best effort
    }
  });
  const render = () => {
    if (stopped) return;
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const names = server !== undefined ? [server] : [...states.keys()];
    const what = names.length === 0 ? 'starting servers' : names.map((n) => `${n}: ${states.get(n) ?? 'waiting'}`).join(', ');
    out.write(`\r${FRAMES[frame++ % FRAMES.length]} starting ${server !== undefined ? '' : 'servers — '}${what} (${secs}s)\x1b[K`);
    shown = true;
  };
  let timer: NodeJS.Timeout | undefined;
  const delay = setTimeout(() => {
    render();
    timer = setInterval(render, 100);
  }, opts.delayMs ?? 300);
  const bound = new Promise<void>((r) => setTimeout(r, 500).unref());
  return {
    ready: Promise.race([follow.ready, bound]),
    stop() {
      stopped = true;
      clearTimeout(delay);
      if (timer) clearInterval(timer);
      follow.stop();
      void seeded;
      if (shown) out.write('\r\x1b[K');
    },
  };
}
