/**
 * The client side of the official MCP conformance suite (`conformance client --command …`), played by the
 * `mcpx` binary users run (package.json `bin`, as built: dist/src/cli/main.js; or MCPX_TEST_BIN, an
 * installed package's). `npm run conformance` (scripts/conformance.ts).
 *
 * Per scenario, in a temp folder (its home, state folder and config, removed at the end):
 *   1. a config file naming the scenario's mock server (URL = last argument) as the HTTP server `s`,
 *      protocol prefer-discover and 10 s start/request timeouts; for auth/*, its `oauth` settings from
 *      MCP_CONFORMANCE_CONTEXT (a pre-registered client, else the client metadata document URL);
 *   2. `mcpx daemon` in the foreground, as a child, until it answers on its socket; for auth/*, then
 *      `mcpx login s` with BROWSER=scripts/conformance/follow-redirects.mjs (the mock approves at once);
 *   3. `mcpx tools s --json`;
 *   4. `mcpx call s TOOL JSON --json` per call (for auth/*, a call refused with MCPX_UPSTREAM_UNAUTHORIZED is
 *      followed by `mcpx login s` and the call again, twice at most, as a person would): the ones MCP_CONFORMANCE_CONTEXT names (`toolCalls`, e.g.
 *      http-custom-headers), else every tool listed (tools mcpx excluded, such as those with invalid
 *      x-mcp-header annotations, are not listed), with plausible arguments made from its inputSchema;
 *   5. when the server offers resources or prompts (GET /v1/catalog on the socket; there is no CLI
 *      command for them), each resource is read and each prompt fetched through POST /v1/request, so
 *      every request kind with a standard header is exercised (http-standard-headers);
 *   6. `mcpx stop`, then the folder goes. SIGTERM/SIGINT (the conformance CLI's timeout) stop the
 *      daemon too; it shares our process group, so the runner's group kill ends it as well.
 *
 * Questions the server asks during a call (a legacy `elicitation/create`, a 2026-07-28 `input_required`
 * round) are answered by `mcpx call` itself, without a terminal: as a consenting user, with each field's
 * schema default (SEP-1034) and `--answer` values (see CONSENT).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './conformance/common.js';

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const BIN = process.env.MCPX_TEST_BIN ? realpathSync(process.env.MCPX_TEST_BIN) : join(root, 'dist', 'src', 'cli', 'main.js');
const SERVER = 's';

/** Scenarios that want less than the default client (list, call every tool, resources, prompts). */
const LIST_ONLY = new Set([
  // SEP-2106: the check is that listing does not fetch a network `$ref`; the mock has no tools/call at all.
  'json-schema-ref-no-deref',
]);

/**
 * Without a terminal, `mcpx call` declines a form unless some answer is given, even one whose every field
 * has a default; given any, it sends the defaults for the rest. So every call consents with the one
 * answer a scenario asks for with no default (sep-2322-client-request-state's `confirmed`); fields not
 * in a form's schema are not sent.
 */
const CONSENT = ['--answer', 'confirmed=true'];

interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

interface Tool {
  name: string;
  inputSchema?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function contextToolCalls(): ToolCall[] | undefined {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  if (!raw) return undefined;
  const context: unknown = JSON.parse(raw);
  const calls = isObject(context) && Array.isArray(context.toolCalls) ? context.toolCalls : undefined;
  return calls?.filter((c): c is ToolCall => isObject(c) && typeof c.name === 'string' && isObject(c.arguments));
}

/** The `oauth` settings an auth scenario's context gives: a pre-registered client, or the metadata document URL. */
function oauthSettings(): Record<string, unknown> {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  const context: unknown = raw ? JSON.parse(raw) : {};
  const c = isObject(context) ? context : {};
  return {
    ...(typeof c.client_id === 'string' ? { clientId: c.client_id } : {}),
    ...(typeof c.client_secret === 'string' ? { clientSecret: c.client_secret } : {}),
    // basic-cimd and offline-access-scope expect exactly this client id where the server takes metadata documents.
    ...(typeof c.client_id !== 'string' ? { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' } : {}),
  };
}

/** A value a schema accepts, good enough for a mock: its const/default/enum/example, else one of its type. */
function sampleValue(schema: unknown): unknown {
  if (!isObject(schema)) return 'example';
  if ('const' in schema) return schema.const;
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'integer':
      return typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : 1;
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1.5;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return sampleArgs(schema);
    case 'null':
      return null;
    default:
      return 'example';
  }
}

/** Arguments for an object schema: its required properties and the ones mirrored into headers (x-mcp-header). */
function sampleArgs(schema: unknown): Record<string, unknown> {
  if (!isObject(schema) || !isObject(schema.properties)) return {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const args: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(schema.properties)) {
    const wanted = required.has(key) || (isObject(prop) && ('x-mcp-header' in prop || JSON.stringify(prop.properties ?? {}).includes('"x-mcp-header"')));
    if (wanted) args[key] = sampleValue(prop);
  }
  return args;
}

function argsFor(tool: Tool, tools: Tool[]): Record<string, unknown> {
  // The scenarios' mocks expose arithmetic tools; `add_numbers` is what tools_call checks.
  if (tool.name === 'add_numbers') return { a: 2, b: 3 };
  // json-schema-2020-12-preservation: echo back, verbatim, the inputSchema mcpx listed for the other tool.
  if (tool.name === 'json_schema_echo') return { schema: tools.find((t) => t.name !== tool.name)?.inputSchema ?? {} };
  return sampleArgs(tool.inputSchema);
}

// ------------------------------------------------------------------ the binary and its daemon

const log = (line: string) => process.stderr.write(`[mcpx] ${line}\n`);
const clip = (text: string, n = 200) => (text.length > n ? `${text.slice(0, n)}…` : text);

/** One folder per run: home, XDG folders, state folder (daemon.sock) and config file; under the runner's scratch folder, which it removes even if we are killed. */
const dir = mkdtempSync(join(process.env.MCPX_CONFORMANCE_TMP ?? tmpdir(), 'run-'));
const stateDir = join(dir, 'state');
const configFile = join(dir, 'config.json');
const socket = join(stateDir, 'daemon.sock');

/** The environment of every mcpx process: nothing of ours (MCPX_*, XDG_*, HOME) leaks in. */
function mcpxEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(MCPX_|XDG_|NODE_OPTIONS$|HOME$|BROWSER$)/.test(k)) env[k] = v;
  return {
    ...env,
    BROWSER: join(root, 'scripts', 'conformance', 'follow-redirects.mjs'),
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_STATE_HOME: join(dir, 'xdg-state'),
    MCPX_STATE_DIR: stateDir,
    MCPX_CONFIG: configFile,
  };
}

let daemon: ChildProcess | undefined;
let daemonOut = '';
let daemonExit: Promise<void> = Promise.resolve();

function startDaemon(): void {
  const child = spawn(process.execPath, [BIN, 'daemon'], { env: mcpxEnv(), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (b: Buffer) => {
    daemonOut += b.toString('utf8');
    if (daemonOut.length > 200_000) daemonOut = daemonOut.slice(-100_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  daemonExit = new Promise((done) => child.once('exit', () => done()));
  daemon = child;
}

const daemonGone = () => daemon === undefined || daemon.exitCode !== null || daemon.signalCode !== null;

/** One HTTP request to the daemon's socket; the body parsed as JSON. */
function api(method: 'GET' | 'POST', path: string, body?: unknown, timeoutMs = 15_000): Promise<{ status: number; body: unknown }> {
  return new Promise((done, fail) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      { socketPath: socket, method, path, headers: data === undefined ? {} : { 'content-type': 'application/json' }, timeout: timeoutMs },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            done({ status: res.statusCode ?? 0, body: JSON.parse(text) });
          } catch {
            done({ status: res.statusCode ?? 0, body: text });
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', fail);
    req.end(data);
  });
}

async function waitForDaemon(limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  for (;;) {
    if (daemonGone()) throw new Error(`the daemon exited at start:\n${daemonOut.slice(-2000)}`);
    const up = await api('GET', '/v1/health', undefined, 1_000).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) return;
    if (Date.now() > end) throw new Error(`the daemon did not answer on ${socket} within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** `mcpx ARGS…` to completion. Never run with our daemon gone: the CLI would start one in the background. */
function mcpx(args: string[], timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (daemonGone()) return Promise.reject(new Error(`the daemon has exited; not running mcpx ${args[0]}:\n${daemonOut.slice(-2000)}`));
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: mcpxEnv(), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/** The pid in daemon.json when it is alive and not our child's. */
function strayDaemon(): number | undefined {
  let pid: unknown;
  try {
    pid = (JSON.parse(readFileSync(join(stateDir, 'daemon.json'), 'utf8')) as { pid?: unknown }).pid;
  } catch {
    return undefined;
  }
  if (typeof pid !== 'number' || pid === daemon?.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Stops the daemon (`mcpx stop`, then signals if it lingers) and removes the folder. Idempotent. */
let stopping: Promise<void> | undefined;
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    if (!daemonGone()) {
      const stopped = await mcpx(['stop'], 10_000).catch((err: unknown) => ({ code: null, stderr: String(err) }));
      if (stopped.code !== 0) log(`mcpx stop: exit ${stopped.code}: ${stopped.stderr.trim()}`);
      const exited = (ms: number) => Promise.race([daemonExit, new Promise((r) => setTimeout(r, ms))]);
      await exited(5_000);
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        if (daemonGone()) break;
        daemon?.kill(signal);
        await exited(3_000);
      }
    }
    // A daemon the CLI started in the background (ours died under a command) is detached: not in our group.
    const stray = strayDaemon();
    if (stray !== undefined) {
      log(`a daemon started in the background (pid ${stray}) is left: killing it`);
      try {
        process.kill(stray, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  })();
  return stopping;
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the daemon`);
    void shutdown().finally(() => process.exit(1));
  });
}

// ------------------------------------------------------------------ the scenario

async function main(): Promise<number> {
  if (!url || !/^https?:\/\//.test(url)) throw new Error(`usage: conformance-client <server-url> (got ${JSON.stringify(url)})`);
  // The runner binds its mocks to 127.0.0.1 only (scripts/conformance/loopback.mjs); `localhost` might resolve to ::1.
  // (The auth scenarios keep `localhost`: their protected-resource metadata names it, and RFC 8707 wants that origin.)
  const target = new URL(url);
  const auth = scenario.startsWith('auth/');
  if (target.hostname === 'localhost' && !auth) target.hostname = '127.0.0.1';
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  // Mocks answer in milliseconds; a request left hanging ends well inside the runner's limit, so the CLI
  // still writes its checks (it waits for the client before it grades).
  writeFileSync(
    configFile,
    `${JSON.stringify(
      {
        mcpServers: {
          [SERVER]: {
            url: target.href,
            protocol: 'prefer-discover',
            ...(auth ? { oauth: oauthSettings() } : {}),
            mcpx: { startTimeout: '10s', requestTimeout: '10s' },
          },
        },
      },
      null,
      2,
    )}\n`,
  );

  startDaemon();
  await waitForDaemon(15_000);
  if (auth) {
    // The suite's authorization server approves at once: the "browser" follows its redirects to mcpx's callback.
    const r = await mcpx(['login', SERVER]);
    log(`login → exit ${r.code}: ${clip(r.stderr.trim().split('\n').slice(-3).join(' | '), 600)}`);
    if (r.code !== 0) return 1;
  }

  let failures = 0;
  /** Runs one mcpx command; `--json` output parsed. A refusal mcpx makes on purpose (MCPX_BAD_TOOL) is no failure. */
  const run = async (what: string, args: string[]): Promise<unknown> => {
    let r = await mcpx([...args, '--json']);
    let body: unknown;
    const parse = () => {
      try {
        body = JSON.parse(r.stdout);
      } catch {
        body = undefined;
      }
      return isObject(body) && isObject(body.error) ? body.error.code : undefined;
    };
    /** `mcpx tools` reports a server's failure in `errors`, `mcpx call` in `error`. */
    const unauthorized = (c: unknown) =>
      c === 'MCPX_UPSTREAM_UNAUTHORIZED' ||
      (isObject(body) && Array.isArray(body.errors) && body.errors.some((e) => isObject(e) && e.code === 'MCPX_UPSTREAM_UNAUTHORIZED'));
    let code = parse();
    // A call never authorizes by itself: it fails naming `mcpx login s`, which is what a person runs next (a
    // step-up's login asks for the scopes the server challenged), then the command again; twice at most.
    for (let n = 0; auth && n < 2 && unauthorized(code); n++) {
      const login = await mcpx(['login', SERVER]);
      log(`${what} needs authorization: login → exit ${login.code}: ${clip(login.stderr.trim().split('\n').slice(-3).join(' | '), 600)}`);
      if (login.code !== 0) break;
      r = await mcpx([...args, '--json']);
      code = parse();
    }
    if (r.code === 0) log(`${what} → ${clip(JSON.stringify(isObject(body) && 'result' in body ? body.result : body))}`);
    else {
      if (code !== 'MCPX_BAD_TOOL') failures++;
      log(`${what} failed (exit ${r.code}${code ? `, ${String(code)}` : ''}): ${clip(r.stderr.trim(), 400)}`);
    }
    for (const line of r.stderr.split('\n')) if (r.code === 0 && line.trim() !== '') log(`  ${line}`);
    return r.code === 0 ? body : undefined;
  };
  /** One relayed MCP request over the socket (POST /v1/request). */
  const request = async (what: string, method: string, params: Record<string, unknown>): Promise<void> => {
    const r = await api('POST', '/v1/request', { server: SERVER, method, params });
    const ok = r.status === 200 && isObject(r.body) && r.body.ok === true;
    if (!ok) failures++;
    log(`${what}${ok ? '' : ` failed (${r.status})`} → ${clip(JSON.stringify(r.body))}`);
  };

  try {
    const listed = await run('tools', ['tools', SERVER]);
    if (listed === undefined) return 1;
    const tools = (isObject(listed) && Array.isArray(listed.tools) ? listed.tools : []).filter((t): t is Tool => isObject(t) && typeof t.name === 'string');
    log(`${scenario}: tools ${tools.map((t) => t.name).join(', ') || '(none)'}`);
    if (LIST_ONLY.has(scenario)) return 0;

    const calls = contextToolCalls() ?? tools.map((tool) => ({ name: tool.name, arguments: argsFor(tool, tools) }));
    for (const call of calls)
      await run(`${call.name}(${clip(JSON.stringify(call.arguments), 120)})`, ['call', SERVER, call.name, JSON.stringify(call.arguments), ...CONSENT]);

    // Resources and prompts: listed by the catalogue (empty when the server has no such capability).
    const catalog = await api('GET', '/v1/catalog');
    const entry =
      isObject(catalog.body) && Array.isArray(catalog.body.servers) ? catalog.body.servers.find((s) => isObject(s) && s.server === SERVER) : undefined;
    if (!isObject(entry)) {
      log(`catalog: no entry for ${SERVER} (${catalog.status}): ${clip(JSON.stringify(catalog.body))}`);
      return 1;
    }
    const items = (key: string) => (Array.isArray(entry[key]) ? entry[key].filter(isObject) : []);
    for (const r of items('resources')) if (typeof r.uri === 'string') await request(`resources/read ${r.uri}`, 'resources/read', { uri: r.uri });
    for (const p of items('prompts')) {
      if (typeof p.name !== 'string') continue;
      const args = Array.isArray(p.arguments)
        ? Object.fromEntries(
            p.arguments.filter((a) => isObject(a) && a.required === true && typeof a.name === 'string').map((a) => [(a as { name: string }).name, 'example']),
          )
        : {};
      await request(`prompts/get ${p.name}`, 'prompts/get', { name: p.name, arguments: args });
    }
  } finally {
    if (failures > 0 || daemonGone()) log(`daemon output (last lines):\n${daemonOut.split('\n').slice(-30).join('\n')}`);
  }
  return failures === 0 ? 0 : 1;
}

main()
  .catch((err: unknown) => {
    log(`${scenario}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  })
  .then(async (code) => {
    await shutdown();
    process.exit(code);
  });
