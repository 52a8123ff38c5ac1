/**
 * Issue 37 item 2: the authorization URL is checked before anyone opens it. A hostile MCP server and
 * authorization server on loopback (one node:http server here) whose metadata names an `authorization_endpoint`
 * of `file:///etc/passwd`, `x-evil-scheme://run?cmd=id`, plain `http://` on a non-loopback host, and — through
 * `oauth.authServerMetadataUrl`, which the SDK's own URL check never sees — `javascript:…`. `mcpx login` (the
 * built binary, BROWSER a recording script) fails with MCPX_OAUTH_FAILED naming the scheme and host, and the
 * opener never runs. A loopback `http:` endpoint (the control) does reach the opener, as a page.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';

/** Per server entry: the authorization endpoint its authorization server advertises, and how it is found. */
const CASES = {
  file: { endpoint: 'file:///etc/passwd', viaConfig: false, scheme: 'file:', host: 'none' },
  scheme: { endpoint: 'x-evil-scheme://run?cmd=id', viaConfig: false, scheme: 'x-evil-scheme:', host: 'run' },
  plain: { endpoint: 'http://evil.example/authorize', viaConfig: false, scheme: 'http:', host: 'evil.example' },
  js: { endpoint: 'javascript:fetch(`//evil.example`)', viaConfig: true, scheme: 'javascript:', host: 'none' },
  // The control: a loopback authorization server over plain http is allowed.
  loopback: { endpoint: 'LOOPBACK', viaConfig: false, scheme: 'http:', host: '127.0.0.1' },
} as const;
type Case = keyof typeof CASES;

const RECORDER = `
import { appendFileSync, readFileSync } from 'node:fs';
appendFileSync(process.env.RECORD_FILE, JSON.stringify(readFileSync('/proc/self/cmdline', 'utf8').split('\\0').filter(Boolean)) + '\\n');
`;

describe('an authorization URL that is not https (or loopback http) is never opened (issue 37)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let hostile: Server;
  let origin: string;
  let recordFile: string;

  const answer = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    const name = (Object.keys(CASES) as Case[]).find((c) => path.split('/').includes(c));
    if (!name) return answer(res, 404, {});
    const issuer = `${origin}/${name}`;
    const endpoint = CASES[name].endpoint === 'LOOPBACK' ? `${origin}/${name}/authorize` : CASES[name].endpoint;
    if (req.method === 'POST' && path === `/${name}/mcp`) {
      req.resume();
      return answer(
        res,
        401,
        { error: 'unauthorized' },
        {
          'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/${name}/mcp", scope="mcp:tools"`,
        },
      );
    }
    if (path === `/.well-known/oauth-protected-resource/${name}/mcp`)
      return answer(res, 200, { resource: `${origin}/${name}/mcp`, authorization_servers: [issuer], scopes_supported: ['mcp:tools'] });
    if (path.startsWith('/.well-known/') || path === `/meta/${name}`)
      return answer(res, 200, {
        issuer,
        authorization_endpoint: endpoint,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
    return answer(res, 404, {});
  };

  beforeAll(async () => {
    dir = await tempDir('mcpx-hostile-as-');
    hostile = createServer(handle);
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(hostile.address() as { port: number }).port}`;
    const mcpServers = Object.fromEntries(
      (Object.keys(CASES) as Case[]).map((name) => [
        name,
        {
          type: 'http',
          url: `${origin}/${name}/mcp`,
          // A configured client: no registration is needed to reach the authorization URL.
          oauth: { clientId: `mcpx-${name}`, ...(CASES[name].viaConfig ? { authServerMetadataUrl: `${origin}/meta/${name}` } : {}) },
        },
      ]),
    );
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(config, JSON.stringify({ mcpServers }, null, 2));
    recordFile = join(dir.path, 'opener.jsonl');
    const recorder = join(dir.path, 'recording-browser.mjs');
    writeFileSync(recorder, RECORDER);
    const state = join(dir.path, 'state');
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, BROWSER: `${process.execPath} ${recorder}`, RECORD_FILE: recordFile });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);

  afterAll(async () => {
    await killAll();
    hostile?.closeAllConnections();
    await new Promise((resolve) => hostile?.close(resolve));
    await dir?.remove();
  });

  const opened = (): string[][] =>
    existsSync(recordFile)
      ? readFileSync(recordFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as string[])
      : [];

  for (const name of ['file', 'scheme', 'plain', 'js'] as const) {
    const c = CASES[name];
    it(`${c.endpoint}${c.viaConfig ? ' (through oauth.authServerMetadataUrl)' : ''}: refused, naming scheme ${c.scheme} and host ${c.host}; the opener never runs`, async () => {
      const before = opened().length;
      const r = await mcpx(['login', name, '--json'], { env, timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(1);
      const out = JSON.parse(r.stdout) as { status: string; error: { code: string; message: string } };
      expect(out).toMatchObject({ server: name, status: 'failed', error: { code: 'MCPX_OAUTH_FAILED' } });
      expect(out.error.message).toContain(`scheme "${c.scheme}"`);
      expect(out.error.message).toContain(c.host === 'none' ? 'host none' : `host "${c.host}"`);
      expect(r.stderr).toContain('authorization address is refused');
      expect(opened().length).toBe(before);
      // The daemon holds no login for it either.
      const view = await mcpx(['auth', name, '--json'], { env });
      expect(JSON.parse(view.stdout).servers[0].state).not.toBe('authorized');
    }, 90_000);
  }

  it('a loopback http authorization server (the control) reaches the opener, as a 0600 page forwarding to it', async () => {
    const before = opened().length;
    // Left waiting (nobody signs in), then cancelled with Ctrl-C once the opener ran.
    const child = spawn(process.execPath, [MCPX, 'login', 'loopback'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    let page: string;
    try {
      await until(() => opened().length > before, 60_000, 'the opener');
      const handed = opened().at(-1)!.at(-1)!;
      expect(handed).toMatch(/^file:\/\//);
      page = fileURLToPath(handed);
      expect(statSync(page).mode & 0o777).toBe(0o600);
      const target = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(readFileSync(page, 'utf8'))![1]!.replace(/&amp;/g, '&');
      expect(target.startsWith(`${origin}/loopback/authorize?`)).toBe(true);
    } finally {
      child.kill('SIGINT');
    }
    const code = await closed;
    expect(code, stderr).toBe(130);
    // Ctrl-C cancelled the login and removed its page.
    expect(existsSync(page)).toBe(false);
  }, 90_000);
});
