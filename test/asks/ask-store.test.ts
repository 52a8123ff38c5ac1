/**
 * AskStore on its own, with a scripted call in place of an upstream: what an ask's relay hands back to the
 * session (JSON-RPC results and errors, inputResponses, round failures), and the bookkeeping the daemon
 * tests cannot time precisely (timeouts of one question in a round, eviction, a daemon stop).
 * The real upstreams of both eras are in test/server/asks.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { AskOutcome } from '../../src/asks/ask.machine.js';
import { missingCapability } from '../../src/asks/questions.js';
import { AskStore, type AskStoreOptions } from '../../src/asks/ask-store.js';
import { toolCall, type Call } from '../../src/call/call.js';
import type { JsonRpcRequest } from '../../src/transports/types.js';

/** A store whose calls wait to be driven by the test: `calls[i]` is the i-th call's context and its settle function. */
function scripted(opts: Partial<AskStoreOptions> = {}) {
  const calls: Array<{ ctx: Call; finish: (o: AskOutcome) => void }> = [];
  const store = new AskStore({
    run: (ctx) =>
      new Promise<AskOutcome>((finish) => {
        calls.push({ ctx, finish });
        ctx.signal?.addEventListener('abort', () => finish({ ok: false, error: { code: 'MCPX_REQUEST_CANCELLED', message: 'cancelled' } }));
      }),
    questionTimeoutMs: () => 60_000,
    ...opts,
  });
  return { store, calls };
}
const tick = () => new Promise((r) => setImmediate(r));
const elicit = (id: number, params: Record<string, unknown> = { message: 'name?', requestedSchema: { type: 'object' } }): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: { ...params, _meta: { progressToken: id } },
});

describe('AskStore', () => {
  it('a legacy question: the answer is the JSON-RPC result; a refusal is a JSON-RPC error naming why', async () => {
    const { store, calls } = scripted();
    const ask = store.start({ call: toolCall('s', 't', {}), capabilities: { elicitation: {} } });
    await tick();
    const { ctx } = calls[0]!;
    expect(ctx).toMatchObject({ id: ask.id, relay: { capabilities: { elicitation: {} } } });
    const pending = ctx.relay!.ask(elicit(0), { ...ctx });
    const v = store.get(ask.id);
    expect(v.status).toBe('input_required');
    expect(v.questions[0]!.params).toEqual({ message: 'name?', requestedSchema: { type: 'object' } });
    await store.answer(ask.id, { [v.questions[0]!.id]: { action: 'accept', content: { name: 'Ada' } } });
    await expect(pending).resolves.toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(store.get(ask.id).status).toBe('working');

    // Not declared: refused at once, with -32601 and the capability named.
    await expect(ctx.relay!.ask({ jsonrpc: '2.0', id: 1, method: 'roots/list' }, ctx)).rejects.toEqual({
      code: -32601,
      message: expect.stringContaining('did not declare the roots capability'),
    });
    // Not a question mcpx relays at all.
    await expect(ctx.relay!.ask({ jsonrpc: '2.0', id: 2, method: 'tasks/get' }, ctx)).rejects.toMatchObject({ code: -32601 });
    // Another call's context: never this ask's question.
    await expect(ctx.relay!.ask(elicit(3), { ...ctx, id: 'someone-else' })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('another call'),
    });
    expect(store.get(ask.id).refused.map((r) => r.reason)).toEqual(['capability', 'unsupported', 'misrouted']);

    calls[0]!.finish({ ok: true, result: { content: [] } });
    await tick();
    expect(store.get(ask.id)).toMatchObject({ status: 'completed', result: { content: [] } });
    expect(store.stats()).toEqual({ asks: 1, running: 0, finished: 1, openQuestions: 0, callsInFlight: 0 });
    store.close();
  });

  it("asks per caller: a call that asks nothing is never held back; the next to ask reclaims the caller's oldest unattended ask, else its question is refused (busy)", async () => {
    const { store, calls } = scripted({ limits: { maxPerCaller: 2 } });
    const caps = { elicitation: {} };
    const a = store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'x' });
    const b = store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'x' });
    // Plain calls of the same caller: started whatever x has running (issue 37 #9).
    const plain = [1, 2, 3].map(() => store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'x' }));
    await tick();
    expect(plain.map((p) => store.get(p.id).status)).toEqual(['working', 'working', 'working']);
    // a and b ask, and x answers both: each holds its place (it asks), neither is unattended.
    const qa = calls[0]!.ctx.relay!.ask(elicit(0), calls[0]!.ctx);
    const qb = calls[1]!.ctx.relay!.ask(elicit(1), calls[1]!.ctx);
    for (const id of [a.id, b.id]) await store.answer(id, { [store.get(id).questions[0]!.id]: { action: 'decline' } });
    await Promise.all([qa, qb]);
    // One of x's plain calls asks: x has 2 asks that asked, none unattended: refused, busy; the call goes on.
    await expect(calls[2]!.ctx.relay!.ask(elicit(2), calls[2]!.ctx)).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('per caller') });
    expect(store.get(plain[0]!.id)).toMatchObject({ status: 'working', refused: [{ reason: 'busy' }] });
    // Another caller is not held back by x.
    const other = store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'y' });
    await tick();
    const qo = calls[5]!.ctx.relay!.ask(elicit(5), calls[5]!.ctx);
    expect(store.get(other.id).status).toBe('input_required');
    // a asks again and x leaves it waiting: x walked away from it, so x's next question reclaims it.
    void calls[0]!.ctx.relay!.ask(elicit(6), calls[0]!.ctx).catch(() => undefined);
    const qc = calls[3]!.ctx.relay!.ask(elicit(3), calls[3]!.ctx);
    expect(store.get(a.id)).toMatchObject({ status: 'abandoned', error: { code: 'MCPX_REQUEST_CANCELLED', message: expect.stringContaining('reclaimed') } });
    expect([store.get(b.id).status, store.get(plain[1]!.id).status, store.get(other.id).status]).toEqual(['working', 'input_required', 'input_required']);
    for (const q of [qc, qo]) void q.catch(() => undefined);
    store.close();
  });

  it('asks in all (issue 37 #9): plain calls start past the bound; the next to ask reclaims the ask unattended longest, whoever its caller, once it is idle long enough', async () => {
    const { store, calls } = scripted({ limits: { maxRunning: 3, reclaimIdleMs: 60_000 } });
    const caps = { elicitation: {} };
    // Three walk-aways on three connections: each asks, nobody polls.
    const walkAways = ['c1', 'c2', 'c3'].map((caller) => store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller }));
    await tick();
    for (const i of [0, 1, 2]) void calls[i]!.ctx.relay!.ask(elicit(i), calls[i]!.ctx).catch(() => undefined);
    // Touched in the order c2, c3, c1: c2 is the one unattended longest.
    for (const w of [walkAways[1]!, walkAways[2]!, walkAways[0]!]) {
      store.get(w.id);
      await new Promise((r) => setTimeout(r, 5));
    }
    // A call that asks nothing: started and finished, no slot needed.
    const plain = store.start({ call: toolCall('s', 'echo', {}), caller: 'me' });
    await tick();
    calls[3]!.finish({ ok: true, result: { content: [] } });
    await tick();
    expect(store.get(plain.id).status).toBe('completed');
    // One that asks while none of the three has been idle reclaimIdleMs: its question is refused, busy.
    const asker = store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'me' });
    await tick();
    await expect(calls[4]!.ctx.relay!.ask(elicit(4), calls[4]!.ctx)).rejects.toMatchObject({
      message: expect.stringContaining('3 asks are waiting on their callers'),
    });
    // (A poll is the caller's attention: the walk-aways are counted, not looked at.)
    expect(store.stats().openQuestions).toBe(3);
    // Idle long enough: the next question reclaims c2's, the one unattended longest; then c3's.
    store.limits.reclaimIdleMs = 0;
    void calls[4]!.ctx.relay!.ask(elicit(5), calls[4]!.ctx).catch(() => undefined);
    expect(store.get(asker.id).status).toBe('input_required');
    expect(walkAways.map((w) => store.get(w.id).status)).toEqual(['input_required', 'abandoned', 'input_required']);
    expect(store.get(walkAways[1]!.id).error?.message).toContain('reclaimed');
    expect([store.get(walkAways[0]!.id).status, store.get(walkAways[2]!.id).status]).toEqual(['input_required', 'input_required']);
    // A modern round refused busy ends its call with MCPX_TOO_MANY_ASKS.
    store.limits.reclaimIdleMs = 60_000;
    const modern = store.start({ call: toolCall('s', 't', {}), capabilities: caps, caller: 'm' });
    await tick();
    await expect(
      calls[5]!.ctx.relay!.askRound!({ a: { method: 'elicitation/create', params: { message: 'x', requestedSchema: { type: 'object' } } } }, calls[5]!.ctx),
    ).rejects.toMatchObject({
      code: 'MCPX_TOO_MANY_ASKS',
      data: { reason: 'busy' },
    });
    expect(store.get(modern.id).refused).toMatchObject([{ reason: 'busy' }]);
    store.close();
  });

  it('a modern round: all answers go back together, keyed as asked; one question timing out ends the round and closes its siblings', async () => {
    const { store, calls } = scripted({ questionTimeoutMs: () => 50 });
    const ask = store.start({ call: toolCall('s', 't', {}), capabilities: { elicitation: { form: {} }, sampling: {} } });
    await tick();
    const { ctx } = calls[0]!;
    const requests = {
      who: { method: 'elicitation/create', params: { mode: 'form', message: 'who?', requestedSchema: { type: 'object' } } },
      llm: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } },
    };
    const round = ctx.relay!.askRound(requests, ctx);
    const qs = store.get(ask.id).questions;
    expect(qs.map((q) => [q.method, q.via, q.key])).toEqual([
      ['elicitation/create', 'input-required', 'who'],
      ['sampling/createMessage', 'input-required', 'llm'],
    ]);
    await store.answer(ask.id, { [qs[0]!.id]: { action: 'decline' } });
    await store.answer(ask.id, { [qs[1]!.id]: { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } });
    await expect(round).resolves.toEqual({ who: { action: 'decline' }, llm: { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } });

    const second = ctx.relay!.askRound(requests, ctx);
    const [a, b] = store.get(ask.id).questions;
    await store.answer(ask.id, { [a!.id]: { action: 'accept', content: {} } });
    await expect(second).rejects.toMatchObject({ code: 'MCPX_REQUEST_TIMEOUT', data: { reason: 'timeout', question: b!.id } });
    expect(store.get(ask.id)).toMatchObject({ questions: [], refused: [{ questionId: b!.id, reason: 'timeout' }] });

    // Undeclared (URL mode, only form declared): the round is refused before anything is put to the caller.
    await expect(
      ctx.relay!.askRound({ go: { method: 'elicitation/create', params: { mode: 'url', url: 'https://x', message: 'm' } } }, ctx),
    ).rejects.toMatchObject({ code: 'MCPX_QUESTION_REFUSED', data: { reason: 'capability', key: 'go' } });
    expect(store.get(ask.id).asked).toBe(4);
    store.close();
  });

  it('abandon and a daemon stop cancel the call and refuse what is open; finished asks beyond maxKept are dropped', async () => {
    const { store, calls } = scripted({ limits: { maxKept: 1 } });
    const one = store.start({ call: toolCall('s', 't', {}), capabilities: { elicitation: {} } });
    await tick();
    const q = calls[0]!.ctx.relay!.ask(elicit(0), calls[0]!.ctx);
    store.abandon(one.id);
    await expect(q).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('abandoned') });
    expect(calls[0]!.ctx.signal?.aborted).toBe(true);
    await tick();
    expect(store.stats()).toMatchObject({ running: 0, openQuestions: 0, callsInFlight: 0 });

    const two = store.start({ call: toolCall('s', 't', {}) });
    await tick();
    calls[1]!.finish({ ok: false, error: { code: 'MCPX_TOOL_ERROR', message: 'no', data: { result: { isError: true, content: [] } } } });
    await tick();
    expect(store.get(two.id)).toMatchObject({ status: 'failed', result: { isError: true }, error: { code: 'MCPX_TOOL_ERROR' } });
    store.start({ call: toolCall('s', 't', {}) }); // two finished, one kept: the oldest goes
    expect(() => store.get(one.id)).toThrow(expect.objectContaining({ code: 'MCPX_NOT_FOUND' }));
    expect(store.get(two.id).status).toBe('failed');

    const running = store.start({ call: toolCall('s', 't', {}), capabilities: { sampling: {} } });
    await tick();
    const last = calls[calls.length - 1]!;
    const pending = last.ctx.relay!.askRound({ llm: { method: 'sampling/createMessage', params: {} } }, last.ctx);
    store.close();
    await expect(pending).rejects.toMatchObject({ code: 'MCPX_ASK_EXPIRED' });
    expect(last.ctx.signal?.aborted).toBe(true);
    expect(() => store.get(running.id)).toThrow(expect.objectContaining({ code: 'MCPX_NOT_FOUND' }));
    expect(() => store.start({ call: toolCall('s', 't', {}) })).toThrow(expect.objectContaining({ code: 'MCPX_SHUTTING_DOWN' }));
  });

  it('wait() returns on a change, at its deadline, or when its poller goes', async () => {
    const { store, calls } = scripted();
    const ask = store.start({ call: toolCall('s', 't', {}), capabilities: { roots: {} } });
    await tick();
    const t0 = Date.now();
    const waiting = store.wait(ask.id, 5_000);
    setTimeout(() => void calls[0]!.ctx.relay!.ask({ jsonrpc: '2.0', id: 0, method: 'roots/list' }, calls[0]!.ctx).catch(() => undefined), 30);
    expect((await waiting).status).toBe('input_required');
    expect(Date.now() - t0).toBeLessThan(2_000);
    await store.answer(ask.id, { [store.get(ask.id).questions[0]!.id]: { roots: [] } });
    expect((await store.wait(ask.id, 40)).status).toBe('working');
    const gone = new AbortController();
    setTimeout(() => gone.abort(), 20);
    expect((await store.wait(ask.id, 5_000, gone.signal)).status).toBe('working');
    store.close();
  });

  it('which capability a question needs', () => {
    expect(missingCapability('elicitation/create', {}, { elicitation: {} })).toBeUndefined();
    expect(missingCapability('elicitation/create', { mode: 'form' }, { elicitation: { url: {} } })).toBe('elicitation.form');
    expect(missingCapability('elicitation/create', { mode: 'url' }, { elicitation: {} })).toBe('elicitation.url');
    expect(missingCapability('elicitation/create', { mode: 'url' }, { elicitation: { url: {} } })).toBeUndefined();
    expect(missingCapability('sampling/createMessage', {}, {})).toBe('sampling');
    expect(missingCapability('roots/list', {}, { roots: {} })).toBeUndefined();
  });
});
