/**
 * Issue 10 #5 and #9: what a config file can do to the daemon's outputs and its maps.
 *
 * - #5: a URL that does not parse (port 99999) with a secret in its query is refused, and the refusal
 *   shows it redacted: in the problem, the `config.error` event, `POST /v1/reload` and the log.
 * - #9: `__proto__` as a server name (or any key) is refused with the config error rules — file,
 *   server and key — instead of silently vanishing (JSON.parse-style parsers turn it into the object's
 *   prototype). Other Object.prototype names (`constructor`) are ordinary server names, end to end.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText, redactUrl } from '../../src/config/config-file.js';
import type { DaemonEvent } from '../../src/core/events.js';
import { fixtureEntry, harness, textOf, type Harness, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';

const SENTINEL = 'sentinel-QyZ8wJ2kq';
const BAD_URL = `http://127.0.0.1:99999/mcp?api_key=${SENTINEL}&x=1`;

describe('#5 an unparsable URL with a secret in its query', () => {
  it('redactUrl blanks secret-named query values and userinfo even when the URL does not parse', () => {
    expect(redactUrl(BAD_URL)).toBe('http://127.0.0.1:99999/mcp?api_key=<redacted>&x=1');
    expect(redactUrl(`http://u:${SENTINEL}@127.0.0.1:99999/mcp`)).toBe('http://<redacted>@127.0.0.1:99999/mcp');
    expect(redactUrl(`http://127.0.0.1:99999/mcp?token=${SENTINEL}#frag`)).toBe('http://127.0.0.1:99999/mcp?token=<redacted>#frag');
    expect(redactUrl(`http://[::1:99999/mcp?Access-Token=${SENTINEL}`)).not.toContain(SENTINEL);
    expect(redactUrl(`http://127.0.0.1:99999/mcp;sig=${SENTINEL}`)).not.toContain(SENTINEL);
  });

  it('the config problem names the server and key, and shows the URL redacted', () => {
    const parsed = parseConfigText(JSON.stringify({ mcpServers: { remote: { url: BAD_URL } } }), '/x/mcpx.json');
    expect(parsed.errors).toHaveLength(1);
    expect(parsed.errors[0]).toMatchObject({ file: '/x/mcpx.json', server: 'remote', key: 'mcpServers.remote.url' });
    expect(parsed.errors[0]!.message).toContain('api_key=<redacted>');
    expect(JSON.stringify(parsed)).not.toContain(SENTINEL);
  });

  describe('through a running controller', () => {
    let dir: { path: string; remove: () => Promise<void> };
    let h: Harness;
    beforeAll(async () => {
      dir = await tempDir('mcpx-badurl-');
      h = await harness(dir.path, { dual: { fixture: 'dual-v2' } });
    });
    afterAll(async () => {
      await h?.close();
      await dir?.remove();
    });

    it('POST /v1/reload, the config.error event and the log never show the secret', async () => {
      const events: DaemonEvent[] = [];
      const off = h.controller.hub.subscribe((e) => events.push(e));
      try {
        writeFileSync(h.file, JSON.stringify({ mcpServers: { dual: fixtureEntry(h.dir, 'dual', { fixture: 'dual-v2' }), remote: { url: BAD_URL } } }));
        const res = await h.app.inject({ method: 'POST', url: '/v1/reload' });
        expect(res.json()).toMatchObject({ ok: false, error: { code: 'MCPX_BAD_CONFIG' } });
        expect(res.body).toContain('api_key=<redacted>');
        const error = events.find((e) => e.type === 'config.error');
        expect(error).toBeDefined();
        expect(JSON.stringify(error)).toContain('api_key=<redacted>');
        expect(JSON.stringify(events)).not.toContain(SENTINEL);
        expect(res.body).not.toContain(SENTINEL);
        expect(h.logs.text).toContain('api_key=<redacted>');
        expect(h.logs.text).not.toContain(SENTINEL);
      } finally {
        off();
      }
    });
  });
});

describe('#9 __proto__ and other Object.prototype names', () => {
  it('a server named __proto__ is refused naming file, server and key (not dropped)', () => {
    const text = `{\n  "mcpServers": {\n    "ok": { "command": "node" },\n    "__proto__": { "command": "node", "args": ["server.mjs"] }\n  }\n}\n`;
    const parsed = parseConfigText(text, '/x/mcpx.json');
    expect(parsed.errors).toEqual([
      expect.objectContaining({ source: 'file', file: '/x/mcpx.json', server: '__proto__', key: 'mcpServers.__proto__', line: 4, column: 5 }),
    ]);
    expect(parsed.errors[0]!.message).toMatch(/^config \/x\/mcpx\.json: mcpServers\.__proto__: .*__proto__/);
    expect(parsed.servers.map((s) => s.name)).toEqual(['ok']);
  });

  it('under VS Code\'s "servers" too, and as a key anywhere else (env, headers, mcpx, settings)', () => {
    // Written as text: a `__proto__` key in a JS object literal would set the prototype instead.
    const text = `{
      "servers": {
        "a": { "command": "node", "env": { "__proto__": "x" } },
        "b": { "url": "http://127.0.0.1:9/mcp", "headers": { "__proto__": "y" } },
        "c": { "command": "node", "mcpx": { "__proto__": {} } },
        "__proto__": { "command": "node" }
      },
      "pool": { "__proto__": 1 }
    }`;
    const parsed = parseConfigText(text, '/x/.vscode/mcp.json');
    const keys = parsed.errors.map((e) => e.key).sort();
    expect(keys).toEqual(['pool.__proto__', 'servers.__proto__', 'servers.a.env.__proto__', 'servers.b.headers.__proto__', 'servers.c.mcpx.__proto__']);
    expect(parsed.errors.find((e) => e.key === 'servers.a.env.__proto__')).toMatchObject({ server: 'a' });
  });

  it('Object.prototype names are not taken for values: type "constructor", ${constructor}', () => {
    const text = JSON.stringify({ mcpServers: { a: { type: 'constructor', command: 'node' }, b: { command: 'node', args: ['${toString}'] } } });
    const parsed = parseConfigText(text, '/x/mcpx.json', { env: {} });
    expect(parsed.errors.map((e) => e.key)).toEqual(['mcpServers.a.type', 'mcpServers.b.args[0]']);
    expect(parsed.errors[1]!.message).toContain('is not set in the environment');
  });

  describe('a server named constructor works end to end (config, registry, views, catalogue)', () => {
    let dir: { path: string; remove: () => Promise<void> };
    let h: Harness;
    beforeAll(async () => {
      dir = await tempDir('mcpx-names-');
      const servers: Record<string, ServerEntry> = Object.fromEntries([
        ['constructor', { fixture: 'dual-v2' }],
        ['toString', { fixture: 'legacy-v1' }],
      ]);
      h = await harness(dir.path, servers);
    });
    afterAll(async () => {
      await h?.close();
      await dir?.remove();
    });

    it('call, servers, tools', async () => {
      const call = await h.app.inject({ method: 'POST', url: '/v1/call', payload: { server: 'constructor', tool: 'echo', args: { text: 'hi' } } });
      expect(textOf(call.json())).toBe('hi era=modern');
      const servers = (await h.app.inject({ method: 'GET', url: '/v1/servers' })).json();
      expect(servers.servers.map((s: { server: string }) => s.server)).toEqual(['constructor', 'toString']);
      const tools = (await h.app.inject({ method: 'GET', url: '/v1/tools' })).json();
      expect(tools.lanes).toEqual({ constructor: 'own', toString: 'own' });
      expect(Object.hasOwn(tools.lanes, 'constructor')).toBe(true);
      expect(tools.tools.map((t: { exposed: string }) => t.exposed)).toContain('toString__echo');
      const unknown = await h.app.inject({ method: 'POST', url: '/v1/call', payload: { server: '__proto__', tool: 'echo', args: {} } });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().error.code).toBe('MCPX_UNKNOWN_SERVER');
    });
  });
});
