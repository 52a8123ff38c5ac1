/**
 * The progress line of `mcpx call` and `mcpx tools` while they wait: on a TTY, a spinner on stderr saying
 * in words what is happening — starting (or downloading) the server, waiting for its first answer,
 * calling the tool, and the server's own progress message and ratio — fed by the daemon's
 * `session.state` events and the call's progress. Nothing at all when stdout or stderr is not a TTY
 * (MCPX_PROGRESS=1 forces it on, MCPX_PROGRESS=0 off). It appears only after a short delay, so fast
 * calls stay quiet. The line is cleared however the command ends; Ctrl-C also says "cancelled".
 */
import type { DaemonClient } from '../daemon-client/client.js';
import { progressWords, stateWords, type ServerKind } from './progress-words.js';

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
  /** The server's own progress notification for the call. */
  update(p: { progress: number; total?: number; message?: string }): void;
  stop(): void;
}

export interface ProgressOptions {
  delayMs?: number;
  out?: NodeJS.WritableStream;
  /** What the command waits for once the server is ready: "calling sleep", "listing tools". */
  doing?: string;
}

/** Follows the start of `server` (all servers when undefined) while a request is pending. */
export function startProgress(client: DaemonClient, server: string | undefined, opts: ProgressOptions = {}): Progress {
  const out = opts.out ?? process.stderr;
  const doing = opts.doing ?? 'waiting for the answer';
  const started = Date.now();
  const states = new Map<string, string>();
  const kinds = new Map<string, ServerKind>();
  let reported: string | undefined;
  let frame = 0;
  let shown = false;
  let stopped = false;
  const query = `?type=session.state,server.start,server.stop${server === undefined ? '' : `&server=${encodeURIComponent(server)}`}`;
  const follow = client.follow(query, (type, data) => {
    const e = data as { server?: string; state?: string };
    if (!e.server) return;
    if (type === 'session.state' && e.state) states.set(e.server, e.state);
    else if (type === 'server.start') states.set(e.server, 'ready');
  });
  // What is starting already (another caller may have started it), and what each server is: seeded once.
  const seeded = follow.ready.then(async () => {
    try {
      const [status, servers] = await Promise.all([
        client.request<{ servers?: Array<{ server: string; instances: Array<{ sessionState: string | null; state: string }> }> }>('GET', '/v1/status'),
        client.request<{ servers?: Array<{ server: string; transport: 'stdio' | 'http'; command?: string }> }>('GET', '/v1/servers'),
      ]);
      for (const s of servers.body.servers ?? []) kinds.set(s.server, { transport: s.transport, ...(s.command === undefined ? {} : { command: s.command }) });
      for (const s of status.body.servers ?? []) {
        if (server !== undefined && s.server !== server) continue;
        const i = s.instances.find((x) => x.state === 'starting') ?? s.instances[0];
        if (i && !states.has(s.server)) states.set(s.server, i.sessionState ?? (i.state === 'starting' ? 'connecting' : 'ready'));
      }
    } catch {
      // best effort
    }
  });
  const clear = () => {
    if (shown) out.write('\r\x1b[K');
    shown = false;
  };
  const line = (): string => {
    if (server !== undefined) {
      const state = states.get(server);
      const words = stateWords(state, kinds.get(server), doing);
      // The server's own progress, once it is ready and working on the call.
      const own = reported !== undefined && (state === undefined || state.startsWith('ready')) ? `${doing}: ${reported}` : words;
      return `${server}: ${own}`;
    }
    const starting = [...states].filter(([, s]) => !s.startsWith('ready'));
    if (starting.length === 0) return doing;
    return `${doing}; ${starting.map(([n, s]) => `${n}: ${stateWords(s, kinds.get(n), doing)}`).join(', ')}`;
  };
  const render = () => {
    if (stopped) return;
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    out.write(`\r${FRAMES[frame++ % FRAMES.length]} ${line()} (${secs}s)\x1b[K`);
    shown = true;
  };
  let timer: NodeJS.Timeout | undefined;
  const delay = setTimeout(() => {
    render();
    timer = setInterval(render, 100);
  }, opts.delayMs ?? 300);
  const bound = new Promise<void>((r) => setTimeout(r, 500).unref());

  const end = () => {
    stopped = true;
    clearTimeout(delay);
    if (timer) clearInterval(timer);
    follow.stop();
    void seeded;
    process.off('SIGINT', onSigint);
    process.off('exit', clear);
  };
  // Ctrl-C: the line goes, "cancelled" stays. Another handler (a call abandoning itself) then ends the
  // process; with none, the signal is raised again so the process ends as Ctrl-C always ended it.
  function onSigint(): void {
    end();
    clear();
    out.write('mcpx: cancelled\n');
    if (process.listenerCount('SIGINT') === 0) process.kill(process.pid, 'SIGINT');
  }
  process.once('SIGINT', onSigint);
  process.once('exit', clear); // whatever ends the process, the line does not stay behind
  return {
    ready: Promise.race([follow.ready, bound]),
    update(p) {
      reported = progressWords(p);
    },
    stop() {
      end();
      clear();
    },
  };
}
