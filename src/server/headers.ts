/** mcpx's own request headers on the daemon's API (kept apart from the schemas, so a client needs no zod to name them). */

/** The caller's MCP revision: picks the lane under `follow`. */
export const CALLER_PROTOCOL_HEADER = 'x-mcpx-caller-protocol';
/** The caller's session: the scope key under `scope: session`. */
export const SESSION_HEADER = 'x-mcpx-session';
