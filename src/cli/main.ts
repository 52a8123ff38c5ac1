#!/usr/bin/env node
/**
 * The `mcpx` command line (the README).
 *
 *   mcpx daemon                      run the daemon in the foreground (every setting has a flag)
 *   mcpx status | servers | protocol read commands: a table, or --json (exactly the API's body)
 *   mcpx tools [SERVER]              tools, starting servers as needed
 *   mcpx call SERVER TOOL [JSON]     call a tool
 *   mcpx settings [get|set|unset PATH [VALUE]]
 *   mcpx config                      the resolved config, secrets redacted (no daemon needed)
 *   mcpx reload | stop
 *
 * Client commands find the daemon through the state folder and start one in the background when
 * none answers (`stop` excepted). Errors: one line on stderr, `mcpx: <message>`; exit 2 for a usage
 * error, 1 for anything else.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { McpxError } from '../errors.js';
import { parseDuration } from '../config/duration.js';
import { SETTINGS, Settings } from '../config/settings.js';
import type { ReloadOutcome, SettingChangeView, ToolsView, ConfigView, ServerView, ProtocolRow, ServerStatusView } from '../server/controller.js';
import { loadDaemonConfig } from '../server/config-source.js';
import { packageVersion } from '../server/package-info.js';
import { describeFilesLeft, pidAlive, removeDaemonFiles } from '../server/state-dir.js';
import type { SettingEntry } from '../config/settings.js';
import { DaemonClient, isNotRunning, resolveTarget, startDaemonInBackground, type ApiResponse, type ClientOptions, type Target } from './client.js';
import { ago, clip, table } from './format.js';
import { progressEnabled, startProgress } from './progress.js';
import { answerSources, runAsk } from './ask-call.js';
import { capabilitiesFor } from './questions.js';

const ENTRY = fileURLToPath(import.meta.url);

/** A mistake in how the command was typed: exit 2. */
class UsageError extends Error {}

interface CommonOpts {
  config?: string;
  stateDir?: string;
  json?: boolean;
}

interface ApiErrorBody {
  ok?: false;
  error?: { code?: string; message?: string };
}

// ---------------------------------------------------------------------------------------------
// helpers

function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

function printJson(body: unknown): void {
  out(JSON.stringify(body, null, 2));
}

function clientOptions(o: CommonOpts): ClientOptions {
  return { ...(o.config === undefined ? {} : { config: o.config }), ...(o.stateDir === undefined ? {} : { stateDir: o.stateDir }) };
}

/** Adds --config and --state-dir (where the daemon is) to a client command. */
function withTarget(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'the config file (else MCPX_CONFIG, .mcpx.json / .mcp.json walking up, ~/.config/mcpx/config.json)')
    .option('--state-dir <dir>', 'the state folder holding daemon.sock (else MCPX_STATE_DIR, $XDG_STATE_HOME/mcpx, ~/.local/state/mcpx)');
}

function withJson(cmd: Command): Command {
  return cmd.option('--json', 'print the API\'s JSON body instead of a table');
}

/** A client connected to the daemon, started in the background when none answers. */
async function connect(o: CommonOpts, autoStart = true): Promise<{ client: DaemonClient; target: Target }> {
  const target = await resolveTarget(clientOptions(o));
  const client = new DaemonClient(target.socket);
  if (await client.alive()) return { client, target };
  if (!autoStart) throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `no daemon is running (state folder ${target.stateDir})`);
  await startDaemonInBackground(target, { entry: ENTRY });
  return { client, target };
}

/** Sends a request; a non-2xx answer is an error carrying the API's message. */
async function api<T>(client: DaemonClient, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>> {
  let res: ApiResponse<T>;
  try {
    res = await client.request<T>(method, path, body, headers);
  } catch (err) {
    if (isNotRunning(err)) throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon on ${client.socket} went away`);
    throw err;
  }
  if (res.status >= 400) {
    const e = (res.body as ApiErrorBody | null)?.error;
    throw new McpxError((e?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', e?.message ?? `the daemon answered ${res.status}`);
  }
  return res;
}

/** Runs a client command: connect, act, close. */
async function withClient(o: CommonOpts, fn: (client: DaemonClient, target: Target) => Promise<void>, autoStart = true): Promise<void> {
  const { client, target } = await connect(o, autoStart);
  try {
    await fn(client, target);
  } finally {
    await client.close();
  }
}

function callHeaders(o: { callerProtocol?: string; session?: string }): Record<string, string> {
  return {
    ...(o.callerProtocol ? { 'x-mcpx-caller-protocol': o.callerProtocol } : {}),
    ...(o.session ? { 'x-mcpx-session': o.session } : {}),
  };
}

/** While the request is pending, a progress line (TTY only) naming the server and its probe state. */
async function withProgress<T>(client: DaemonClient, server: string | undefined, work: () => Promise<T>): Promise<T> {
  if (!progressEnabled()) return work();
  const p = startProgress(client, server);
  try {
    await p.ready;
    return await work();
  } finally {
    p.stop();
  }
}

/** How old an era record is, in the largest whole unit (its age decides whether it is still used: upstream.eraCacheMaxAge). */
function recordAge(at: string): string {
  const ms = Math.max(0, Date.now() - Date.parse(at));
  if (!Number.isFinite(ms)) return '?';
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  for (const [u, n] of units) if (ms >= n) return `${Math.floor(ms / n)}${u}`;
  return '0s';
}

function resultText(result: Record<string, unknown>): string {
  const content = result['content'];
  if (!Array.isArray(content)) return JSON.stringify(result, null, 2);
  const parts = content.map((c: { type?: string; text?: string }) => (c?.type === 'text' && typeof c.text === 'string' ? c.text : JSON.stringify(c)));
  if (parts.length === 0 && result['structuredContent'] !== undefined) return JSON.stringify(result['structuredContent'], null, 2);
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// the program

function buildProgram(): Command {
  const program = new Command();
  program
    .name('mcpx')
    .description('A local daemon that fronts MCP servers of both eras (legacy initialize and 2026-07-28 discover).')
    .version(packageVersion(), '-V, --version')
    .showSuggestionAfterError(true)
    .configureOutput({
      outputError: (str, write) => write(`mcpx: ${str.replace(/^error:\s*/i, '').trim().split('\n')[0]}\n`),
    })
    .exitOverride();

  // ---- daemon ----
  const daemon = program.command('daemon').description('run the daemon in the foreground (logs on stdout: pretty on a TTY, JSON otherwise)');
  daemon.option('--config <file>', 'the config file (else MCPX_CONFIG, .mcpx.json / .mcp.json walking up, ~/.config/mcpx/config.json; none: the bundled demo)');
  daemon.option('--inspect [port]', 'stream every session and pool actor to the Stately inspector through a relay on 127.0.0.1:PORT (default 8099); the viewer is Stately\'s web page');
  const flagOf = new Map<string, string>();
  for (const d of SETTINGS) {
    const def = d.defaultText ?? (typeof d.default === 'function' ? '' : (d.codec.display as (v: unknown) => string)(d.default));
    const allowed = d.codec.allowed ? ` (${d.codec.allowed.join(', ')})` : '';
    for (const flag of [d.flag, ...d.flagAliases]) {
      const alias = flag !== d.flag;
      const opt = new Option(`${flag} <value>`, alias ? `same as ${d.flag}` : `${d.description}${allowed} [env ${d.env}${def ? `; default ${def}` : ''}]`);
      daemon.addOption(opt);
      flagOf.set(opt.attributeName(), flag);
    }
  }
  daemon.action(async (o: Record<string, string | undefined>) => {
    const flags: Record<string, string> = {};
    for (const [attr, flag] of flagOf) {
      const v = o[attr];
      if (v !== undefined) flags[flag] = v;
    }
    const { startDaemon } = await import('../server/daemon.js');
    const inspect = o['inspect'] === undefined ? undefined : (await import('./ui.js')).inspectOption(o['inspect'] as string | boolean);
    const handle = await startDaemon({ ...(o['config'] === undefined ? {} : { configFlag: o['config'] }), flags, handleSignals: true, ...(inspect ? { inspect } : {}) });
    await handle.stopped;
    process.exit(0);
  });

  // ---- serve ----
  withTarget(
    program
      .command('serve')
      .description('an MCP server on stdio for one MCP client (Claude Desktop, Claude Code, Cursor, VS Code): every configured server, in the caller\'s own era, through the daemon (started when none runs)'),
  )
    .option('--passthrough <name>', 'serve one server under its own names (tools, prompts, resources, templates, completions)')
    .option('--servers <a,b>', 'show only these servers (aggregate mode)')
    .action(async (o: CommonOpts & { passthrough?: string; servers?: string }) => {
      if (o.passthrough !== undefined && o.servers !== undefined) throw new UsageError('--passthrough and --servers do not go together: passthrough serves one server');
      const servers = o.servers?.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
      if (servers !== undefined && servers.length === 0) throw new UsageError('--servers needs at least one server name');
      const target = await resolveTarget(clientOptions(o));
      const { runServe } = await import('../serve/stdio-entry.js');
      await runServe({ target, entry: ENTRY, ...(o.passthrough === undefined ? {} : { passthrough: o.passthrough }), ...(servers === undefined ? {} : { servers }) });
    });

  // ---- ui ----
  withJson(withTarget(program.command('ui').description('the address of the daemon\'s live page: eras, statecharts and probe timelines (loopback only, one-time login)')))
    .option('--open', 'open it in the browser')
    .action(async (o: CommonOpts & { open?: boolean }) =>
      withClient(o, async (client) => {
        const { runUi } = await import('./ui.js');
        await runUi(client, o, out);
      }));

  // ---- status ----
  withJson(withTarget(program.command('status').description('the daemon, its servers, their lanes and live instances'))).action(async (o: CommonOpts) =>
    withClient(o, async (client) => {
      const { body } = await api<{ version: string; pid: number; uptimeMs: number; daemon: { socket: string | null; tcp: { host: string; port: number } | null }; config: { file: string | null; demo: boolean }; servers: ServerStatusView[] }>(client, 'GET', '/v1/status');
      if (o.json) return printJson(body);
      out(`mcpx ${body.version}, daemon pid ${body.pid}, up ${ago(body.uptimeMs)}; socket ${body.daemon.socket ?? '-'}${body.daemon.tcp ? `; tcp ${body.daemon.tcp.host}:${body.daemon.tcp.port}` : ''}`);
      out(`config: ${body.config.file ?? '-'}${body.config.demo ? ' (the bundled demo)' : ''}`);
      out('');
      out(table(['SERVER', 'PREFERENCE', 'LANES'], body.servers.map((s) => [s.server, s.preference, s.lanes.map((l) => `${l.lane} ${l.instances}/${l.max}${l.state ? ` (${l.state})` : ''}`).join(', ')])));
      const rows = body.servers.flatMap((s) => s.instances.map((i) => [s.server, i.id, i.lane, i.pid, i.scopeKey, i.holders, i.era, i.sessionState ?? i.state, ago(i.uptimeMs)]));
      if (rows.length > 0) {
        out('');
        out(table(['SERVER', 'INSTANCE', 'LANE', 'PID', 'SCOPE KEY', 'HOLDERS', 'ERA', 'STATE', 'UPTIME'], rows));
      }
    }),
  );

  // ---- stop ----
  withTarget(program.command('stop').description('stop the daemon and every upstream process')).action(async (o: CommonOpts) => {
    const target = await resolveTarget(clientOptions(o));
    const client = new DaemonClient(target.socket);
    try {
      if (!(await client.alive())) {
        out(`no daemon is running (state folder ${target.stateDir})`);
        return;
      }
      const { body } = await api<{ pid: number }>(client, 'POST', '/v1/shutdown');
      const deadline = Date.now() + 30_000;
      while (pidAlive(body.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (pidAlive(body.pid)) throw new McpxError('MCPX_INTERNAL', `the daemon (pid ${body.pid}) is still running after 30 s`);
      out(`stopped the mcpx daemon (pid ${body.pid})`);
      // What it could not remove (a read-only state folder) would stop the next start: say which files, and why.
      const { left } = await removeDaemonFiles(target.stateDir, target.socket, body.pid);
      if (left.length > 0) {
        throw new McpxError('MCPX_BAD_SETTING', `the daemon stopped, but these files of the state folder ${target.stateDir} are left and could not be removed: ${describeFilesLeft(left)}; make the folder writable and remove them, or the next daemon cannot start there`, { data: { stateDir: target.stateDir, left } });
      }
    } finally {
      await client.close();
    }
  });

  // ---- reload ----
  withJson(withTarget(program.command('reload').description('re-read the config (added servers start on first use, removed ones stop, unchanged ones keep running)'))).action(async (o: CommonOpts) =>
    withClient(o, async (client) => {
      const { body } = await api<ReloadOutcome>(client, 'POST', '/v1/reload');
      if (o.json) printJson(body);
      if (!body.ok) throw new McpxError('MCPX_BAD_CONFIG', `config not reloaded (the last good config stays): ${body.error.message.split('\n').join('; ')}`);
      if (o.json) return;
      const parts = [`added: ${body.added.join(', ') || '-'}`, `removed: ${body.removed.join(', ') || '-'}`, `changed: ${body.replaced.join(', ') || '-'}`, `unchanged: ${body.kept.length}`];
      out(`reloaded ${body.file ?? 'the config'}${body.demo ? ' (the bundled demo)' : ''}: ${parts.join('; ')}`);
      for (const f of body.failed) out(`  ${f.server}: ${f.message}`);
      if (body.restartNeeded.length > 0) out(`restart the daemon for: ${body.restartNeeded.join(', ')}`);
    }),
  );

  // ---- servers ----
  withJson(withTarget(program.command('servers').description('configured servers, their transport and effective protocol preference (secrets redacted)'))).action(async (o: CommonOpts) =>
    withClient(o, async (client) => {
      const { body } = await api<{ servers: ServerView[] }>(client, 'GET', '/v1/servers');
      if (o.json) return printJson(body);
      out(serversTable(body.servers));
    }),
  );

  // ---- tools ----
  withJson(withTarget(program.command('tools').argument('[server]', 'one server (default: every server)').description('list tools, starting servers as needed')))
    .option('--caller-protocol <revision>', 'answer for a caller on this MCP revision (X-Mcpx-Caller-Protocol), e.g. 2025-11-25')
    .option('--session <id>', 'the caller session (for servers pooled per session)')
    .action(async (server: string | undefined, o: CommonOpts & { callerProtocol?: string; session?: string }) =>
      withClient(o, async (client) => {
        const q = new URLSearchParams();
        if (server !== undefined) q.set('server', server);
        if (o.session) q.set('session', o.session);
        const path = `/v1/tools${q.size > 0 ? `?${q}` : ''}`;
        const { body } = await withProgress(client, server, () => api<ToolsView>(client, 'GET', path, undefined, callHeaders(o)));
        if (o.json) printJson(body);
        else out(table(['SERVER', 'TOOL', 'MCP NAME', 'DESCRIPTION'], body.tools.map((t) => [t.server, t.name, t.exposed, clip(typeof t.description === 'string' ? t.description : '', 60)])));
        if (body.errors.length > 0) {
          for (const e of body.errors.slice(1)) process.stderr.write(`mcpx: ${e.server}: ${e.message}\n`);
          const first = body.errors[0]!;
          throw new McpxError((first.code as McpxError['code']) ?? 'MCPX_INTERNAL', `${first.server}: ${first.message}`);
        }
      }),
    );

  // ---- call ----
  withJson(withTarget(program.command('call').argument('<server>', 'the server').argument('<tool>', 'the tool').argument('[json]', 'the arguments as a JSON object (- reads stdin)').description('call a tool and print its result')))
    .option('--session <id>', 'the caller session (CallContext.session)')
    .option('--caller-protocol <revision>', 'call as a caller on this MCP revision (X-Mcpx-Caller-Protocol), e.g. 2025-11-25')
    .option('--timeout <duration>', 'give up after this long (e.g. 30s)')
    .option('--answer <key=json>', 'answer a question\'s form field without a terminal (repeatable), e.g. --answer name=\'"Ada"\'', (v: string, acc: string[] = []) => [...acc, v])
    .option('--answers <file>', 'answers from a JSON file: form fields, and "$sampling" (a CreateMessageResult) to answer sampling')
    .option('--roots <dir...>', 'the roots to give a server that asks for them (default: none)')
    .action(async (server: string, tool: string, json: string | undefined, o: CommonOpts & { session?: string; callerProtocol?: string; timeout?: string; answer?: string[]; answers?: string; roots?: string[] }) => {
      let args: unknown = {};
      if (json !== undefined) {
        const text = json === '-' ? readFileSync(0, 'utf8') : json;
        try {
          args = JSON.parse(text);
        } catch (err) {
          throw new UsageError(`the arguments are not JSON: ${(err as Error).message}`);
        }
        if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new UsageError('the arguments must be a JSON object, e.g. \'{"text":"hi"}\'');
      }
      let timeoutMs: number | undefined;
      if (o.timeout !== undefined) {
        try {
          timeoutMs = parseDuration(o.timeout, '--timeout');
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      }
      const sources = answerSources(o, json === '-');
      await withClient(o, async (client) => {
        const body = { server, tool, args, capabilities: capabilitiesFor(sources), ...(o.session ? { session: o.session } : {}), ...(timeoutMs === undefined ? {} : { timeoutMs }) };
        // Through /v1/ask, so a server that asks something in the middle of the call is answered here.
        // The progress line (a TTY only) gives way to the first question.
        const progress = progressEnabled() ? startProgress(client, server) : undefined;
        await progress?.ready;
        const outcome = await runAsk(client, body, callHeaders(o), sources, () => progress?.stop())
          .catch((err: unknown) => {
            if (isNotRunning(err)) throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon on ${client.socket} went away`);
            throw err;
          })
          .finally(() => progress?.stop());
        if (o.json) printJson(outcome);
        if (!outcome.ok) throw new McpxError((outcome.error?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', outcome.error?.message ?? 'the call failed');
        if (!o.json) out(resultText(outcome.result ?? {}));
      });
    });

  // ---- protocol ----
  withJson(withTarget(program.command('protocol').description('per server: preference, era, negotiated version, where the era came from, the cached record, the legacy lane'))).action(async (o: CommonOpts) =>
    withClient(o, async (client) => {
      const { body } = await api<{ servers: ProtocolRow[] }>(client, 'GET', '/v1/protocol');
      if (o.json) return printJson(body);
      out(
        table(
          ['SERVER', 'PREFERENCE', 'ERA', 'NEGOTIATED', 'SOURCE', 'CACHED', 'LEGACY LANE'],
          body.servers.map((s) => [
            s.server,
            s.pendingPreference ? `${s.preference} → ${s.pendingPreference}` : s.preference,
            s.era ?? 'not started',
            s.negotiated,
            s.eraSource,
            s.cached ? `${s.cached.era} ${s.cached.version}, ${recordAge(s.cached.at)} old` : null,
            s.legacyLane ? `${s.legacyLane.state}${s.legacyLane.reason ? ` (${clip(s.legacyLane.reason, 40)})` : ''}` : null,
          ]),
        ),
      );
    }),
  );

  // ---- settings ----
  withJson(withTarget(program.command('settings').argument('[action]', 'get, set or unset (none: list every setting)').argument('[path]', 'a setting path, e.g. upstream.protocol').argument('[value]', 'the new value (set)').description('list, read, set or unset settings (a runtime value applies to sessions started from now on)'))).action(
    async (action: string | undefined, path: string | undefined, value: string | undefined, o: CommonOpts) => {
      if (action !== undefined && !['get', 'set', 'unset'].includes(action)) throw new UsageError(`unknown settings action ${JSON.stringify(action)}; use get, set or unset`);
      if (action !== undefined && path === undefined) throw new UsageError(`mcpx settings ${action} needs a setting path`);
      if (action === 'set' && value === undefined) throw new UsageError('mcpx settings set needs a value');
      if (action !== 'set' && value !== undefined) throw new UsageError(`mcpx settings ${action ?? ''} takes no value`.replace('  ', ' '));
      await withClient(o, async (client) => {
        const at = `/v1/settings/${encodeURIComponent(path ?? '')}`;
        if (action === undefined) {
          const { body } = await api<{ settings: SettingEntry[] }>(client, 'GET', '/v1/settings');
          if (o.json) return printJson(body);
          return out(table(['SETTING', 'VALUE', 'SOURCE', 'DEFAULT'], body.settings.map((s) => [s.path, s.display, s.source === 'default' ? 'default' : `${s.source}${s.from && s.from !== s.source ? ` (${s.from})` : ''}`, s.defaultDisplay])));
        }
        if (action === 'get') {
          const { body } = await api<SettingEntry>(client, 'GET', at);
          if (o.json) return printJson(body);
          return out(`${body.path} = ${body.display}  (${body.source}${body.from && body.from !== body.source ? ` ${body.from}` : ''}; default ${body.defaultDisplay})`);
        }
        const { body } = action === 'set' ? await api<SettingChangeView>(client, 'PUT', at, { value }) : await api<SettingChangeView>(client, 'DELETE', at);
        if (o.json) return printJson(body);
        const deferred = body.servers?.deferred.length ? `; ${body.servers.deferred.join(', ')} pick it up when their running instances stop` : '';
        return out(`${body.setting.path} = ${body.setting.display}  (${body.setting.source}; applies to ${body.appliesTo}${deferred})`);
      });
    },
  );

  // ---- config ----
  withJson(withTarget(program.command('config').description('the resolved config (as the daemon would run it), secrets redacted; exits 1 when it has errors'))).action(async (o: CommonOpts) => {
    const env = process.env;
    const cwd = process.cwd();
    const loaded = await loadDaemonConfig({ ...(o.config === undefined ? {} : { configFlag: o.config }), env, cwd });
    if (loaded.errors.length > 0) throw new McpxError('MCPX_BAD_CONFIG', loaded.errors.map((e) => e.message).join('; '));
    const settings = new Settings({ file: loaded.settingsFile, ...(loaded.file ? { filePath: loaded.file } : {}), env, cwd, flags: o.stateDir === undefined ? {} : { '--state-dir': o.stateDir } });
    const { describeConfig } = await import('../server/controller.js');
    const view: ConfigView = describeConfig(loaded, settings);
    if (o.json) return printJson(view);
    out(`config: ${view.file ?? '-'}${view.demo ? ' (no config file found: the bundled demo)' : view.via ? ` (found via ${view.via})` : ''}`);
    out('');
    out(serversTable(view.servers, true));
    for (const w of view.warnings) process.stderr.write(`mcpx: warning: ${w}\n`);
  });

  return program;
}

function serversTable(servers: ServerView[], withLimits = false): string {
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

function oneLine(message: string): string {
  return message.split('\n').map((l) => l.trim()).filter((l) => l.length > 0).join('; ');
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : 2; // a usage error (or no command at all): commander already printed it
    }
    if (err instanceof UsageError) {
      process.stderr.write(`mcpx: ${oneLine(err.message)}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`mcpx: ${oneLine(message)}\n`);
    return 1;
  }
}

// stdout and stderr are synchronous for files, pipes and TTYs on Linux, so nothing is lost by exiting at once.
process.exit(await main(process.argv));
