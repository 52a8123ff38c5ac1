/**
 * The rig for the OAuth end-to-end tests: the fixtures of test/fixtures/oauth (a real authorization server and
 * MCP servers that accept only its tokens), a temp home with a config naming them, and the BUILT binary — daemons
 * started in the foreground, `mcpx …` runs with BROWSER set to the headless Chromium script. Every CLI output,
 * daemon log line and secret the authorization server saw or issued is kept, so a test can prove that no secret
 * ever showed anywhere but credentials.json.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, readJson, until, type RunResult } from '../cli/helpers.js';
import { freePort } from '../serve/clients.js';
import { tempDir } from '../support/real.js';
import {
  browserCommand,
  CHROMIUM_BROWSER,
  readSecretsLog,
  startAuthorizationServer,
  startProtectedMcp,
  type AuthorizationServer,
  type AuthorizationServerOptions,
  type ProtectedMcp,
} from '../fixtures/oauth/index.js';

/** What `<state>/credentials.json` holds (src/auth/credential-store.ts), as the tests read it. */
export interface StoredRecord {
  kind: 'client' | 'tokens';
  issuer: string;
  clientId?: string;
  clientSecret?: string;
  scope?: string;
  server?: string;
  accessToken?: string;
  refreshToken?: string;
  expiresAt?: number;
  issuedAt?: number;
  generation?: number;
  [k: string]: unknown;
}

export interface RigOptions extends AuthorizationServerOptions {
  /** Protected MCP servers to start (one per name); each becomes an HTTP server entry of the config. */
  servers: string[];
  /** Extra keys per server entry (`oauth`); a name not in `servers` is an entry of its own (with its `url`). */
  entries?: (mcp: Record<string, ProtectedMcp>, as: AuthorizationServer) => Promise<Record<string, Record<string, unknown>>>;
}

export class OAuthRig {
  /** Every `mcpx …` run and its output, for the secret sweep. */
  readonly runs: Array<{ args: string[] } & RunResult> = [];
  /** Every daemon started (their logs, for the secret sweep). */
  readonly daemons: ForegroundDaemon[] = [];
  /** Anything else a test saw (answers, errors, event streams), for the secret sweep. */
  readonly seen: string[] = [];
  daemon: ForegroundDaemon | undefined;

  private constructor(
    readonly dir: string,
    readonly as: AuthorizationServer,
    readonly mcp: Record<string, ProtectedMcp>,
    /** The environment of the daemon and every CLI run (a test adds its config's `${VAR}`s before the daemon starts). */
    readonly env: NodeJS.ProcessEnv,
    readonly secretsLog: string,
    readonly port: number,
    private readonly removeDir: () => Promise<void>,
  ) {}

  get state(): string {
    return join(this.dir, 'state');
  }
  get socket(): string {
    return join(this.state, 'daemon.sock');
  }
  /** The daemon's /mcp on loopback TCP. */
  get mcpUrl(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }
  get daemonToken(): string {
    return readJson(join(this.state, 'daemon.json')).token as string;
  }

  static async start(o: RigOptions): Promise<OAuthRig> {
    const dir = await tempDir('mcpx-oauth-e2e-');
    const secretsLog = join(dir.path, 'as-secrets.jsonl');
    const as = await startAuthorizationServer({ ...o, secretsLog });
    const mcp: Record<string, ProtectedMcp> = {};
    try {
      await Promise.all(o.servers.map(async (name) => (mcp[name] = await startProtectedMcp(as.issuer))));
      const extra = (await o.entries?.(mcp, as)) ?? {};
      // A name without an MCP server of its own gives its `url` in `entries`.
      const names = [...new Set([...o.servers, ...Object.keys(extra)])];
      const mcpServers = Object.fromEntries(names.map((name) => [name, { ...(mcp[name] ? { url: mcp[name].url } : {}), ...extra[name] }]));
      const config = join(dir.path, 'mcpx.json');
      writeFileSync(config, `${JSON.stringify({ mcpServers }, null, 2)}\n`);
      const port = await freePort();
      const env = cleanEnv(dir.path, {
        MCPX_STATE_DIR: join(dir.path, 'state'),
        MCPX_CONFIG: config,
        MCPX_DAEMON_PORT: String(port),
        MCPX_LOG_LEVEL: 'debug',
        BROWSER: browserCommand(CHROMIUM_BROWSER),
      });
      return new OAuthRig(dir.path, as, mcp, env, secretsLog, port, dir.remove);
    } catch (err) {
      await Promise.all(Object.values(mcp).map((m) => m.stop()));
      await as.stop();
      await dir.remove();
      throw err;
    }
  }

  async startDaemon(): Promise<ForegroundDaemon> {
    const d = await ForegroundDaemon.start(this.socket, [], { env: this.env });
    this.daemons.push(d);
    this.daemon = d;
    await until(() => existsSync(join(this.state, 'daemon.json')), 10_000, 'daemon.json');
    return d;
  }

  /** Every /v1/events event of the daemons so far (their raw text goes to the sweep too). */
  readonly events: Array<{ type: string; data: any }> = [];
  private readonly watchers: Array<() => Promise<void>> = [];

  /** Streams the running daemon's /v1/events into `events` until it stops. */
  async watchEvents(): Promise<void> {
    const client = new Client('http://localhost', { socketPath: this.socket });
    const ac = new AbortController();
    const res = await client.request({ path: '/v1/events', method: 'GET', signal: ac.signal });
    const reading = (async () => {
      let buffer = '';
      try {
        for await (const chunk of res.body) {
          const text = Buffer.from(chunk as Uint8Array).toString('utf8');
          this.seen.push(text);
          buffer += text;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const type = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (type && data) this.events.push({ type, data: JSON.parse(data) });
          }
        }
      } catch {
        // aborted, or the daemon stopped
      }
    })();
    this.watchers.push(async () => {
      ac.abort();
      await reading;
      await client.destroy();
    });
  }

  async stopDaemon(): Promise<void> {
    const d = this.daemon;
    this.daemon = undefined;
    for (const stop of this.watchers.splice(0)) await stop();
    const exit = await d?.stop();
    if (exit && exit.code !== 0) throw new Error(`the daemon exited ${exit.code} (${exit.signal}): ${d!.stderr}`);
  }

  /** `mcpx …`, kept for the sweep. `browser: false` runs it without BROWSER (no re-authorization in place). */
  async mcpx(args: string[], o: { browser?: boolean; timeoutMs?: number } = {}): Promise<RunResult> {
    const env: NodeJS.ProcessEnv = { ...this.env };
    if (o.browser === false) delete env['BROWSER'];
    const r = await mcpx(args, { env, timeoutMs: o.timeoutMs ?? 60_000 });
    this.runs.push({ args, ...r });
    return r;
  }

  /** A /v1 request on the daemon's socket, its answer kept for the sweep. */
  async api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
    const r = await api(this.socket, method, path, body);
    this.seen.push(r.text);
    return r;
  }

  /** The credential store's records. */
  credentials(): StoredRecord[] {
    const file = join(this.state, 'credentials.json');
    if (!existsSync(file)) return [];
    return Object.values((readJson(file) as { servers: Record<string, StoredRecord> }).servers);
  }

  tokens(server: string): StoredRecord | undefined {
    return this.credentials().find((r) => r.kind === 'tokens' && r.server === this.mcp[server]!.url);
  }

  client(): StoredRecord | undefined {
    return this.credentials().find((r) => r.kind === 'client' && r.issuer === this.as.issuer);
  }

  /** Every secret value known so far (value → kind): what the authorization server saw or issued, and what the store holds. */
  private readonly known = new Map<string, string>();
  harvest(): Map<string, string> {
    for (const s of readSecretsLog(this.secretsLog)) if (!this.known.has(s.value)) this.known.set(s.value, s.kind);
    const note = (v: unknown, kind: string) => typeof v === 'string' && !this.known.has(v) && this.known.set(v, kind);
    for (const r of this.credentials()) {
      note(r.accessToken, 'access_token');
      note(r.refreshToken, 'refresh_token');
      note(r.clientSecret, 'client_secret');
      note((r['client'] as { clientSecret?: string } | undefined)?.clientSecret, 'client_secret');
    }
    return this.known;
  }

  /** Every file of the state folder but credentials.json, with its text. */
  stateFiles(): Array<{ file: string; text: string }> {
    const out: Array<{ file: string; text: string }> = [];
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const p = join(d, name);
        const st = statSync(p);
        if (st.isDirectory()) walk(p);
        else if (st.isFile() && p !== join(this.state, 'credentials.json')) out.push({ file: p, text: readFileSync(p, 'latin1') });
      }
    };
    if (existsSync(this.state)) walk(this.state);
    return out;
  }

  async stop(): Promise<void> {
    for (const stop of this.watchers.splice(0)) await stop();
    await killAll();
    await Promise.all(Object.values(this.mcp).map((m) => m.stop()));
    await this.as.stop();
    await this.removeDir();
  }
}

/** The text of a tool result's content. */
export function toolText(result: { content?: Array<{ type: string; text?: string }> }): string {
  return (result.content ?? []).map((c) => c.text ?? '').join('');
}
