/**
 * `/v1/ask` end to end: the daemon API (`app.inject`) over real fixture upstreams that ask their caller
 * questions, once as a legacy upstream (`force-initialize`: the SDK's legacy shim sends real
 * elicitation/create, sampling/createMessage and roots/list requests mid-call) and once as a modern one
 * (`prefer-discover`: `input_required` results, retried with inputResponses and the byte-exact
 * requestState). The fixtures' wire logs show what the upstream received (cancellations included).
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { readWireLog, received } from '../fixtures/wire-log-read.js';
import { tempDir } from '../support/real.js';
import { harness, textOf, type Harness } from './helpers.js';

const ALL = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
const FINAL = ['completed', 'failed', 'abandoned', 'expired'];
const ANSWERS = {
  name: { action: 'accept', content: { name: 'Ada' } },
  sample: { role: 'assistant', content: { type: 'text', text: 'hi!' }, model: 'm1' },
  roots: { roots: [{ uri: 'file:///a', name: 'a' }, { uri: 'file:///b' }] },
};

let dir: { path: string; remove: () => Promise<void> };
let h: Harness;
let remote: HttpFixture;
let sse: HttpFixture;

beforeAll(async () => {
  dir = await tempDir('mcpx-asks-');
  remote = await startHttpFixture('v1-legacy-sessions');
  sse = await startHttpFixture('v1-sse-legacy');
  h = await harness(dir.path, {
    legacy: { fixture: 'asking-v2', protocol: 'force-initialize' },
    modern: { fixture: 'asking-v2', protocol: 'prefer-discover' },
    // A question waits as long as the server's request timeout.
    'legacy-quick': { fixture: 'asking-v2', protocol: 'force-initialize', mcpx: { requestTimeout: '1500ms' } },
    'modern-quick': { fixture: 'asking-v2', protocol: 'prefer-discover', mcpx: { requestTimeout: '1500ms' } },
    push: { fixture: 'dual-v2', protocol: 'force-initialize' },
    follow: { fixture: 'asking-v2', protocol: 'follow' },
    'legacy-http': { url: remote.url, protocol: 'force-initialize' },
    'legacy-sse': { type: 'sse', url: sse.url },
  });
});
const started: string[] = [];
// A failed test leaves nothing running for the next one.
afterEach(async () => {
  for (const id of started.splice(0)) await api('POST', `/v1/ask/${id}/abandon`);
});
afterAll(async () => {
  await h?.close();
  await remote?.stop();
  await sse?.stop();
  await dir?.remove();
});

async function api(method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await h.app.inject({
    method,
    url,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: res.json() as any };
}

async function start(
  server: string,
  tool: string,
  args: Record<string, unknown> = {},
  capabilities: Record<string, unknown> | undefined = ALL,
): Promise<string> {
  const r = await api('POST', '/v1/ask', { server, tool, args, ...(capabilities === undefined ? {} : { capabilities }) });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  expect(r.body).toMatchObject({ id: expect.stringMatching(/^ask-/), status: 'working' });
  started.push(r.body.id);
  return r.body.id as string;
}

/** Long-polls until `until` holds (default: open questions, or the end). */
async function poll(id: string, until: (v: any) => boolean = (v) => v.questions.length > 0 || FINAL.includes(v.status), ms = 20_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await api('GET', `/v1/ask/${id}?waitMs=2000`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    if (until(r.body) || Date.now() > deadline) return r.body;
    // With questions open the poll answers at once: pause, or this loop would starve the timers under test.
    if (r.body.status !== 'working') await new Promise((res) => setTimeout(res, 25));
  }
}
const done = (id: string) => poll(id, (v) => FINAL.includes(v.status));
const answer = (id: string, answers: Record<string, unknown>) => api('POST', `/v1/ask/${id}/answers`, { answers });
const text = (v: any) => textOf({ result: v.result });
const stats = () => h.controller.asks.stats();
const wire = (server: string) => received(readWireLog(join(dir.path, `${server}.wire.log`)));

/** Until every call has settled and nothing is open (an abandoned call settles just after its cancellation). */
async function settled(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((stats().callsInFlight > 0 || stats().openQuestions > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(stats()).toMatchObject({ openQuestions: 0, callsInFlight: 0 });
}

describe.each([
  ['legacy', 'server-request'],
  ['modern', 'input-required'],
] as const)('a %s upstream', (server, via) => {
  it('elicitation (form): the question, then the answer goes upstream; accept, decline and cancel', async () => {
    const id = await start(server, 'ask_name');
    const v = await poll(id);
    expect(v.status).toBe('input_required');
    expect(v.questions).toEqual([
      {
        id: expect.any(String),
        method: 'elicitation/create',
        params: {
          message: 'What is your name?',
          mode: 'form',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
        via,
        ...(via === 'input-required' ? { key: 'name' } : {}),
        askedAt: expect.any(String),
      },
    ]);
    const a = await answer(id, { [v.questions[0].id]: ANSWERS.name });
    expect(a.status).toBe(200);
    expect(a.body.questions).toEqual([]);
    const end = await done(id);
    expect(end).toMatchObject({ status: 'completed', asked: 1, refused: [] });
    expect(text(end)).toBe(`hello Ada era=${server}`);

    for (const action of ['decline', 'cancel']) {
      const id2 = await start(server, 'ask_name');
      const q = (await poll(id2)).questions[0];
      expect((await answer(id2, { [q.id]: { action } })).status).toBe(200);
      expect(text(await done(id2))).toBe(`ask_name ${action} era=${server}`);
    }
    await settled();
  });

  it('elicitation (URL mode), sampling and roots', async () => {
    const url = await start(server, 'ask_url');
    const qu = (await poll(url)).questions[0];
    expect(qu).toMatchObject({ method: 'elicitation/create', params: { mode: 'url', url: 'https://example.com/login?x=1', message: 'Sign in, please' } });
    await answer(url, { [qu.id]: { action: 'accept' } });
    expect(text(await done(url))).toBe(`url accept era=${server}`);

    const sample = await start(server, 'ask_sample');
    const qs = (await poll(sample)).questions[0];
    expect(qs).toMatchObject({
      method: 'sampling/createMessage',
      params: { maxTokens: 20, messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }] },
    });
    expect(qs.params._meta).toBeUndefined(); // the upstream's own progress token is not the caller's business
    await answer(sample, { [qs.id]: ANSWERS.sample });
    expect(text(await done(sample))).toBe(`sampled hi! model=m1 era=${server}`);

    const roots = await start(server, 'ask_roots');
    if (server === 'legacy') {
      // A shared legacy session has no roots to give (no mcpx.roots), so it declares none: the server's
      // own SDK will not ask, and no caller is asked either.
      expect(text(await done(roots))).toMatch(/^Cannot request input 'roots' \(roots\/list\): the client on this 2025-era connection did not declare/);
    } else {
      const qr = (await poll(roots)).questions[0];
      expect(qr).toMatchObject({ method: 'roots/list', params: {} });
      await answer(roots, { [qr.id]: ANSWERS.roots });
      expect(text(await done(roots))).toBe(`roots file:///a,file:///b era=${server}`);
    }
    await settled();
  });

  it('two rounds carried by requestState (echoed byte-exact upstream), each question with a fresh id', async () => {
    const id = await start(server, 'ask_two');
    const q1 = (await poll(id)).questions[0];
    expect(q1.params.message).toBe('What is your name?');
    await answer(id, { [q1.id]: ANSWERS.name });
    const v2 = await poll(id, (v) => v.questions.length > 0 && v.questions[0].id !== q1.id);
    const q2 = v2.questions[0];
    expect(q2.params.message).toBe('Which colour, Ada?');
    expect(v2.asked).toBe(2);
    await answer(id, { [q2.id]: { action: 'accept', content: { colour: 'blue' } } });
    const end = await done(id);
    // The fixture's states carry non-ASCII and quotes; round 3 saw exactly what round 2 gave.
    expect(text(end)).toBe(`name=Ada colour=blue states=s0:"ü✓"|s1:"Ada":s0:"ü✓" era=${server}`);
    await settled();
  });

  it('several questions in one round; an answer checked all-or-nothing; answering twice is 409', async () => {
    const id = await start(server, 'ask_both');
    // Modern: one round with both; legacy: the shim sends both requests at once.
    const first = await poll(id, (v) => v.questions.length === 2 || FINAL.includes(v.status));
    expect(first.questions.map((x: any) => x.params.message).sort()).toEqual(['How old are you?', 'What is your name?']);
    const q = first.questions.find((x: any) => x.params.message === 'What is your name?');
    const unknown = await answer(id, { [q.id]: ANSWERS.name, q999999: ANSWERS.name });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({
      code: 'MCPX_UNKNOWN_QUESTION',
      path: ['answers', 'q999999'],
      in: 'body',
      message: expect.stringContaining('answers.q999999'),
    });
    const badShape = await answer(id, { [q.id]: { action: 'maybe' } });
    expect(badShape.status).toBe(400);
    expect(badShape.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['answers', q.id, 'action'], in: 'body' });
    expect((await api('GET', `/v1/ask/${id}`)).body.questions.map((x: any) => x.id)).toContain(q.id); // nothing was handed on

    expect((await answer(id, { [q.id]: ANSWERS.name })).status).toBe(200);
    const twice = await answer(id, { [q.id]: ANSWERS.name });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toMatchObject({ code: 'MCPX_ALREADY_ANSWERED', path: ['answers', q.id] });

    for (;;) {
      const v = await poll(id);
      if (FINAL.includes(v.status)) {
        expect(text(v)).toBe(`name=Ada age=7 era=${server}`);
        break;
      }
      await answer(
        id,
        Object.fromEntries(
          v.questions.map((x: any) => [x.id, x.params.message === 'How old are you?' ? { action: 'accept', content: { age: 7 } } : ANSWERS.name]),
        ),
      );
    }
    const late = await answer(id, { [q.id]: ANSWERS.name });
    expect(late.status).toBe(409);
    await settled();
  });

  it('abandon: open questions are refused, the call is cancelled upstream, nothing is left open', async () => {
    const before = wire(server).filter((e) => e.method === 'notifications/cancelled').length;
    const calls = wire(server).filter((e) => e.method === 'tools/call').length;
    const id = await start(server, 'ask_name');
    const q = (await poll(id)).questions[0];
    const responses = wire(server).filter((e) => e.kind === 'response').length;
    const r = await api('POST', `/v1/ask/${id}/abandon`, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      status: 'abandoned',
      questions: [],
      error: { code: 'MCPX_REQUEST_CANCELLED' },
      refused: [{ questionId: q.id, reason: 'abandoned' }],
    });
    await settled();
    expect((await api('POST', `/v1/ask/${id}/abandon`)).body.status).toBe('abandoned'); // idempotent
    const closed = await answer(id, { [q.id]: ANSWERS.name });
    expect(closed.status).toBe(409);
    expect(closed.body.error).toMatchObject({ code: 'MCPX_QUESTION_CLOSED', path: ['answers', q.id] });
    if (server === 'legacy') {
      // The tools/call in flight is cancelled, and the elicitation/create gets its (error) answer.
      await expect.poll(() => wire(server).filter((e) => e.method === 'notifications/cancelled').length).toBe(before + 1);
      await expect.poll(() => wire(server).filter((e) => e.kind === 'response').length).toBe(responses + 1);
    } else {
      // Nothing waits upstream between modern rounds: not retrying is the end of it.
      expect(wire(server).filter((e) => e.method === 'tools/call').length).toBe(calls + 1);
    }
  });

  it('a question for a capability the caller did not declare is refused at once, never left open', async () => {
    const id = await start(server, 'ask_sample', {}, { elicitation: {} });
    const end = await done(id);
    expect(end.status).toBe('failed');
    expect(end.asked).toBe(0);
    if (server === 'legacy') {
      // mcpx declared sampling at initialize (it can relay it), so the upstream asked, and mcpx refused for this caller.
      expect(end.refused).toEqual([
        { method: 'sampling/createMessage', reason: 'capability', message: expect.stringContaining('did not declare the sampling capability') },
      ]);
      expect(end.error.code).toBe('MCPX_TOOL_ERROR');
      expect(JSON.stringify(end.result)).toContain('did not declare the sampling capability');
    } else {
      // The request declared only the caller's capabilities, so the upstream itself refused (-32021).
      expect(end.error).toMatchObject({ code: 'MCPX_UPSTREAM_ERROR', data: { rpcCode: -32021 } });
    }
    const url = await start(server, 'ask_url', {}, { elicitation: { form: {} } });
    const urlEnd = await done(url);
    expect(urlEnd).toMatchObject({ status: 'failed', asked: 0 });
    if (server === 'legacy') expect(urlEnd.refused).toMatchObject([{ reason: 'capability', message: expect.stringContaining('elicitation.url') }]);
    await settled();
  });

  it('a question nobody answers within the request timeout is refused', async () => {
    const quick = `${server}-quick`;
    const id = await start(quick, 'ask_name');
    const q = (await poll(id)).questions[0];
    const end = await done(id);
    expect(end.status).toBe('failed');
    expect(end.error.code).toBe('MCPX_REQUEST_TIMEOUT');
    // Legacy: the tools/call waiting on it times out too (and is cancelled upstream); modern: the round is refused.
    expect(end.refused).toEqual([
      expect.objectContaining({ questionId: q.id, reason: server === 'modern' ? 'timeout' : expect.stringMatching(/^(timeout|finished)$/) }),
    ]);
    if (server === 'legacy') await expect.poll(() => wire(quick).some((e) => e.method === 'notifications/cancelled')).toBe(true);
    await settled();
  });

  it('expiry: an ask older than its maximum age is cancelled and its questions refused; a finished one is deleted after its time', async () => {
    const limits = h.controller.asks.limits;
    const saved = { ...limits };
    try {
      await api('POST', '/v1/call', { server, tool: 'whoami' }); // started already, so the question comes well within the age
      limits.maxAgeMs = 600;
      const id = await start(server, 'ask_name');
      expect((await poll(id)).questions).toHaveLength(1);
      const end = await done(id);
      expect(end).toMatchObject({ status: 'expired', questions: [], error: { code: 'MCPX_ASK_EXPIRED' }, refused: [{ reason: 'expired' }] });
      await settled();

      limits.maxAgeMs = saved.maxAgeMs;
      limits.finishedTtlMs = 200;
      const id2 = await start(server, 'ask_name');
      await answer(id2, { [(await poll(id2)).questions[0].id]: ANSWERS.name });
      expect((await done(id2)).status).toBe('completed');
      await expect.poll(async () => (await api('GET', `/v1/ask/${id2}`)).status).toBe(404);
      expect((await api('GET', `/v1/ask/${id2}`)).body.error.code).toBe('MCPX_NOT_FOUND');
    } finally {
      Object.assign(limits, saved);
    }
  });

  it("a cap on questions per ask, and the session's 8-round cap", async () => {
    const limits = h.controller.asks.limits;
    const saved = limits.maxQuestionsPerAsk;
    try {
      limits.maxQuestionsPerAsk = 2;
      const id = await start(server, 'ask_forever');
      for (let i = 0; i < 2; i++) {
        const v = await poll(id, (x) => (x.questions.length > 0 && x.asked === i + 1) || FINAL.includes(x.status));
        await answer(id, { [v.questions[0].id]: ANSWERS.name });
      }
      const end = await done(id);
      expect(end).toMatchObject({ status: 'failed', asked: 2, refused: [{ reason: 'limit' }] });
      expect(end.error.code).toBe(server === 'modern' ? 'MCPX_QUESTION_REFUSED' : 'MCPX_TOOL_ERROR');
    } finally {
      limits.maxQuestionsPerAsk = saved;
    }
    // With room for more, the rounds cap ends it: the session's on a modern upstream, the SDK shim's on a legacy one.
    const id = await start(server, 'ask_forever');
    let asked = 0;
    for (;;) {
      const v = await poll(id, (x) => (x.questions.length > 0 && x.asked > asked) || FINAL.includes(x.status));
      if (FINAL.includes(v.status)) {
        expect(v.asked).toBe(8);
        expect(JSON.stringify(v.error)).toContain('after 8 rounds');
        break;
      }
      asked = v.asked;
      await answer(id, { [v.questions[0].id]: ANSWERS.name });
    }
    await settled();
  });
});

describe('attribution: each question belongs to the ask whose call provoked it', () => {
  it('modern: two asks in flight on one shared session each get only their own question', async () => {
    const a = await start('modern', 'ask_name', { tag: 'A' });
    const b = await start('modern', 'ask_name', { tag: 'B' });
    const [va, vb] = await Promise.all([poll(a), poll(b)]);
    expect(va.questions.map((q: any) => q.params.message)).toEqual(['question for A']);
    expect(vb.questions.map((q: any) => q.params.message)).toEqual(['question for B']);
    const crossed = await answer(a, { [vb.questions[0].id]: ANSWERS.name });
    expect(crossed.body.error).toMatchObject({ code: 'MCPX_UNKNOWN_QUESTION' }); // another ask's question is not this one's
    await answer(b, { [vb.questions[0].id]: { action: 'accept', content: { name: 'Bea' } } });
    await answer(a, { [va.questions[0].id]: { action: 'accept', content: { name: 'Al' } } });
    expect(text(await done(a))).toBe('hello Al to=A era=modern');
    expect(text(await done(b))).toBe('hello Bea to=B era=modern');
    const instances = (await api('GET', '/v1/status')).body.servers.find((s: any) => s.server === 'modern').instances;
    expect(instances).toHaveLength(1);
    await settled();
  });

  it('legacy over HTTP: two asks in flight on one session each get their own elicitation/create', async () => {
    const a = await start('legacy-http', 'ask', { tag: 'one' });
    const b = await start('legacy-http', 'ask', { tag: 'two' });
    const [va, vb] = await Promise.all([poll(a), poll(b)]);
    expect(va.questions.map((q: any) => q.params.message)).toEqual(['question for one']);
    expect(vb.questions.map((q: any) => q.params.message)).toEqual(['question for two']);
    await answer(b, { [vb.questions[0].id]: { action: 'accept', content: { name: 'Grace' } } });
    await answer(a, { [va.questions[0].id]: { action: 'accept', content: { name: 'Ada' } } });
    expect(text(await done(a))).toBe('answer=Ada to=one');
    expect(text(await done(b))).toBe('answer=Grace to=two');
    await settled();
  });

  it('legacy over stdio: asks take turns while one runs (stdio cannot say whose a question is), a parked one holds nobody up, and each gets only its own', async () => {
    const a = await start('legacy', 'ask_name', { tag: 'A' });
    const va = await poll(a);
    expect(va.questions.map((q: any) => q.params.message)).toEqual(['question for A']);
    const b = await start('legacy', 'ask_name', { tag: 'B' });
    // A's question waits for its answer (A is parked), so B goes ahead and is asked its own; A sees nothing of B's.
    const vb = await poll(b);
    expect(vb.questions.map((q: any) => q.params.message)).toEqual(['question for B']);
    expect((await api('GET', `/v1/ask/${a}`)).body.questions.map((q: any) => q.params.message)).toEqual(['question for A']);
    await answer(b, { [vb.questions[0].id]: ANSWERS.name });
    expect(text(await done(b))).toBe('hello Ada to=B era=legacy');
    await answer(a, { [va.questions[0].id]: ANSWERS.name });
    expect(text(await done(a))).toBe('hello Ada to=A era=legacy');
    await settled();
  });

  it('legacy over HTTP+SSE: asks take turns too (every question arrives on the one GET stream, tied to no call), and each gets only its own', async () => {
    // Started together: without turns both calls would be in flight when the first question comes, and
    // mcpx could not tell whose it is.
    const [a, b] = await Promise.all([start('legacy-sse', 'ask_name', { tag: 'A' }), start('legacy-sse', 'ask_name', { tag: 'B' })]);
    const [va, vb] = await Promise.all([poll(a), poll(b)]);
    expect(va.questions.map((q: any) => q.params.message)).toEqual(['question for A']);
    expect(vb.questions.map((q: any) => q.params.message)).toEqual(['question for B']);
    expect((await api('GET', `/v1/ask/${a}`)).body.questions.map((q: any) => q.params.message)).toEqual(['question for A']);
    await answer(b, { [vb.questions[0].id]: { action: 'accept', content: { name: 'Grace' } } });
    expect(text(await done(b))).toBe('hello Grace to=B');
    await answer(a, { [va.questions[0].id]: ANSWERS.name });
    expect(text(await done(a))).toBe('hello Ada to=A');
    await settled();
  });
});

describe('around the edges', () => {
  it('a push-style legacy question (SDK v2 elicitInput on a legacy connection) is relayed too', async () => {
    const id = await start('push', 'legacy_only_ask');
    const q = (await poll(id)).questions[0];
    expect(q).toMatchObject({ method: 'elicitation/create', via: 'server-request', params: { message: 'What is your name?' } });
    await answer(id, { [q.id]: ANSWERS.name });
    expect(text(await done(id))).toBe('hello Ada era=legacy');
    await settled();
  });

  it("under follow, X-Mcpx-Caller-Protocol picks the lane: a legacy caller's ask meets a legacy session", async () => {
    for (const [headers, via, era] of [
      [{ 'X-Mcpx-Caller-Protocol': '2025-11-25' }, 'server-request', 'legacy'],
      [{}, 'input-required', 'modern'],
    ] as const) {
      const r = await api('POST', '/v1/ask', { server: 'follow', tool: 'ask_name', capabilities: ALL }, headers);
      expect(r.status).toBe(202);
      const q = (await poll(r.body.id)).questions[0];
      expect(q.via).toBe(via);
      await answer(r.body.id, { [q.id]: ANSWERS.name });
      expect(text(await done(r.body.id))).toBe(`hello Ada era=${era}`);
    }
    await settled();
  });

  it('/v1/call cannot answer: a legacy question gets "no caller", a modern request declares no capabilities', async () => {
    const legacy = await api('POST', '/v1/call', { server: 'legacy', tool: 'ask_name' });
    expect(legacy.body).toMatchObject({ ok: false, error: { code: 'MCPX_TOOL_ERROR' } });
    expect(JSON.stringify(legacy.body)).toContain('no caller to ask');
    const modern = await api('POST', '/v1/call', { server: 'modern', tool: 'ask_name' });
    expect(modern.body).toMatchObject({ ok: false, error: { code: 'MCPX_UPSTREAM_ERROR', data: { rpcCode: -32021 } } });
  });

  it('at most limits.maxRunning asks wait on their callers: a plain call is never held back; one more that asks is refused busy (MCPX_TOO_MANY_ASKS) until one is unattended long enough to reclaim', async () => {
    const limits = h.controller.asks.limits;
    const saved = { ...limits };
    try {
      limits.maxRunning = 2;
      limits.reclaimIdleMs = 60_000;
      const ids = [await start('modern', 'ask_name'), await start('modern', 'ask_name')];
      for (const id of ids) expect((await poll(id)).status).toBe('input_required');
      // A call that asks nothing: served.
      const plain = await start('modern', 'echo', { text: 'plain' });
      expect((await done(plain)).status).toBe('completed');
      // One more that asks: its question is refused, and the modern call ends with why.
      const third = await start('modern', 'ask_name');
      expect(await done(third)).toMatchObject({
        status: 'failed',
        error: { code: 'MCPX_TOO_MANY_ASKS', data: { reason: 'busy' } },
        refused: [{ reason: 'busy', message: expect.stringContaining('2 asks are waiting on their callers') }],
      });
      // Unattended long enough: the next reclaims the one left longest.
      limits.reclaimIdleMs = 0;
      const fourth = await start('modern', 'ask_name');
      expect((await poll(fourth)).status).toBe('input_required');
      expect((await api('GET', `/v1/ask/${ids[0]}`)).body).toMatchObject({ status: 'abandoned', error: { message: expect.stringContaining('reclaimed') } });
      for (const id of [ids[1]!, fourth]) await api('POST', `/v1/ask/${id}/abandon`);
    } finally {
      Object.assign(limits, saved);
    }
    await settled();
  });

  it('bad requests name the field; an unknown ask is 404', async () => {
    expect((await api('POST', '/v1/ask', { server: 'modern', tool: 'ask_name', capabilities: { elicitation: 'yes' } })).body.error).toMatchObject({
      path: ['capabilities', 'elicitation'],
    });
    expect((await api('POST', '/v1/ask', { server: 'modern', tool: 'ask_name', extra: 1 })).body.error).toMatchObject({ path: ['extra'] });
    expect((await api('GET', '/v1/ask/x?waitMs=600000')).body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['waitMs'] });
    expect((await api('POST', '/v1/ask/x/answers', { answers: { q1: 'yes' } })).body.error).toMatchObject({
      code: 'MCPX_BAD_REQUEST',
      path: ['answers', 'q1'],
    });
    const unknown = await api('POST', '/v1/ask/x/answers', { answers: { q1: {} } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('MCPX_NOT_FOUND');
  });

  it('the long poll waits for a change, and returns at once when there is something to say', async () => {
    const id = await start('modern', 'ask_name');
    const t0 = Date.now();
    const v = await poll(id);
    expect(v.status).toBe('input_required');
    const t1 = Date.now();
    expect((await api('GET', `/v1/ask/${id}?waitMs=5000`)).body.status).toBe('input_required'); // at once: a question is open
    expect(Date.now() - t1).toBeLessThan(1000);
    expect(t1 - t0).toBeLessThan(10_000);
    await answer(id, { [v.questions[0].id]: ANSWERS.name });
    expect((await done(id)).status).toBe('completed');
    await settled();
  });
});
