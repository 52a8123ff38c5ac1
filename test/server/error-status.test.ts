/**
 * Each error code means one thing, and /v1 answers it with one status: a client that lacks the daemon's
 * token gets 401; an upstream that refused mcpx is not the client's auth problem and must not look like one.
 */
import { describe, expect, it } from 'vitest';
import { statusFor, toApiError } from '../../src/api/api-errors.js';
import { UnauthorizedError } from '../../src/transports/http-errors.js';
import { McpxError } from '../../src/errors.js';

describe('error codes → HTTP status', () => {
  it('the daemon token (MCPX_UNAUTHORIZED) is 401; an upstream 401 (MCPX_UPSTREAM_UNAUTHORIZED) is not', () => {
    expect(statusFor('MCPX_UNAUTHORIZED')).toBe(401);
    const upstream = new UnauthorizedError({ status: 401, url: 'http://127.0.0.1:1/mcp', method: 'tools/call', body: '' });
    expect(upstream.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
    expect(toApiError(upstream).status).toBe(500);
  });

  it('caller mistakes are 4xx, upstream and daemon failures 5xx, unknown codes 500', () => {
    expect(statusFor('MCPX_BAD_REQUEST')).toBe(400);
    expect(statusFor('MCPX_UNKNOWN_SERVER')).toBe(404);
    expect(statusFor('MCPX_TOO_MANY_ASKS')).toBe(429);
    expect(statusFor('MCPX_SHUTTING_DOWN')).toBe(503);
    expect(statusFor('MCPX_START_TIMEOUT')).toBe(500);
    expect(statusFor('MCPX_SOCKET_CONFLICT')).toBe(500);
    expect(statusFor('MCPX_NO_SUCH_CODE')).toBe(500);
    expect(statusFor('toString')).toBe(500);
    expect(toApiError(new McpxError('MCPX_CONNECT_TIMEOUT', 'x')).status).toBe(500);
  });
});
