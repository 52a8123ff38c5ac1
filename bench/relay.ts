/**
 * The floor of one extra hop (call-path row r): a process with nothing in it but what any front of a
 * stdio server needs — a `node:http` server on a Unix socket and the official SDK v2 client connected to
 * the fixture over stdio. Each POSTed `{ tool, args }` becomes one `tools/call`; the answer is
 * `{ ok: true, result }`, the shape `/v1/call` answers in. No validation, logging, pool or statechart:
 * what `/v1/call` costs beyond this row is what mcpx adds to a relay.
 *
 *   node dist/bench/relay.js <socket> <fixture.mjs>
 *
 * Prints `LISTENING` once the client is connected and the socket listens; stops when stdin ends or on
 * SIGTERM.
 */
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [socket, fixture] = process.argv.slice(2);
if (!socket || !fixture) {
  process.stderr.write('usage: relay.js <socket> <fixture.mjs>\n');
  process.exit(2);
}

// A 2026-07-28 caller, as mcpx is to the dual fixture (its era probe finds it modern).
const client = new Client({ name: 'mcpx-bench-relay', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [fixture], stderr: 'ignore' }));

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const reply = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    let call: { tool: string; args?: Record<string, unknown> };
    try {
      call = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof call;
    } catch {
      reply(400, { ok: false, error: 'not JSON' });
      return;
    }
    client.callTool({ name: call.tool, arguments: call.args ?? {} }).then(
      (result) => reply(200, { ok: true, result }),
      (err: unknown) => reply(502, { ok: false, error: err instanceof Error ? err.message : String(err) }),
    );
  });
});
// As long as fastify keeps an idle connection (its default): the load generator's connections stay open
// between runs, as they do to the daemon.
server.keepAliveTimeout = 72_000;

const stop = () => {
  server.close();
  server.closeAllConnections();
  void client.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.stdin.on('end', stop).resume();

server.listen(socket, () => process.stdout.write('LISTENING\n'));
