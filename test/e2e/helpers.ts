/**
 * The transport matrix the end-to-end suites run against: one upstream of every kind mcpx fronts —
 * stdio (legacy-only, modern-only, dual), Streamable HTTP (SDK v2 modern-only, SDK v2 dual, SDK v1
 * legacy with sessions) and the deprecated HTTP+SSE (found by the probe, and declared `"type": "sse"`) —
 * behind one daemon started from the binary under test (MCPX), with its Unix socket and `/mcp` on a
 * loopback TCP port. Fixtures and clients come from the repository; mcpx is reached only through the binary.
 */
import { join } from 'node:path';
import { killAll } from '../cli/helpers.js';
import { startHttpFixture, type HttpFixture, type HttpFixtureName } from '../fixtures/http/index.js';
import type { FixtureName } from '../fixtures/index.js';
import type { ServerEntry } from '../server/helpers.js';
import { startServeDaemon, type ServeDaemon } from '../serve/clients.js';

export type Era = 'legacy' | 'modern';
export type Transport = 'stdio' | 'streamable-http' | 'sse';

export const REVISION: Record<Era, string> = { legacy: '2025-11-25', modern: '2026-07-28' };

export interface Upstream {
  /** The server name in the config (tools reach MCP clients as `<name>__<tool>`). */
  name: string;
  transport: Transport;
  /** The era the default preference (prefer-discover) reaches: docs/behaviour.md §2. */
  era: Era;
  stdio?: FixtureName;
  http?: HttpFixtureName;
  /** Extra keys of the config entry. */
  entry?: Record<string, unknown>;
}

export const UPSTREAMS: readonly Upstream[] = [
  { name: 'stdio-legacy', transport: 'stdio', era: 'legacy', stdio: 'legacy-v1' },
  { name: 'stdio-modern', transport: 'stdio', era: 'modern', stdio: 'modern-v2' },
  { name: 'stdio-dual', transport: 'stdio', era: 'modern', stdio: 'dual-v2' },
  { name: 'http-modern', transport: 'streamable-http', era: 'modern', http: 'v2-modern' },
  { name: 'http-dual', transport: 'streamable-http', era: 'modern', http: 'v2-dual' },
  { name: 'http-legacy', transport: 'streamable-http', era: 'legacy', http: 'v1-legacy-sessions' },
  // Found by the probe: a POST to /sse is refused (405), so mcpx falls back to HTTP+SSE.
  { name: 'sse', transport: 'sse', era: 'legacy', http: 'v1-sse-legacy' },
  // Declared: reached over HTTP+SSE directly, no probe (its own fixture, so its log shows that).
  { name: 'sse-declared', transport: 'sse', era: 'legacy', http: 'v1-sse-legacy', entry: { type: 'sse' } },
];

export interface Matrix extends ServeDaemon {
  /** The HTTP fixture behind each HTTP upstream, by server name. */
  http: Record<string, HttpFixture>;
  /** The stdio fixture's wire log, by server name. */
  wireLog(name: string): string;
  stop(): Promise<void>;
}

/** Starts every HTTP fixture, then one daemon (TCP on) configured with every upstream. */
export async function startMatrix(prefix: string): Promise<Matrix> {
  const http: Record<string, HttpFixture> = {};
  try {
    await Promise.all(
      UPSTREAMS.filter((u) => u.http).map(async (u) => {
        http[u.name] = await startHttpFixture(u.http!);
      }),
    );
    const servers: Record<string, ServerEntry> = {};
    for (const u of UPSTREAMS) {
      // The extra keys (type) are part of the config format, not of ServerEntry's test shape.
      servers[u.name] = (u.stdio ? { fixture: u.stdio } : { url: http[u.name]!.url, ...u.entry }) as ServerEntry;
    }
    const daemon = await startServeDaemon(prefix, servers);
    return {
      ...daemon,
      http,
      wireLog: (name) => join(daemon.dir, `${name}.wire.log`),
      stop: async () => {
        await killAll();
        await Promise.all(Object.values(http).map((f) => f.stop()));
        await daemon.remove();
      },
    };
  } catch (err) {
    await killAll();
    await Promise.all(Object.values(http).map((f) => f.stop()));
    throw err;
  }
}
