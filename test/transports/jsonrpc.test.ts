import { describe, it, expect } from 'vitest';
import { parseMessage } from '../../src/transports/jsonrpc.js';

function ok(line: string) {
  const r = parseMessage(line);
  if (!r.ok) throw new Error(`expected a message, got: ${r.reason}`);
  return r;
}

function bad(line: string): string {
  const r = parseMessage(line);
  if (r.ok) throw new Error(`expected a rejection, got ${r.kind}`);
  return r.reason;
}

describe('parseMessage', () => {
  it('classifies a request', () => {
    const r = ok('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}}');
    expect(r.kind).toBe('request');
    expect(r.message).toEqual({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { cursor: 'x' } });
  });

  it('accepts string ids', () => {
    const r = ok('{"jsonrpc":"2.0","id":"abc","method":"ping"}');
    expect(r.kind).toBe('request');
    expect(r.kind === 'request' && r.message.id).toBe('abc');
  });

  it('classifies a notification (no id)', () => {
    const r = ok('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}');
    expect(r.kind).toBe('notification');
    expect(r.message).not.toHaveProperty('id');
  });

  it('classifies a success response, including a null result', () => {
    const r = ok('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}');
    expect(r.kind).toBe('success');
    expect(r.kind === 'success' && r.message.result).toEqual({ tools: [] });
    expect(ok('{"jsonrpc":"2.0","id":2,"result":null}').kind).toBe('success');
  });

  it('classifies an error response, accepting id null', () => {
    const r = ok('{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":{"m":"x"}}}');
    expect(r.kind).toBe('failure');
    expect(r.kind === 'failure' && r.message.error).toEqual({ code: -32601, message: 'Method not found', data: { m: 'x' } });
    const n = ok('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    expect(n.kind === 'failure' && n.message.id).toBeNull();
  });

  it('keeps extra fields', () => {
    const r = ok('{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"x":1},"extra":true}');
    expect(r.message).toMatchObject({ _meta: { x: 1 }, extra: true });
    const e = ok('{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","more":2}}');
    expect(e.kind === 'failure' && e.message.error).toMatchObject({ more: 2 });
  });

  it('reads params: null as no params', () => {
    const r = ok('{"jsonrpc":"2.0","method":"x","params":null}');
    expect(r.message).not.toHaveProperty('params');
  });

  it('rejects non-JSON', () => {
    expect(bad('not json')).toMatch(/^not JSON/);
    expect(bad('{"jsonrpc":"2.0",')).toMatch(/^not JSON/);
  });

  it('rejects JSON that is not an object', () => {
    expect(bad('42')).toMatch(/not a JSON object/);
    expect(bad('"str"')).toMatch(/not a JSON object/);
    expect(bad('null')).toMatch(/not a JSON object/);
  });

  it('rejects batches', () => {
    expect(bad('[{"jsonrpc":"2.0","method":"a"}]')).toMatch(/batch/);
  });

  it('requires "jsonrpc": "2.0"', () => {
    expect(bad('{"id":1,"method":"ping"}')).toMatch(/jsonrpc/);
    expect(bad('{"jsonrpc":"1.0","id":1,"method":"ping"}')).toMatch(/jsonrpc/);
  });

  it('rejects objects that are neither requests, notifications nor responses', () => {
    expect(bad('{"jsonrpc":"2.0","id":1}')).toMatch(/neither/);
    expect(bad('{"hello":"world","jsonrpc":"2.0"}')).toMatch(/neither/);
  });

  it('rejects malformed members', () => {
    expect(bad('{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}')).toMatch(/both/);
    expect(bad('{"jsonrpc":"2.0","id":null,"method":"ping"}')).toMatch(/null id/);
    expect(bad('{"jsonrpc":"2.0","id":{},"method":"ping"}')).toMatch(/invalid request/);
    expect(bad('{"jsonrpc":"2.0","method":5}')).toMatch(/invalid notification/);
    expect(bad('{"jsonrpc":"2.0","method":"x","params":[1,2]}')).toMatch(/params/);
    expect(bad('{"jsonrpc":"2.0","id":1,"error":{"code":"E","message":"m"}}')).toMatch(/invalid error response/);
    expect(bad('{"jsonrpc":"2.0","id":1,"error":"boom"}')).toMatch(/invalid error response/);
    expect(bad('{"jsonrpc":"2.0","id":true,"result":1}')).toMatch(/invalid response/);
  });
});
