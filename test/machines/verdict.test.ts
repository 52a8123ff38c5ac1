/**
 * The verdict table of docs/behaviour.md §3, row by row. Each case is one answer a server can give,
 * with the verdict the spec assigns to it.
 */
import { describe, expect, it } from 'vitest';
import { discoverVerdict, initializeVerdict, isFatal, versionRefusal, type HttpFailure } from '../../src/machines/verdict.js';

const OFFERED = ['2026-07-28'] as const;
const discoverResult = (extra: Record<string, unknown> = {}) => ({
  result: {
    resultType: 'complete',
    supportedVersions: ['2026-07-28'],
    capabilities: { tools: {} },
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'srv', version: '1.0.0' } },
    ttlMs: 0,
    cacheScope: 'private',
    ...extra,
  },
});
const err = (code: number, data?: unknown) => ({ error: { code, message: 'm', ...(data === undefined ? {} : { data }) } });

describe('discover verdicts (docs/behaviour.md §3)', () => {
  it('a DiscoverResult with a mutual version is modern, at the newest mutual version', () => {
    const v = discoverVerdict(discoverResult(), OFFERED, false);
    expect(v).toMatchObject({ kind: 'modern', version: '2026-07-28', serverInfo: { name: 'srv' }, capabilities: { tools: {} } });
  });

  it('picks the newest mutual version when several are offered and supported', () => {
    const v = discoverVerdict(discoverResult({ supportedVersions: ['2026-07-28', '2027-03-01'] }), ['2027-03-01', '2026-07-28'], false);
    expect(v).toMatchObject({ kind: 'modern', version: '2027-03-01' });
  });

  it('accepts serverInfo top-level, as early servers sent it', () => {
    const v = discoverVerdict({ result: { supportedVersions: ['2026-07-28'], capabilities: {}, serverInfo: { name: 'early', version: '0' } } }, OFFERED, false);
    expect(v).toMatchObject({ kind: 'modern', serverInfo: { name: 'early' } });
  });

  it('a DiscoverResult naming only legacy revisions means legacy, offering the newest of them', () => {
    const v = discoverVerdict(discoverResult({ supportedVersions: ['2025-03-26', '2025-06-18'] }), OFFERED, false);
    expect(v).toEqual(expect.objectContaining({ kind: 'legacy', legacyVersions: ['2025-06-18', '2025-03-26'] }));
  });

  it('a DiscoverResult with nothing in common is an error', () => {
    expect(discoverVerdict(discoverResult({ supportedVersions: ['2031-01-01'] }), OFFERED, false).kind).toBe('no-common');
    expect(discoverVerdict(discoverResult({ supportedVersions: [] }), OFFERED, false).kind).toBe('no-common');
  });

  // The -32022 rule (docs/decisions.md): retry once, at the newest offered version `supported` names — even
  // the one just sent — and a second -32022 for the same request is final.
  it('-32022 naming a mutual version means retry with it, the newest mutual one', () => {
    const v = discoverVerdict(err(-32022, { supported: ['2026-07-28'], requested: '2027-03-01' }), ['2027-03-01', '2026-07-28'], false);
    expect(v).toMatchObject({ kind: 'retry', version: '2026-07-28' });
    const both = discoverVerdict(
      err(-32022, { supported: ['2026-07-28', '2027-03-01'], requested: '2028-01-01' }),
      ['2028-01-01', '2027-03-01', '2026-07-28'],
      false,
    );
    expect(both).toMatchObject({ kind: 'retry', version: '2027-03-01' });
  });

  it('-32022 listing the very version it refused means retry with that version (the request-metadata scenario)', () => {
    const v = discoverVerdict(err(-32022, { supported: ['2026-07-28'], requested: '2026-07-28' }), OFFERED, false);
    expect(v).toMatchObject({ kind: 'retry', version: '2026-07-28', supported: ['2026-07-28'] });
  });

  it('a second -32022 for the same request is final, with an error that says so', () => {
    const v = discoverVerdict(err(-32022, { supported: ['2026-07-28'], requested: '2026-07-28' }), OFFERED, true);
    expect(v).toMatchObject({ kind: 'no-common', supported: ['2026-07-28'] });
    expect(v.why).toMatch(/again after its one retry.*final/);
    // Also when the retry went to another version than the first choice.
    const other = discoverVerdict(err(-32022, { supported: ['2026-07-28'], requested: '2026-07-28' }), ['2027-03-01', '2026-07-28'], true);
    expect(other.kind).toBe('no-common');
  });

  it('-32022 whose supported names only legacy revisions means legacy, whether or not it answered the retry', () => {
    for (const retried of [false, true]) {
      const v = discoverVerdict(err(-32022, { supported: ['2025-06-18'] }), OFFERED, retried);
      expect(v).toMatchObject({ kind: 'legacy', legacyVersions: ['2025-06-18'] });
    }
  });

  it('-32022 naming only revisions mcpx does not speak is "no common version"', () => {
    const v = discoverVerdict(err(-32022, { supported: ['2031-01-01'] }), OFFERED, false);
    expect(v).toMatchObject({ kind: 'no-common', supported: ['2031-01-01'] });
  });

  it('-32022 without a supported list is a modern error', () => {
    expect(discoverVerdict(err(-32022), OFFERED, false).kind).toBe('modern-error');
  });

  it.each([-32020, -32021])('%i is a modern error: never fall back', (code) => {
    expect(discoverVerdict(err(code), OFFERED, false).kind).toBe('modern-error');
  });

  it.each([-32601, -32602, -32000, -32001, -32603, 1])('any other error (%i) means legacy', (code) => {
    expect(discoverVerdict(err(code), OFFERED, false).kind).toBe('legacy');
  });

  it.each([
    ['{}', {}],
    ['null', null],
    ['a string', 'ok'],
    ['an array', []],
    ['supportedVersions not an array', { supportedVersions: '2026-07-28' }],
  ])('a success that is not a DiscoverResult (%s) means legacy', (_, result) => {
    expect(discoverVerdict({ result }, OFFERED, false).kind).toBe('legacy');
  });
});

describe('initialize verdicts (docs/behaviour.md §3, last paragraph)', () => {
  it.each(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])('accepts legacy revision %s', (version) => {
    const v = initializeVerdict({ result: { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'x', version: '1' } } });
    expect(v).toMatchObject({ kind: 'legacy', version, serverInfo: { name: 'x' } });
  });

  it.each(['1999-01-01', '2026-07-28', '2024-10-07'])('refuses a revision mcpx does not speak (%s)', (version) => {
    expect(initializeVerdict({ result: { protocolVersion: version } })).toMatchObject({ kind: 'bad-version', version });
  });

  it('a success without protocolVersion is malformed', () => {
    expect(initializeVerdict({ result: {} }).kind).toBe('malformed');
  });

  it('any JSON-RPC error to initialize is a refusal (discover decides what comes next), never fatal by itself', () => {
    expect(initializeVerdict(err(-32022, { supported: ['2026-07-28'] }))).toMatchObject({ kind: 'refused', code: -32022 });
    expect(initializeVerdict(err(-32602))).toMatchObject({ kind: 'refused', code: -32602 });
    expect(isFatal(initializeVerdict(err(-32602)))).toBe(false);
  });
});

describe('HTTP failures (docs/behaviour.md §4)', () => {
  const failure = (kind: HttpFailure['kind'], status?: number): { failure: HttpFailure } => ({
    failure: { kind, message: 'm', ...(status ? { status } : {}) },
  });

  it('401/403 are never era evidence: both requests fail the session as unauthorized', () => {
    for (const status of [401, 403]) {
      expect(discoverVerdict(failure('unauthorized', status), OFFERED, false)).toMatchObject({
        kind: 'unauthorized',
        fails: { code: 'MCPX_UPSTREAM_UNAUTHORIZED' },
      });
      expect(initializeVerdict(failure('unauthorized', status))).toMatchObject({ kind: 'unauthorized', fails: { code: 'MCPX_UPSTREAM_UNAUTHORIZED' } });
    }
  });

  it("an unauthorized failure says what its credential's hint says (run `mcpx login NAME`), else to check the headers", () => {
    const hinted = { failure: { kind: 'unauthorized', status: 401, message: 'm', hint: 'remote needs authorization: run `mcpx login remote`' } as HttpFailure };
    expect(discoverVerdict(hinted, OFFERED, false)).toMatchObject({ why: expect.stringContaining('; remote needs authorization: run `mcpx login remote`') });
    expect(initializeVerdict(failure('unauthorized', 401))).toMatchObject({ why: expect.stringContaining("check the server's headers") });
  });

  it('5xx and no connection conclude nothing: unavailable', () => {
    expect(discoverVerdict(failure('status', 503), OFFERED, false)).toMatchObject({ kind: 'unavailable', fails: { code: 'MCPX_UPSTREAM_UNAVAILABLE' } });
    expect(discoverVerdict(failure('connection'), OFFERED, false)).toMatchObject({ kind: 'unavailable' });
    expect(initializeVerdict(failure('status', 500))).toMatchObject({ kind: 'unavailable', fails: { code: 'MCPX_UPSTREAM_UNAVAILABLE' } });
  });

  it('any other 4xx to discover without a modern JSON-RPC error falls back to initialize', () => {
    for (const status of [400, 404, 405, 422]) expect(discoverVerdict(failure('status', status), OFFERED, false)).toMatchObject({ kind: 'legacy' });
  });

  it('a bare 400/404/405 to initialize is an old HTTP+SSE server; another 4xx is a plain refusal', () => {
    for (const status of [400, 404, 405]) expect(initializeVerdict(failure('status', status))).toMatchObject({ kind: 'http-refused', status });
    expect(initializeVerdict(failure('status', 422))).toMatchObject({ kind: 'refused' });
  });
});

describe('verdicts that end the probe carry how they fail', () => {
  it('modern errors, no common version and unusable initialize answers fail with their codes; the rest do not', () => {
    expect(discoverVerdict(err(-32020), OFFERED, false)).toMatchObject({ fails: { code: 'MCPX_MODERN_PROTOCOL_ERROR' } });
    expect(discoverVerdict(discoverResult({ supportedVersions: ['2099-01-01'] }), OFFERED, false)).toMatchObject({
      kind: 'no-common',
      fails: { code: 'MCPX_NO_COMMON_VERSION' },
    });
    expect(initializeVerdict({ result: { protocolVersion: '1999-01-01' } })).toMatchObject({
      kind: 'bad-version',
      fails: { code: 'MCPX_UNSUPPORTED_LEGACY_VERSION' },
    });
    expect(isFatal(discoverVerdict(discoverResult(), OFFERED, false))).toBe(false);
    expect(isFatal(discoverVerdict(err(-32601), OFFERED, false))).toBe(false);
    expect(isFatal(initializeVerdict({ result: { protocolVersion: '2025-11-25' } }))).toBe(false);
  });
});

describe('the -32022 rule for ordinary modern requests (versionRefusal)', () => {
  const refusal = (data?: unknown) => ({ code: -32022, message: 'Unsupported protocol version', ...(data === undefined ? {} : { data }) });

  it('retries once at the newest offered version the server lists, even the one just sent', () => {
    expect(versionRefusal('tools/list', refusal({ supported: ['2026-07-28'], requested: '2026-07-28' }), OFFERED, false)).toMatchObject({
      kind: 'retry',
      version: '2026-07-28',
    });
    expect(versionRefusal('tools/list', refusal({ supported: ['2026-07-28', '2027-03-01'] }), ['2027-03-01', '2026-07-28'], false)).toMatchObject({
      kind: 'retry',
      version: '2027-03-01',
    });
  });

  it('never a second retry: the refusal of the retry is final, naming the method', () => {
    const v = versionRefusal('tools/call', refusal({ supported: ['2026-07-28'], requested: '2026-07-28' }), OFFERED, true);
    expect(v).toMatchObject({ kind: 'final', supported: ['2026-07-28'] });
    expect(v.why).toContain('tools/call at 2026-07-28 got -32022 again');
  });

  it('nothing mcpx speaks is final at once; only legacy revisions is legacy-only; no list is malformed', () => {
    expect(versionRefusal('tools/list', refusal({ supported: ['2031-01-01'] }), OFFERED, false)).toMatchObject({ kind: 'final', supported: ['2031-01-01'] });
    expect(versionRefusal('tools/list', refusal({ supported: ['2025-11-25', '2025-06-18'] }), OFFERED, false)).toMatchObject({
      kind: 'legacy-only',
      legacyVersions: ['2025-11-25', '2025-06-18'],
    });
    expect(versionRefusal('tools/list', refusal(), OFFERED, false).kind).toBe('malformed');
    expect(versionRefusal('tools/list', refusal({ supported: '2026-07-28' }), OFFERED, false).kind).toBe('malformed');
  });
});
