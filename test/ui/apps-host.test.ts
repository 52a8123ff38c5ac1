/**
 * MCP Apps rendered for real through mcpx: a host page built on ext-apps' `AppBridge` in headless
 * Chromium (Debian's /usr/bin/chromium), its MCP client an SDK v2 client connected to `mcpx serve`. The
 * apps are the registry's example servers' own HTML: basic-vanillajs's button calls its server's
 * `get-time` by that bare name; server-pdf's viewer reads the PDF through its app-only tools. One browser
 * for the file.
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, MCPX, until } from '../cli/helpers.js';
import { startServeDaemon, type ServeDaemon } from '../serve/clients.js';
import type { ServerEntry } from '../server/helpers.js';
import { exampleServers, ROOT, UI_CAPS, writePdf } from '../support/apps.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.js';
import { tempDir } from '../support/real.js';

/** The host page's address: served by the test (page.route), never fetched from a network. */
const HOST = 'http://mcpx-apps-host.test/';

// What the page's callbacks see, for the type checker.
declare const window: Record<string, any>;
declare const document: any;

/** The host page: each app in a sandboxed iframe, wired to the test's MCP client through `hostRequest`. */
const HOST_PAGE = `<!doctype html><html><body><div id="apps"></div><script src="/bridge.js"></script><script>
window.render = async (id, html, input, result) => {
  const { AppBridge, PostMessageTransport } = McpAppBridge;
  const iframe = document.createElement('iframe');
  iframe.name = id;
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.width = '900px';
  iframe.style.height = '700px';
  document.getElementById('apps').appendChild(iframe);
  const bridge = new AppBridge(null, { name: 'mcpx-test-host', version: '1.0.0' }, { serverTools: {}, serverResources: {}, logging: {}, openLinks: {} });
  bridge.oncalltool = (params) => window.hostRequest(id, 'tools/call', params);
  bridge.onreadresource = (params) => window.hostRequest(id, 'resources/read', params);
  bridge.addEventListener('initialized', () => {
    bridge.sendToolInput({ arguments: input });
    bridge.sendToolResult(result);
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
};
</script></body></html>`;

interface HostCall {
  app: string;
  method: string;
  name?: string;
  ok: boolean;
  error?: string;
}

describe.skipIf(!existsSync(CHROMIUM))('MCP Apps in Chromium through mcpx serve', () => {
  let d: ServeDaemon;
  let pdfDir: { path: string; remove: () => Promise<void> };
  let pdf: string;
  let client: Client;
  let browser: Browser;
  let page: Page;
  const calls: HostCall[] = [];

  beforeAll(async () => {
    pdfDir = await tempDir('mcpx-apps-host-');
    // basic and basic2 collide (URI and tool name); this host's caller sees basic2 and pdf (--servers).
    pdf = writePdf(join(pdfDir.path, 'paper.pdf'), 'hello from mcpx');
    d = await startServeDaemon('mcpx-apps-host-', exampleServers(pdf) as Record<string, ServerEntry>);
    // Every server listed once (as any unfiltered caller would): the ui:// collision is known before this host's filtered caller lists.
    const all = new Client({ name: 'lister', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
    await all.connect(new StdioClientTransport({ command: process.execPath, args: [MCPX, 'serve'], env: d.env as Record<string, string>, stderr: 'pipe' }));
    await all.listTools();
    await all.close();
    client = new Client({ name: 'mcpx-test-host', version: '1.0.0' }, { capabilities: UI_CAPS, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MCPX, 'serve', '--servers', 'basic2,pdf'],
        env: d.env as Record<string, string>,
        stderr: 'pipe',
      }),
    );
    const bundle = await build({
      stdin: { contents: "export { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';", resolveDir: ROOT, loader: 'ts' },
      bundle: true,
      format: 'iife',
      globalName: 'McpAppBridge',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await browser.newPage();
    await page.route(`${HOST}**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/bridge.js') return route.fulfill({ contentType: 'text/javascript', body: bundle.outputFiles[0]!.text });
      return route.fulfill({ contentType: 'text/html', body: HOST_PAGE });
    });
    // The bridge's tools/call and resources/read, relayed to mcpx as the app sent them.
    await page.exposeFunction('hostRequest', async (app: string, method: string, params: Record<string, unknown>) => {
      const name = typeof params['name'] === 'string' ? params['name'] : undefined;
      try {
        const result = method === 'tools/call' ? await client.callTool(params as never) : await client.readResource(params as never);
        calls.push({ app, method, ...(name ? { name } : {}), ok: (result as { isError?: boolean }).isError !== true });
        return result;
      } catch (err) {
        calls.push({ app, method, ...(name ? { name } : {}), ok: false, error: err instanceof Error ? err.message : String(err) });
        throw err;
      }
    });
    await page.goto(HOST);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await client?.close().catch(() => undefined);
    await killAll();
    await d?.remove();
    await pdfDir?.remove();
  });

  /** What a host does for a tool with an app: call it, read its `ui://` resource, render both. */
  async function open(id: string, tool: string, args: Record<string, unknown>): Promise<{ uri: string; result: Record<string, unknown>; frame: Frame }> {
    const listed = (await client.listTools()).tools.find((t) => t.name === tool);
    const uri = (listed?._meta as { ui?: { resourceUri?: string } } | undefined)?.ui?.resourceUri;
    if (!uri) throw new Error(`${tool} has no ui resource: ${JSON.stringify(listed)}`);
    const result = await client.callTool({ name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool} failed: ${JSON.stringify(result.content)}`);
    const html = (await client.readResource({ uri })).contents[0] as { text?: string };
    await page.evaluate(([i, h, a, r]) => window['render'](i, h, a, r), [id, html.text ?? '', args, result] as const);
    await until(() => page.frame({ name: id }) !== null, 30_000, `the ${id} frame`);
    return { uri, result, frame: page.frame({ name: id })! };
  }

  it("renders basic-vanillajs from its distinct ui:// URI, and its button's get-time call reaches its server", async () => {
    const { uri, frame } = await open('basic', 'basic2__get-time', {});
    expect(uri).toBe('ui://basic2+get-time/mcp-app.html');
    await frame.waitForSelector('#get-time-btn', { timeout: 30_000 });
    const before = await frame.textContent('#server-time');
    await frame.click('#get-time-btn');
    await frame.waitForFunction(
      (b) => document.querySelector('#server-time')?.textContent !== b && /\d{2}/.test(document.querySelector('#server-time')?.textContent ?? ''),
      before,
      {
        timeout: 30_000,
      },
    );
    // The app called its server's tool by the name the server registered, and mcpx routed it.
    expect(calls.filter((c) => c.app === 'basic' && c.method === 'tools/call')).toEqual([{ app: 'basic', method: 'tools/call', name: 'get-time', ok: true }]);
  }, 90_000);

  it('renders the pdf viewer, which reads the PDF and answers the model through its app-only tools by their own names', async () => {
    const { uri, result, frame } = await open('pdf', 'pdf__display_pdf', { url: pdf });
    expect(uri).toBe('ui://pdf-viewer/mcp-app.html'); // not colliding: byte-identical
    // The viewer fetched the bytes (read_pdf_bytes, app-only) and shows the page's text.
    await frame.waitForFunction(() => (document.body.innerText as string).includes('hello from mcpx'), undefined, { timeout: 60_000 });
    // The model asks the viewer for the page's text: the app gets the command (poll_pdf_commands) and answers (submit_page_data).
    const viewUUID = (result['structuredContent'] as { viewUUID?: string } | undefined)?.viewUUID;
    expect(viewUUID).toBeTruthy();
    const text = await client.callTool({ name: 'pdf__interact', arguments: { viewUUID, action: 'get_text', page: 1 } });
    expect(JSON.stringify(text.content)).toContain('hello from mcpx');
    // Each app-only call is recorded when its answer reached the app, which may be just after interact answered.
    const used = (tool: string) => calls.some((c) => c.app === 'pdf' && c.ok && c.name === tool);
    await until(() => ['read_pdf_bytes', 'poll_pdf_commands', 'submit_page_data'].every(used), 30_000, 'the app-only calls answered');
    expect(calls.filter((c) => c.app === 'pdf' && !c.ok)).toEqual([]);
  }, 90_000);
});
