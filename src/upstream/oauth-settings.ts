/**
 * A server's `oauth` object, read with Claude Code's own keys (`clientId`, `callbackPort`,
 * `authServerMetadataUrl`, `scopes`) plus mcpx's `clientSecret` and `clientMetadataUrl`. Every key is
 * optional: with none, everything is discovered. `oauth: false` turns authorization off.
 */
import { didYouMean } from '../did-you-mean.js';

export interface OAuthSettings {
  /** A pre-registered client; with it, no registration is made. */
  clientId?: string;
  /** The pre-registered client's secret (a secret: never shown). */
  clientSecret?: string;
  /** The loopback port the login's redirect lands on; taken means a clear error, never another port. */
  callbackPort?: number;
  /** The authorization server's metadata, when discovery from the MCP server cannot find it. */
  authServerMetadataUrl?: string;
  /** Space-separated scopes that replace the discovered ones. */
  scopes?: string;
  /** An https client ID metadata document URL, used as the client id where the server supports it. */
  clientMetadataUrl?: string;
}

export const OAUTH_KEYS = ['clientId', 'clientSecret', 'callbackPort', 'authServerMetadataUrl', 'scopes', 'clientMetadataUrl'] as const;

type Problem = (path: Array<string | number>, message: string) => void;

/**
 * Checks one `oauth` value. `expand` applies the config's `${VAR}` rules to a string; what it expands is a
 * secret (blanked wherever it shows) unless `secret` is false. Only `clientSecret` is: the others go to the
 * authorization server in the browser's address, and blanking them there would break the login. Problems name
 * the key under `at`.
 */
export function parseOAuthSettings(
  raw: unknown,
  at: Array<string | number>,
  problem: Problem,
  warn: Problem,
  expand: (path: Array<string | number>, value: string, secret?: boolean) => string,
): OAuthSettings | false | undefined {
  if (raw === undefined) return undefined;
  if (raw === false) return false;
  if (raw === true) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problem(at, `must be an object with any of ${OAUTH_KEYS.join(', ')}, or false to turn authorization off`);
    return undefined;
  }
  const out: OAuthSettings = {};
  const entry = raw as Record<string, unknown>;
  const text = (key: (typeof OAUTH_KEYS)[number]): string | undefined => {
    const v = entry[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.trim() === '') {
      // A secret's value is never quoted.
      problem([...at, key], key === 'clientSecret' ? 'must be a non-empty string' : `${JSON.stringify(v)} is not a non-empty string`);
      return undefined;
    }
    return expand([...at, key], v.trim(), key === 'clientSecret');
  };
  const url = (key: 'authServerMetadataUrl' | 'clientMetadataUrl', httpsOnly: boolean): string | undefined => {
    const v = text(key);
    if (v === undefined) return undefined;
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      problem([...at, key], `${JSON.stringify(v)} is not a URL`);
      return undefined;
    }
    if (u.protocol !== 'https:' && (httpsOnly || u.protocol !== 'http:')) {
      problem([...at, key], `${JSON.stringify(v)} must be an ${httpsOnly ? 'https://' : 'http:// or https://'} URL`);
      return undefined;
    }
    if (httpsOnly && (u.pathname === '' || u.pathname === '/')) {
      problem([...at, key], `${JSON.stringify(v)} must have a path (a client ID metadata document is a file, e.g. https://example.com/mcpx.json)`);
      return undefined;
    }
    return v;
  };
  for (const k of Object.keys(entry)) {
    if (!(OAUTH_KEYS as readonly string[]).includes(k))
      warn([...at, k], `is not an oauth key mcpx reads and is ignored${didYouMean(k, OAUTH_KEYS)} (known: ${OAUTH_KEYS.join(', ')})`);
  }
  const clientId = text('clientId');
  if (clientId !== undefined) out.clientId = clientId;
  const clientSecret = text('clientSecret');
  if (clientSecret !== undefined) {
    if (clientId === undefined) problem([...at, 'clientSecret'], 'needs "clientId": a secret belongs to a pre-registered client');
    else out.clientSecret = clientSecret;
  }
  if (entry['callbackPort'] !== undefined) {
    const p = entry['callbackPort'];
    const n = typeof p === 'string' && /^\d+$/.test(p.trim()) ? Number(p) : p;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535) problem([...at, 'callbackPort'], `${JSON.stringify(p)} is not a port (1–65535)`);
    else out.callbackPort = n;
  }
  const metadata = url('authServerMetadataUrl', false);
  if (metadata !== undefined) out.authServerMetadataUrl = metadata;
  const scopes = text('scopes');
  if (scopes !== undefined) out.scopes = scopes.split(/\s+/).filter(Boolean).join(' ');
  const cimd = url('clientMetadataUrl', true);
  if (cimd !== undefined) out.clientMetadataUrl = cimd;
  return out;
}
