/**
 * Builders for the MCP messages mcpx sends, in each era: the 2026-07-28 per-request `_meta` envelope
 * (protocol version, client capabilities, client info) and the 2025-11-25 `initialize` handshake.
 * Pure functions: no I/O, no era decisions (the caller says which era to build for).
 */
import { packageVersion } from '../package-info.js';
import { META } from '../protocol/constants.js';

export const MCPX_VERSION = packageVersion();
export const CLIENT_INFO = { name: 'mcpx', version: MCPX_VERSION } as const;

export type ClientCapabilities = Record<string, unknown>;

/** The per-request `_meta` envelope of a 2026-07-28 request. */
export function modernMeta(version: string, capabilities: ClientCapabilities = {}, extra?: Record<string, unknown>): Record<string, unknown> {
  return {
    ...extra,
    [META.protocolVersion]: version,
    [META.clientCapabilities]: capabilities,
    [META.clientInfo]: CLIENT_INFO,
  };
}

/** `server/discover` params: nothing but the full `_meta`. */
export function discoverParams(version: string, capabilities: ClientCapabilities = {}): Record<string, unknown> {
  return { _meta: modernMeta(version, capabilities) };
}

/** `initialize` params (2025-11-25 shape; older revisions accept the same fields). */
export function initializeParams(version: string, capabilities: ClientCapabilities = {}): Record<string, unknown> {
  return { protocolVersion: version, capabilities, clientInfo: CLIENT_INFO };
}

/**
 * Params of an ordinary request in an era. Modern requests carry the `_meta` envelope (merged with any
 * `_meta` the caller gave); legacy requests carry no envelope. `meta` adds request-level `_meta` keys
 * in both eras (e.g. `progressToken`, legal in every revision); the envelope keys always win.
 */
export function requestParams(
  era: 'modern' | 'legacy',
  version: string,
  params: Record<string, unknown> | undefined,
  capabilities: ClientCapabilities = {},
  meta?: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const callerMeta = params && typeof params._meta === 'object' && params._meta !== null ? (params._meta as Record<string, unknown>) : undefined;
  const extra = meta === undefined ? callerMeta : { ...callerMeta, ...meta };
  if (era === 'legacy') return meta === undefined ? params : { ...params, _meta: extra };
  return { ...params, _meta: modernMeta(version, capabilities, extra) };
}
