/**
 * Wire constants of MCP that the transports and the machines both need (the MCP specification,
 * modelcontextprotocol.io/specification). They live here, outside src/machines, so transports can use
 * them without importing the code that decides eras.
 */

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
