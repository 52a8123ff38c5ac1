/**
 * Calls that may ask questions, shared fairly (docs/reliability.md, items 4, 10, 11), through the built
 * binary: `/v1/ask` without `capabilities` can be asked forms and URLs (and says what it refuses); a
 * 2026-07-28 caller that walks away from a legacy stdio server's question holds up no other caller of
 * that session; and 257 walk-away `/mcp` asks neither lock `mcpx call` out nor get MCPX_INTERNAL.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, killAll, mcpx, until } from './helpers.js';
import { startServeDaemon, textOf } from '../serve/clients.js';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'walk-away', version: '1' },
};

describe('asks shared fairly', () => {
  let d: Awaited<ReturnType<typeof startServeDaemon>>;
  let id = 1;

  beforeAll(async () => {
    d = await startServeDaemon('mcpx-ask-fairness-', {
      // Before the fix a walk-away's question held the session's turn for the whole request timeout.
      old: { fixture: 'asking-v2', protocol: 'force-initialize', mcpx: { requestTimeout: '12s' } },
      new: { fixture: 'asking-v2', protocol: 'force-discover' },
    });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await d?.remove();
  });

  /** One 2026-07-28 tools/call on /mcp, on the wire; the JSON-RPC message that answers it. */
  async function mcpCall(name: string, extra: Record<string, unknown> = {}): Promise<any> {
    const body = { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: META } };
    const r = await request(d.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${d.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify(body),
    });
    const text = await r.body.text();
    if (String(r.headers['content-type']).startsWith('text/event-stream')) {
      return text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)))
        .find((m) => m.id === body.id);
    }
    return JSON.parse(text);
  }

  const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const t0 = Date.now();
    const r = await fn();
    return [r, Date.now() - t0];
  };

  it('4: /v1/ask with no capabilities puts forms and URLs to the caller, and says it refuses sampling and roots', async () => {
    const started = await api(d.socket, 'POST', '/v1/ask', { server: 'new', tool: 'ask_name', args: {} });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ capabilities: { elicitation: { form: {}, url: {} } }, refuses: ['sampling', 'roots'] });
    const path = `/v1/ask/${started.body.id}`;
    const asked = (await api(d.socket, 'GET', `${path}?waitMs=10000`)).body;
    expect(asked.questions).toMatchObject([{ method: 'elicitation/create' }]);
    await api(d.socket, 'POST', `${path}/answers`, { answers: { [asked.questions[0].id]: { action: 'accept', content: { name: 'Ada' } } } });
    await until(async () => (await api(d.socket, 'GET', path)).body.status === 'completed', 10_000, 'the ask to finish');
    expect(textOf((await api(d.socket, 'GET', path)).body.result)).toBe('hello Ada era=modern');

    const url = await api(d.socket, 'POST', '/v1/ask', { server: 'old', tool: 'ask_url', args: {} });
    const q = (await api(d.socket, 'GET', `/v1/ask/${url.body.id}?waitMs=10000`)).body;
    expect(q.questions).toMatchObject([{ method: 'elicitation/create', params: { mode: 'url' } }]);
    await api(d.socket, 'POST', `/v1/ask/${url.body.id}/answers`, { answers: { [q.questions[0].id]: { action: 'accept' } } });

    const sample = await api(d.socket, 'POST', '/v1/ask', { server: 'old', tool: 'ask_sample', args: {} });
    await until(async () => (await api(d.socket, 'GET', `/v1/ask/${sample.body.id}`)).body.status === 'failed', 10_000, 'the refusal');
    const refused = (await api(d.socket, 'GET', `/v1/ask/${sample.body.id}`)).body;
    expect(refused).toMatchObject({ refuses: ['sampling', 'roots'], refused: [{ method: 'sampling/createMessage', reason: 'capability' }] });
  }, 60_000);

  it('10: a 2026-07-28 caller that walks away from a legacy stdio question holds up no other caller of that session', async () => {
    const walkAway = await mcpCall('old__ask_name');
    expect(walkAway.result).toMatchObject({ resultType: 'input_required' });
    // An elicitation-capable call that asks nothing, and one that asks and is answered, on the same session.
    const [echo, echoMs] = await timed(() => mcpx(['call', 'old', 'echo', '{"text":"hi"}'], { env: d.env }));
    const [asks, asksMs] = await timed(() => mcpx(['call', 'old', 'ask_name', '--answer', 'name="Bob"'], { env: d.env }));
    console.log(`item 10: while a walk-away's question was open, echo took ${echoMs} ms and an answered ask_name ${asksMs} ms (the request timeout is 12 s)`);
    expect([echo.code, echo.stdout, echo.stderr]).toEqual([0, 'hi era=legacy\n', '']);
    expect([asks.code, asks.stdout]).toEqual([0, 'hello Bob era=legacy\n']);
    expect(echoMs).toBeLessThan(6_000);
    expect(asksMs).toBeLessThan(6_000);
    // The walk-away's question stayed its own: nobody answered or closed it on its behalf.
    const key = Object.keys(walkAway.result.inputRequests)[0]!;
    const back = await mcpCall('old__ask_name', {
      inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: walkAway.result.requestState,
    });
    expect(textOf(back.result), JSON.stringify(back)).toBe('hello Ada era=legacy');
  }, 60_000);

  it('11: 257 walk-away /mcp asks lock no caller out, and every one gets its question', async () => {
    const results: any[] = [];
    const t0 = Date.now();
    for (let batch = 0; batch < 257; batch += 16) {
      results.push(...(await Promise.all(Array.from({ length: Math.min(16, 257 - batch) }, () => mcpCall('new__ask_name')))));
    }
    const askMs = Date.now() - t0;
    const kinds = results.map((r) => (r.result?.resultType === 'input_required' ? 'input_required' : r.result ? textOf(r.result) : JSON.stringify(r.error)));
    const [call, callMs] = await timed(() => mcpx(['call', 'new', 'ask_name', '--answer', 'name="Cy"'], { env: d.env }));
    if (call.code !== 0) console.log(`item 11: mcpx call: ${call.stderr}`);
    console.log(`item 11: 257 walk-away /mcp asks took ${askMs} ms; then mcpx call took ${callMs} ms`);
    expect(kinds.filter((k) => k !== 'input_required')).toEqual([]);
    expect([call.code, call.stdout, call.stderr]).toEqual([0, 'hello Cy era=modern\n', '']);
  }, 120_000);

  it('issue 37 #9: 300 walk-away /v1/asks on their own connections: a call that asks nothing is served at once, and one that asks reclaims the oldest', async () => {
    // Each through its own connection (its own caller), never polled: they ask and are left.
    const t0 = Date.now();
    const started: Array<{ status: number; body: any }> = [];
    for (let batch = 0; batch < 300; batch += 20)
      started.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(20, 300 - batch) }, () => api(d.socket, 'POST', '/v1/ask', { server: 'new', tool: 'ask_name', args: {} })),
        )),
      );
    const startMs = Date.now() - t0;
    const statuses = started.map((r) => r.status);
    // Before: 256 × 202, then 429 "256 asks are running already" for the rest.
    expect(
      statuses.filter((s) => s !== 202),
      JSON.stringify(started.find((r) => r.status !== 202)?.body),
    ).toEqual([]);
    const [echo, echoMs] = await timed(() => mcpx(['call', 'new', 'echo', '{"text":"plain"}'], { env: d.env }));
    // An ask is reclaimable once it has gone unpolled for 2 s (a fresher one may still be polled by its caller):
    // the asking call comes once the oldest walk-away is that old, however fast they were started.
    const allStarted = Date.now();
    await until(() => Date.now() - allStarted >= 2_500, 10_000, 'the oldest walk-away unattended for 2 s');
    const [asks, asksMs] = await timed(() => mcpx(['call', 'new', 'ask_name', '--answer', 'name="Dee"'], { env: d.env }));
    const after = await Promise.all(started.map(async (r) => (await api(d.socket, 'GET', `/v1/ask/${r.body.id}`)).body));
    const count = (st: string) => after.filter((a) => a.status === st).length;
    console.log(
      `issue 37 #9: 300 walk-away asks started in ${startMs} ms (all 202); then mcpx call echo exit ${echo.code} in ${echoMs} ms, an answered ask_name exit ${asks.code} in ${asksMs} ms; the walk-aways: ${count('input_required')} waiting, ${count('abandoned')} reclaimed, ${after.filter((a) => a.refused?.some((r: any) => r.reason === 'busy')).length} refused busy`,
    );
    expect([echo.code, echo.stdout, echo.stderr]).toEqual([0, 'plain era=modern\n', '']);
    expect([asks.code, asks.stdout, asks.stderr]).toEqual([0, 'hello Dee era=modern\n', '']);
    // At most serve.maxAsks of them wait on their callers; what was reclaimed says why.
    expect(count('input_required')).toBeLessThanOrEqual(256);
    expect(after.filter((a) => a.status === 'abandoned').every((a) => /reclaimed/.test(a.error?.message ?? ''))).toBe(true);
    for (const r of started) await api(d.socket, 'POST', `/v1/ask/${r.body.id}/abandon`);
  }, 120_000);
});
