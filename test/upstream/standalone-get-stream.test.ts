/**
 * The legacy standalone GET stream (the MCP specification): a sessionful SDK v1 server sends
 * notifications/tools/list_changed outside any request; it reaches the session's 'list_changed' event.
 * A question asked outside any request also travels on that stream, which the SDK's servers drop while
 * the stream is not open yet: the first request after the handshake waits for the GET's answer.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { UpstreamSession } from '../../src/upstream/session.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { httpRequests } from '../fixtures/http/log.js';
import { answering } from '../support/relay.js';

const fixtures: HttpFixture[] = [];
afterAll(async () => {
  await Promise.all(fixtures.map((f) => f.stop()));
});

describe('legacy Streamable HTTP: the standalone GET stream', () => {
  it('delivers a tools/list_changed sent outside any request to the list_changed event', async () => {
    const f = await startHttpFixture('v1-legacy-sessions');
    fixtures.push(f);
    const session = new UpstreamSession({ name: 'remote', definition: { url: f.url }, preference: 'force-initialize' });
    try {
      const info = await session.start();
      expect(info.era).toBe('legacy');
      const changed = new Promise<unknown>((resolve) => session.once('list_changed', resolve));
      const result = await session.callTool('announce', {});
      expect(JSON.stringify(result)).toContain('announced');
      await expect(changed).resolves.toEqual({ server: 'remote', list: 'tools' });
      const tools = await session.listTools();
      expect(tools.map((t) => t.name)).toContain('late');
      const gets = httpRequests(f.log).filter((r) => r.httpMethod === 'GET');
      expect(gets.length).toBeGreaterThanOrEqual(1);
      expect(gets[0]!.accept).toContain('text/event-stream');
      expect(gets[0]!.headers['mcp-session-id']).toBeTruthy();
      expect(gets[0]!.headers['mcp-protocol-version']).toBeTruthy();
    } finally {
      await session.stop();
    }
  }, 20_000);

  it('a question on the standalone stream is not lost when that stream opens slowly', async () => {
    const f = await startHttpFixture('v1-legacy-sessions', [], { FIXTURE_GET_DELAY_MS: '400' });
    fixtures.push(f);
    const asked: string[] = [];
    const session = new UpstreamSession({
      name: 'remote',
      definition: { url: f.url },
      preference: 'force-initialize',
      requestTimeoutMs: 8000,
      clientCapabilities: { elicitation: {} },
    });
    // The question comes on the standalone stream, outside any request: it goes to the one call that can answer.
    const relay = answering(async (req) => {
      asked.push(req.method);
      return { action: 'accept', content: { name: 'ada' } };
    });
    try {
      await session.start();
      // Sent at once: without the wait, it reaches the server before the GET and its question is dropped.
      const result = await session.callTool('ask-aside', { tag: 't1' }, { relay });
      expect(JSON.stringify(result)).toContain('answer=ada to=t1');
      expect(asked).toEqual(['elicitation/create']);
    } finally {
      await session.stop();
    }
  }, 20_000);
});
