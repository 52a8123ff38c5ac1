import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { McpxError } from '../../src/errors.js';
import type { ServerDefinition } from '../../src/upstream/definition.js';
import { eraCacheKey, processDefinition } from '../../src/upstream/process-key.js';

const stdio = {
  command: 'npx',
  args: ['-y', '@acme/mcp-server', '--root', '/srv'],
  env: { TOKEN: 'secret', DEBUG: '1' },
  cwd: '/srv',
};

const http = {
  url: 'https://mcp.example.com/mcp',
  headers: { Authorization: 'Bearer x', 'X-Tenant': 't1' },
};

/** The same object with its keys (at every level) in reverse order. */
function reversed<T>(v: T): T {
  if (Array.isArray(v)) return v.map(reversed) as T;
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, reversed(x)]),
    ) as T;
  return v;
}

describe('processDefinition', () => {
  it('stdio: picks only the process fields and fills the defaults', () => {
    expect(processDefinition({ command: 'srv' })).toEqual({ transport: 'stdio', command: 'srv', args: [], env: {}, cwd: null });
    expect(processDefinition({ ...stdio, protocol: 'legacy', mcpx: { scope: 'global' }, description: 'x' })).toEqual({
      transport: 'stdio',
      ...stdio,
    });
  });

  it('http: picks only the process fields and fills the defaults', () => {
    expect(processDefinition({ url: 'http://h/mcp' })).toEqual({ transport: 'streamable-http', url: 'http://h/mcp', headers: {} });
    expect(processDefinition({ ...http, transport: 'sse', protocol: 'follow' })).toEqual({ transport: 'sse', ...http });
  });

  it('copies, so later changes to the definition do not leak in', () => {
    const def = { command: 'srv', args: ['a'], env: { A: '1' } };
    const p = processDefinition(def);
    def.args.push('b');
    def.env.A = '2';
    expect(p).toMatchObject({ args: ['a'], env: { A: '1' } });
  });

  it('refuses a definition with neither command nor url', () => {
    expect(() => processDefinition({})).toThrow(McpxError);
    expect(() => processDefinition({ transport: 'stdio', url: 'http://x' })).toThrow(/needs a `command`/);
    let caught: unknown;
    try {
      processDefinition({ transport: 'streamable-http' });
    } catch (err) {
      caught = err;
    }
    expect((caught as McpxError).code).toBe('MCPX_BAD_CONFIG');
  });

  it('accepts the project ServerDefinition type', () => {
    const defs: ServerDefinition[] = [{ command: 'a' }, { url: 'http://b' }];
    expect(defs.map(eraCacheKey)).toHaveLength(2);
  });
});

describe('eraCacheKey', () => {
  it('is the sha256 hex of the sorted-key JSON', () => {
    const json = '{"args":[],"command":"srv","cwd":null,"env":{},"transport":"stdio"}';
    expect(eraCacheKey({ command: 'srv' })).toBe(createHash('sha256').update(json).digest('hex'));
    expect(eraCacheKey(stdio)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is stable across key order', () => {
    expect(eraCacheKey(reversed(stdio))).toBe(eraCacheKey(stdio));
    expect(eraCacheKey(reversed(http))).toBe(eraCacheKey(http));
    expect(eraCacheKey({ command: 'srv', env: { B: '2', A: '1' } })).toBe(eraCacheKey({ env: { A: '1', B: '2' }, command: 'srv' }));
  });

  it('treats omitted args/env/cwd/headers/transport as their empty values', () => {
    expect(eraCacheKey({ command: 'srv' })).toBe(eraCacheKey({ command: 'srv', args: [], env: {}, transport: 'stdio' }));
    expect(eraCacheKey({ url: 'http://h' })).toBe(eraCacheKey({ url: 'http://h', headers: {}, transport: 'streamable-http' }));
  });

  it('is unaffected by protocol, mcpx leasing knobs, scope and other keys', () => {
    const base = eraCacheKey(stdio);
    for (const extra of [
      { protocol: 'force-initialize' },
      { protocol: 'follow' },
      { mcpx: { scope: 'per-caller', max: 4, idleTimeoutMs: 1000 } },
      { mcpx: { scope: 'global' } },
      { scope: 'session', disabled: true, description: 'x', timeoutMs: 5 },
    ]) {
      expect(eraCacheKey({ ...stdio, ...extra })).toBe(base);
    }
    expect(eraCacheKey({ ...http, protocol: 'legacy', mcpx: { scope: 'global' } })).toBe(eraCacheKey(http));
  });

  it('changes with each of command, args, env, cwd', () => {
    const base = eraCacheKey(stdio);
    const changed = [
      { ...stdio, command: 'node' },
      { ...stdio, args: [...stdio.args, '--verbose'] },
      { ...stdio, args: [...stdio.args].reverse() },
      { ...stdio, args: [] },
      { ...stdio, env: { ...stdio.env, TOKEN: 'other' } },
      { ...stdio, env: { ...stdio.env, EXTRA: '' } },
      { ...stdio, env: {} },
      { ...stdio, cwd: '/tmp' },
      { command: stdio.command, args: stdio.args, env: stdio.env },
    ].map(eraCacheKey);
    expect(new Set([base, ...changed]).size).toBe(changed.length + 1);
  });

  it('changes with each of url, headers, transport', () => {
    const base = eraCacheKey(http);
    const changed = [
      { ...http, url: 'https://mcp.example.com/mcp/' },
      { ...http, headers: { ...http.headers, Authorization: 'Bearer y' } },
      { ...http, headers: { ...http.headers, 'X-Extra': '1' } },
      { ...http, headers: {} },
      { ...http, transport: 'sse' },
    ].map(eraCacheKey);
    expect(new Set([base, ...changed]).size).toBe(changed.length + 1);
  });

  it('never confuses a stdio and an http definition', () => {
    expect(eraCacheKey({ command: 'http://h' })).not.toBe(eraCacheKey({ url: 'http://h' }));
  });
});
