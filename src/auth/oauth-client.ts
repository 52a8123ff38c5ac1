/**
 * The official MCP SDK's OAuth client helpers, loaded by the first login or refresh: a daemon whose servers
 * never ask for authorization never loads them. Every request they make goes through Node's own fetch, whose
 * Response is the one the helpers test for (undici's npm fetch is not, and turns every OAuth error into
 * `server_error`).
 */
export type OAuthClient = typeof import('@modelcontextprotocol/client');

let loading: Promise<OAuthClient> | undefined;
export const loadOAuthClient = (): Promise<OAuthClient> => (loading ??= import('@modelcontextprotocol/client'));

/** The fetch the helpers use: the global one, on loopback and the network alike. */
export const oauthFetch = (input: string | URL, init?: RequestInit): Promise<Response> => fetch(input, init);
