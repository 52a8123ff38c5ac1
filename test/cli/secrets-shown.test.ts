/**
 * Issue 12: what came from `env` (whatever the variable's name), `headers`, a URL's credentials (a user
 * name alone too) or a `${VAR}` expansion is a secret, and shows nowhere: not in `mcpx servers`/`config`,
 * `/v1/servers`, `/v1/config`, `/v1/events`, the page's state, the daemon log, `mcpx call`, `/v1/call`
 * answers (a tool that echoes its env and argv, a crash that quotes them on stderr), an ask's question,
 * `mcpx tools` or the catalogue file. Real values, through the built binary, against a real stdio
 * fixture and a real HTTP fixture.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from './helpers.js';

const DB_PASSWORD = 'hunter2-secret';
const DATABASE_URL = `postgres://u:${DB_PASSWORD}@db.example:5432/app`;
const GH = 'ghp_Zx81SecretGh0000';
const ARG_SECRET = 'argv-s3cret-Qx81';
const URL_USER = 'tok3n-secret';
const SECRETS = [DB_PASSWORD, GH, ARG_SECRET, URL_USER];

const leaked = (text: string): string[] => SECRETS.filter((s) => text.includes(s));

/** Reads the first `ms` of an SSE stream over the socket. */
async function sse(socket: string, path: string, until: (text: string) => boolean, ms = 10_000): Promise<string> {
  const client = new Client('http://localhost', { socketPath: socket });
  const ac = new AbortController();
  let text = '';
  const timer = setTimeout(() => ac.abort(), ms);
  try {
    const res = await client.request({ path, method: 'GET', signal: ac.signal });
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (until(text)) break;
    }
  } catch {
    // aborted: what came so far
  } finally {
    clearTimeout(timer);
    ac.abort();
    await client.destroy();
  }
  return text;
}

describe('secrets are shown nowhere (issue 12)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let http: HttpFixture;
  let env: NodeJS.ProcessEnv;
  let socket: string;
  let state: string;
  let daemon: ForegroundDaemon;

  beforeAll(async () => {
    dir = await tempDir('mcpx-secrets-shown-');
    state = join(dir.path, 'state');
    socket = join(state, 'daemon.sock');
    http = await startHttpFixture('v2-dual');
    const cmd = fixtureCommand('secrets-echo');
    const config = join(dir.path, 'mcpx.json');
    const url = new URL(http.url);
    url.username = URL_USER;
    const mcpServers = {
      echo: { command: cmd.command, args: [...cmd.args, '--token=${MCPX_TEST_ARG}'], env: { DATABASE_URL, GH }, mcpx: { startTimeout: '20s' } },
      web: { url: url.href },
    };
    writeFileSync(config, JSON.stringify({ mcpServers }, null, 2));
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_TEST_ARG: ARG_SECRET, MCPX_LOG_LEVEL: 'debug' });
    daemon = await ForegroundDaemon.start(socket, [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await http?.stop();
    await dir?.remove();
  });

  it('the config views keep key names, host and the fact a value is set, and no secret', async () => {
    for (const args of [['servers', '--json'], ['config', '--json'], ['servers'], ['config']]) {
      const r = await mcpx(args, { env });
      expect(r.code, r.stderr).toBe(0);
      expect(leaked(r.stdout + r.stderr), `mcpx ${args.join(' ')}: ${r.stdout}`).toEqual([]);
    }
    const view = JSON.parse((await mcpx(['servers', '--json'], { env })).stdout) as {
      servers: Array<{ server: string; args?: string[]; env?: Record<string, string>; url?: string }>;
    };
    const echo = view.servers.find((s) => s.server === 'echo')!;
    expect(echo.env).toEqual({ DATABASE_URL: '<redacted>', GH: '<redacted>' });
    expect(echo.args?.at(-1)).toBe('--token=<redacted>');
    expect(view.servers.find((s) => s.server === 'web')!.url).toBe(`http://<redacted>@127.0.0.1:${http.port}/mcp`);
    for (const path of ['/v1/servers', '/v1/config']) {
      const r = await api(socket, 'GET', path);
      expect(r.status).toBe(200);
      expect(leaked(r.text), path).toEqual([]);
    }
  });

  it('calls, asks, a crash quoting its environment, tools and the catalogue: no secret', async () => {
    const events = sse(socket, '/v1/events', (t) => t.includes('"web"') && t.includes('"echo"') && t.split('\n\n').length > 12, 15_000);
    // The tool gives back its env and argv: every secret in it.
    const call = await mcpx(['call', 'echo', 'env'], { env });
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain('"DATABASE_URL":"<redacted>"');
    expect(leaked(call.stdout + call.stderr)).toEqual([]);
    const json = await mcpx(['call', 'echo', 'env', '--json'], { env });
    expect(leaked(json.stdout)).toEqual([]);
    const v1 = await api(socket, 'POST', '/v1/call', { server: 'echo', tool: 'env', args: {} });
    expect(v1.body.ok).toBe(true);
    expect(leaked(v1.text)).toEqual([]);
    // An ask that quotes GH: the question (mcpx call's note) and the ask view.
    const ask = await mcpx(['call', 'echo', 'ask_env'], { env });
    expect(ask.stderr).toContain('Is <redacted> yours?');
    expect(leaked(ask.stdout + ask.stderr)).toEqual([]);
    const started = await api(socket, 'POST', '/v1/ask', { server: 'echo', tool: 'ask_env', args: {}, capabilities: { elicitation: { form: {} } } });
    let seen = '';
    await until(
      async () => {
        const v = await api(socket, 'GET', `/v1/ask/${encodeURIComponent(started.body.id)}?waitMs=1000`);
        seen = v.text;
        return (v.body.questions ?? []).length > 0;
      },
      15_000,
      'the question',
    );
    expect(seen).toContain('Is <redacted> yours?');
    expect(leaked(seen)).toEqual([]);
    await api(socket, 'POST', `/v1/ask/${encodeURIComponent(started.body.id)}/abandon`, {});
    // A crash that quotes its environment on stderr: the answer's stderr tail, mcpx call's error.
    const crash = await api(socket, 'POST', '/v1/call', { server: 'echo', tool: 'crash', args: {} });
    expect(crash.body.ok).toBe(false);
    expect(crash.text).toContain('connecting DATABASE_URL=<redacted> GH=<redacted>');
    expect(leaked(crash.text)).toEqual([]);
    // The HTTP upstream reached through a URL that carries a token as its user name.
    const web = await mcpx(['call', 'web', 'echo', '{"text":"hi"}'], { env });
    expect(web.code, web.stderr).toBe(0);
    expect(leaked(web.stdout + web.stderr)).toEqual([]);
    for (const args of [['tools'], ['tools', '--json']]) {
      const r = await mcpx(args, { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Reads <redacted>');
      expect(leaked(r.stdout + r.stderr), `mcpx ${args.join(' ')}`).toEqual([]);
    }
    await until(
      () => {
        try {
          return readFileSync(join(state, 'tool-catalog.json'), 'utf8').includes('Reads');
        } catch {
          return false;
        }
      },
      10_000,
      'the catalogue',
    );
    expect(leaked(readFileSync(join(state, 'tool-catalog.json'), 'utf8'))).toEqual([]);
    const stream = await events;
    expect(stream).toContain('event:');
    expect(leaked(stream)).toEqual([]);
  }, 60_000);

  it("the page's state and the daemon log: no secret", async () => {
    const ui = await mcpx(['ui', '--json'], { env });
    expect(ui.code, ui.stderr).toBe(0);
    const login = JSON.parse(ui.stdout) as { url: string; page: string };
    const res = await fetch(login.url, { redirect: 'manual' });
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const st = await fetch(new URL('/ui/api/state', login.page), { headers: { cookie } });
    expect(st.status).toBe(200);
    const text = await st.text();
    expect(text).toContain('"echo"');
    expect(leaked(text)).toEqual([]);
    const log = daemon.stdout + daemon.stderr;
    expect(log).toContain('spawn details');
    expect(log).toContain('connecting DATABASE_URL=');
    expect(leaked(log)).toEqual([]);
  });
});
