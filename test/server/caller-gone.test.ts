/**
 * A caller who disconnects mid-call cancels its upstream request: the daemon keeps one "caller gone"
 * signal per connection (not one per request), so this holds for a call on a connection that already
 * carried finished calls, and does not touch calls on other connections.
 */
import { request as httpRequest, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodsReceived, readWireLog } from '../fixtures/wire-log-read.js';
import { tempDir } from '../support/real.js';
import { harness, textOf, type Harness } from './helpers.js';

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a caller who goes away', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  let port: number;

  beforeAll(async () => {
    dir = await tempDir('mcpx-gone-');
    h = await harness(dir.path, { tools: { fixture: 'serve-tools' } });
    const app = await h.app2({});
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  const wire = () => methodsReceived(readWireLog(join(dir.path, 'tools.wire.log')));
  const count = (m: string) => wire().filter((x) => x === m).length;

  /** POST /v1/call on `agent`'s connection; `onRequest` sees the request (to destroy it). */
  function call(agent: Agent, body: unknown, onRequest?: (req: ReturnType<typeof httpRequest>) => void): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/v1/call',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
      onRequest?.(req);
    });
  }

  it('cancels its upstream call, on a connection that carried finished calls before; other connections go on', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const other = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // Finished calls on the same connection: their signal is the connection's too, and stays quiet.
      for (const text of ['one', 'two']) {
        const r = await call(agent, { server: 'tools', tool: 'echo', args: { text } });
        expect(r.status).toBe(200);
        expect(textOf(r.body)).toMatch(new RegExp(`^${text}`));
      }
      const calls = count('tools/call');
      const cancels = count('notifications/cancelled');
      let sleeping: ReturnType<typeof httpRequest> | undefined;
      const pending = call(agent, { server: 'tools', tool: 'sleep', args: { ms: 60_000 } }, (req) => (sleeping = req));
      pending.catch(() => undefined);
      // A call on another connection runs meanwhile and is not cancelled with it.
      const alongside = call(other, { server: 'tools', tool: 'sleep', args: { ms: 1_000 } });
      await until(() => count('tools/call') >= calls + 2, 'both calls upstream');
      sleeping!.destroy(); // the caller goes away
      await expect(pending).rejects.toThrow();
      await until(() => count('notifications/cancelled') > cancels, 'notifications/cancelled upstream');
      expect(count('notifications/cancelled')).toBe(cancels + 1);
      const r = await alongside;
      expect(r.status).toBe(200);
      expect(r.body.ok).toBe(true);
    } finally {
      agent.destroy();
      other.destroy();
    }
  }, 60_000);
});
