/**
 * Protocol revisions mcpx speaks, newest first. The wire facts behind them are in
 * the MCP specification (modelcontextprotocol.io/specification).
 */
export const MODERN_VERSIONS = ['2026-07-28'] as const;
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

export const NEWEST_MODERN = MODERN_VERSIONS[0];
export const NEWEST_LEGACY = LEGACY_VERSIONS[0];

export type Era = 'modern' | 'legacy';

export function isLegacyVersion(v: unknown): v is string {
  return typeof v === 'string' && (LEGACY_VERSIONS as readonly string[]).includes(v);
}

/** A revision string is legacy when it sorts before the first modern revision (dates sort as strings). */
export function eraOfRevision(v: string): Era {
  return v < '2026-07-28' ? 'legacy' : 'modern';
}

/** `_meta` keys of a 2026-07-28 request and result (the MCP specification). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
} as const;

/** JSON-RPC error codes mcpx reads or sends: the modern ones (the MCP specification) and standard JSON-RPC ones. */
export const RPC = {
  headerMismatch: -32020,
  missingClientCapability: -32021,
  unsupportedProtocolVersion: -32022,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;
