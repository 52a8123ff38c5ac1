/**
 * What the `mcpx` commands share: output, the --config/--state-dir/--json options, reaching the daemon
 * (started in the background when none answers), API errors as McpxErrors, the usage-error type.
 *
 * Light on purpose: every command loads this, so the daemon client (and the config and settings
 * modules it needs) is imported only when a command connects.
 */
import { terminalSafe, terminalSafeJson } from './terminal-text.js';
import type { Command } from 'commander';
import { McpxError } from '../errors.js';
import type { ServerView } from '../core/views.js';
import type { ApiResponse, ClientOptions, DaemonClient, Target } from '../daemon-client/client.js';
import { table } from './format.js';
import { noteJsonPrinted } from './json-errors.js';

/** A mistake in how the command was typed: exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What every command's registration gets. */
export interface CliContext {
  /** This CLI's entry file (a daemon started in the background runs `<node> <entry> daemon`). */
  entry: string;
  /** The command line as given (`process.argv`). */
  argv: readonly string[];
}

/** One `mcpx` command: adds itself (name, arguments, options, action) to the program. */
export interface CliCommand {
  register(program: Command, cli: CliContext): void | Promise<void>;
}

export interface CommonOpts {
  config?: string;
  stateDir?: string;
  json?: boolean;
}

interface ApiErrorBody {
  ok?: false;
  error?: { code?: string; message?: string };
}

/** A line (or lines) on stdout; control sequences in it (an upstream's text) are shown escaped, not obeyed. */
export function out(text: string): void {
  const safe = terminalSafe(text);
  process.stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`);
}

/** JSON on stdout: exact JSON, with the control characters JSON leaves raw written as `\u` escapes. */
export function printJson(body: unknown): void {
  noteJsonPrinted();
  process.stdout.write(`${terminalSafeJson(JSON.stringify(body, null, 2))}\n`);
}

export function clientOptions(o: CommonOpts): ClientOptions {
  return { ...(o.config === undefined ? {} : { config: o.config }), ...(o.stateDir === undefined ? {} : { stateDir: o.stateDir }) };
}

/** Adds --config and --state-dir (where the daemon is) to a client command. */
export function withTarget(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'the config file (else MCPX_CONFIG, .mcpx.json / .mcp.json walking up, ~/.config/mcpx/config.json)')
    .option('--state-dir <dir>', 'the state folder holding daemon.sock (else MCPX_STATE_DIR, $XDG_STATE_HOME/mcpx, ~/.local/state/mcpx)');
}

export function withJson(cmd: Command): Command {
  return cmd.option('--json', "print the API's JSON body instead of a table");
}

/** Where the daemon of these options lives (loads the config and settings modules). */
export async function target(o: CommonOpts): Promise<Target> {
  const { resolveTarget } = await import('../daemon-client/target.js');
  return resolveTarget(clientOptions(o));
}

/** A client connected to the daemon, started in the background when none answers. */
export async function connect(o: CommonOpts, cli: CliContext, autoStart = true): Promise<{ client: DaemonClient; target: Target }> {
  const { DaemonClient, resolveTarget, startDaemonInBackground } = await import('../daemon-client/client.js');
  const t = await resolveTarget(clientOptions(o));
  const client = new DaemonClient(t.socket, t.configFile);
  if (await client.alive()) return { client, target: t };
  if (!autoStart) throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `no daemon is running (state folder ${t.stateDir})`);
  await startDaemonInBackground(t, { entry: cli.entry });
  return { client, target: t };
}

/** The daemon went away under a request: said as such. */
export async function wentAway(client: DaemonClient, err: unknown): Promise<never> {
  const { isNotRunning } = await import('../daemon-client/client.js');
  if (isNotRunning(err)) throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon on ${client.socket} went away`);
  throw err;
}

/** Sends a request; a non-2xx answer is an error carrying the API's message. */
export async function api<T>(
  client: DaemonClient,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<ApiResponse<T>> {
  let res: ApiResponse<T>;
  try {
    res = await client.request<T>(method, path, body, headers);
  } catch (err) {
    return wentAway(client, err);
  }
  if (res.status >= 400) {
    const e = (res.body as ApiErrorBody | null)?.error;
    throw new McpxError((e?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', e?.message ?? `the daemon answered ${res.status}`);
  }
  return res;
}

/** Runs a client command: connect, act, close. */
export async function withClient(o: CommonOpts, cli: CliContext, fn: (client: DaemonClient, target: Target) => Promise<void>, autoStart = true): Promise<void> {
  const { client, target: t } = await connect(o, cli, autoStart);
  try {
    await fn(client, t);
  } finally {
    await client.close();
  }
}

export function callHeaders(o: { callerProtocol?: string; session?: string }): Record<string, string> {
  return {
    ...(o.callerProtocol ? { 'x-mcpx-caller-protocol': o.callerProtocol } : {}),
    ...(o.session ? { 'x-mcpx-session': o.session } : {}),
  };
}

/** While the request is pending, a progress line (TTY only) saying in words what it waits for (`doing`, once the server is ready). */
export async function withProgress<T>(client: DaemonClient, server: string | undefined, work: () => Promise<T>, doing?: string): Promise<T> {
  const { progressEnabled, startProgress } = await import('./progress.js');
  if (!progressEnabled()) return work();
  const p = startProgress(client, server, doing === undefined ? {} : { doing });
  try {
    await p.ready;
    return await work();
  } finally {
    p.stop();
  }
}

export function serversTable(servers: ServerView[], withLimits = false): string {
  return table(
    ['SERVER', 'TRANSPORT', 'PREFERENCE', withLimits ? 'POOL' : 'INSTANCES', 'COMMAND / URL'],
    servers.map((s) => [
      s.disabled ? `${s.server} (disabled)` : s.server,
      s.transport,
      `${s.preference}${s.preferenceSource === 'server' ? ' (server)' : ''}`,
      withLimits ? `${s.limits.scope}, max ${s.limits.max}, ${s.limits.sharing}` : s.instances,
      s.transport === 'stdio'
        ? `${[s.command, ...(s.args ?? [])].join(' ')}${s.env && Object.keys(s.env).length > 0 ? `  env: ${Object.keys(s.env).join(', ')}` : ''}`
        : `${s.url ?? ''}${s.headers && Object.keys(s.headers).length > 0 ? `  headers: ${Object.keys(s.headers).join(', ')}` : ''}`,
    ]),
  );
}
