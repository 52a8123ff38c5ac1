/** mcpx's own request headers on the daemon's API (kept apart from the schemas, so a client needs no zod to name them). */

/** The caller's MCP revision: picks the lane under `follow`. */
export const CALLER_PROTOCOL_HEADER = 'x-mcpx-caller-protocol';
/**
 * The config the caller means (an absolute path; the CLI sends the config it resolved): its servers are the
 * ones the request names and sees. Absent: the daemon's own config.
 */
export const CONFIG_HEADER = 'x-mcpx-config';
/** The caller's session: the scope key under `scope: session`. */
export const SESSION_HEADER = 'x-mcpx-session';

/**
 * `mcpx serve`'s stream on the daemon's Unix socket: `GET` this path with `Connection: Upgrade` and
 * `Upgrade: <MCP_STREAM_UPGRADE>` (query: `passthrough`, `servers`, `session`, `config`, `tools`, `allowTools`, `denyTools`); after `101` the socket
 * carries the client's newline-delimited JSON-RPC both ways (src/api/serve-upgrade.ts).
 */
export const MCP_STREAM_PATH = '/v1/mcp-stream';
export const MCP_STREAM_UPGRADE = 'mcp-stdio';
