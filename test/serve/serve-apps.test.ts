/**
 * MCP Apps through the aggregate entry (`mcpx serve` and `/mcp`), with the registry's example servers:
 * basic-vanillajs twice (two servers pointing at the same `ui://` URI), server-pdf (app-only tools), and a
 * fixture that lists its UI tool only for clients declaring the MCP Apps extension (once per upstream era).
 * Checked: colliding `ui://` URIs made distinct on every surface and read from their own server, the
 * others byte-identical; apps' calls by their server's own tool names; extensions declared both ways.
 */
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, MCPX } from '../cli/helpers.js';
import type { ServerEntry } from '../server/helpers.js';
import { exampleServers, GATED_SERVER, nodeServer, UI_CAPS, UI_EXTENSION, UI_MIME, writePdf } from '../support/apps.js';
import { tempDir } from '../support/real.js';
import { startServeDaemon, textOf, type ServeDaemon } from './clients.js';

const INFO = { name: 'apps-host', version: '1.0.0' };
const BASIC_URI = 'ui://get-time/mcp-app.html';
const PDF_URI = 'ui://pdf-viewer/mcp-app.html';
const COLORS = { 'com.example/colors': { palette: 'warm' } };

type Caps = Record<string, unknown>;
type Tool = { name: string; _meta?: Record<string, any> };

describe('MCP Apps through mcpx serve and /mcp', () => {
  let d: ServeDaemon;
  let pdfDir: { path: string; remove: () => Promise<void> };
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    pdfDir = await tempDir('mcpx-apps-pdf-');
    const servers = {
      ...exampleServers(writePdf(join(pdfDir.path, 'paper.pdf'))),
      gated: nodeServer(GATED_SERVER),
      gatedlegacy: nodeServer(GATED_SERVER, [], { protocol: 'prefer-initialize' }),
    };
    d = await startServeDaemon('mcpx-serve-apps-', servers as unknown as Record<string, ServerEntry>);
  }, 60_000);
  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await killAll();
    await d?.remove();
    await pdfDir?.remove();
  });

  /** A 2026-07-28 caller over `mcpx serve`. */
  async function modern(capabilities: Caps = UI_CAPS, via: 'stdio' | 'http' = 'stdio'): Promise<ClientV2> {
    const c = new ClientV2(INFO, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
    if (via === 'stdio')
      await c.connect(new StdioV2({ command: process.execPath, args: [MCPX, 'serve'], env: d.env as Record<string, string>, stderr: 'pipe' }));
    else await c.connect(new HttpV2(new URL(d.url), { requestInit: { headers: { authorization: `Bearer ${d.token}` } } } as never));
    open.push(c);
    return c;
  }

  /** A 2025-11-25 caller over `mcpx serve`. */
  async function legacy(capabilities: Caps = UI_CAPS): Promise<ClientV1> {
    const c = new ClientV1(INFO, { capabilities } as never);
    await c.connect(new StdioV1({ command: process.execPath, args: [MCPX, 'serve'], env: d.env as Record<string, string>, stderr: 'pipe' }));
    open.push(c);
    return c;
  }

  const byName = (tools: Tool[]) => new Map(tools.map((t) => [t.name, t]));

  it('makes colliding ui:// URIs distinct on every surface, keeps the others byte-identical, and reads each from its own server', async () => {
    const c = await modern();
    const t = byName((await c.listTools()).tools as Tool[]);
    const expected: Record<string, string> = {
      'basic__get-time': 'ui://basic+get-time/mcp-app.html',
      'basic2__get-time': 'ui://basic2+get-time/mcp-app.html',
      'gated__show-ui': 'ui://gated+get-time/mcp-app.html',
      'gatedlegacy__show-ui': 'ui://gatedlegacy+get-time/mcp-app.html',
    };
    for (const [name, uri] of Object.entries(expected)) {
      // Both key forms, the scheme kept exactly `ui`.
      expect(t.get(name)?._meta?.['ui']?.['resourceUri'], name).toBe(uri);
      expect(t.get(name)?._meta?.['ui/resourceUri'], name).toBe(uri);
    }
    // Not colliding: untouched, visibility kept.
    expect(t.get('pdf__display_pdf')?._meta?.['ui']?.['resourceUri']).toBe(PDF_URI);
    expect(t.get('pdf__read_pdf_bytes')?._meta?.['ui']?.['visibility']).toEqual(['app']);

    const listed = (await c.listResources()).resources.map((r) => r.uri);
    for (const uri of Object.values(expected).filter((u) => !u.includes('gated'))) expect(listed).toContain(uri);
    expect(listed).toContain('ui://gated+get-time/mcp-app.html');
    expect(listed).toContain(PDF_URI);
    expect(listed).not.toContain(BASIC_URI);

    // Each read reaches its own server (the fixture's HTML is its own), under the URI the caller used.
    const gated = await c.readResource({ uri: 'ui://gated+get-time/mcp-app.html' });
    expect(gated.contents[0]).toMatchObject({ uri: 'ui://gated+get-time/mcp-app.html', text: '<html>gated app</html>', mimeType: UI_MIME });
    const basic = await c.readResource({ uri: 'ui://basic2+get-time/mcp-app.html' });
    expect(basic.contents[0]?.uri).toBe('ui://basic2+get-time/mcp-app.html');
    expect(basic.contents[0]?.mimeType).toBe(UI_MIME);
    expect(String((basic.contents[0] as { text?: string }).text)).toContain('get-time-btn');
    // A non-colliding URI reads as it is.
    const pdfApp = await c.readResource({ uri: PDF_URI });
    expect(pdfApp.contents[0]?.uri).toBe(PDF_URI);

    // Call results: _meta (both keys), resource_link and embedded resource, rewritten once.
    const shown = await c.callTool({ name: 'gatedlegacy__show-ui', arguments: {} });
    expect(shown._meta).toMatchObject({
      ui: { resourceUri: 'ui://gatedlegacy+get-time/mcp-app.html' },
      'ui/resourceUri': 'ui://gatedlegacy+get-time/mcp-app.html',
    });
    const content = shown.content as Array<Record<string, any>>;
    expect(content.find((b) => b['type'] === 'resource_link')?.['uri']).toBe('ui://gatedlegacy+get-time/mcp-app.html');
    expect(content.find((b) => b['type'] === 'resource')?.['resource']?.['uri']).toBe('ui://gatedlegacy+get-time/mcp-app.html');
  }, 120_000);

  it("routes an app's call by its server's own tool name, and names every candidate when several servers have it", async () => {
    const c = await modern();
    // Unique: pdf's app-only and model tools, by the names the app uses.
    const pdfs = await c.callTool({ name: 'list_pdfs', arguments: {} });
    expect(pdfs.isError).not.toBe(true);
    expect(JSON.stringify(pdfs)).toContain('paper.pdf');
    // Ambiguous: basic and basic2 both have get-time.
    const err = await c.callTool({ name: 'get-time', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain('basic__get-time');
    expect(err?.message).toContain('basic2__get-time');
    // The prefixed names the model uses keep working.
    const time = await c.callTool({ name: 'basic2__get-time', arguments: {} });
    expect(time.isError).not.toBe(true);
    expect(textOf(time as Record<string, any>)).toMatch(/\d{4}-\d{2}-\d{2}T/);
  }, 60_000);

  it('declares the extensions a caller declared and the servers offer, in both eras; app-only tools only for callers that render apps', async () => {
    const withColors = { extensions: { ...UI_CAPS.extensions, ...COLORS } };
    const m = await modern(withColors, 'http');
    expect(m.getServerCapabilities()?.extensions).toEqual({ [UI_EXTENSION]: {}, ...COLORS });
    const l = await legacy(UI_CAPS);
    expect(l.getServerCapabilities()?.['extensions']).toEqual({ [UI_EXTENSION]: {} });
    expect(byName((await l.listTools()).tools as Tool[]).has('pdf__read_pdf_bytes')).toBe(true);
    // A legacy caller's app calls by bare name too.
    expect(JSON.stringify(await l.callTool({ name: 'list_pdfs', arguments: {} }))).toContain('paper.pdf');

    // A caller that declared nothing: no extensions, and no app-only tools offered to its model.
    const plain = await legacy({});
    expect(plain.getServerCapabilities()?.['extensions']).toBeUndefined();
    const plainTools = byName((await plain.listTools()).tools as Tool[]);
    expect(plainTools.has('pdf__display_pdf')).toBe(true);
    expect(plainTools.has('pdf__read_pdf_bytes')).toBe(false);
    const plainModern = await modern({});
    expect(plainModern.getServerCapabilities()?.extensions).toBeUndefined();
    expect(byName((await plainModern.listTools()).tools as Tool[]).has('pdf__poll_pdf_commands')).toBe(false);
  }, 60_000);
});
