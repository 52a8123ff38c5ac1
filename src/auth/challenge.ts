/**
 * `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9728 §5.1): the parameters of the Bearer (or DPoP)
 * challenge a protected MCP server answers with. A small parser of auth-params, so reading a challenge on
 * every 401 never loads the OAuth client.
 */
export interface BearerChallenge {
  error?: string;
  scope?: string;
  resourceMetadata?: string;
  errorDescription?: string;
}

/** The Bearer/DPoP challenge's parameters; an empty object when there is none. */
export function parseChallenge(header: string | undefined): BearerChallenge {
  if (!header) return {};
  const m = /(?:^|,|\s)(Bearer|DPoP)\s+/i.exec(header);
  if (!m) return {};
  const rest = header.slice(m.index + m[0].length);
  const params: Record<string, string> = {};
  const re = /\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*(?:,|$)/y;
  let at = 0;
  while (at < rest.length) {
    re.lastIndex = at;
    const p = re.exec(rest);
    if (!p) break;
    const key = p[1]!.toLowerCase();
    // The next scheme starts ("…, Basic realm=…"): this challenge has ended.
    params[key] ??= p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? '');
    at = re.lastIndex;
  }
  return {
    ...(params['error'] ? { error: params['error'] } : {}),
    ...(params['scope'] ? { scope: params['scope'] } : {}),
    ...(params['resource_metadata'] ? { resourceMetadata: params['resource_metadata'] } : {}),
    ...(params['error_description'] ? { errorDescription: params['error_description'] } : {}),
  };
}

/** Scopes as a set (space-separated, RFC 6749 §3.3). */
export const scopeSet = (scope: string | undefined): Set<string> => new Set((scope ?? '').split(/\s+/).filter(Boolean));

/** The union of scope strings, in first-seen order; undefined when empty. */
export function scopeUnion(...scopes: Array<string | undefined>): string | undefined {
  const out = new Set<string>();
  for (const s of scopes) for (const x of scopeSet(s)) out.add(x);
  return out.size === 0 ? undefined : [...out].join(' ');
}

/** Whether every scope of `inner` is in `outer`. */
export function scopeIncludes(outer: string | undefined, inner: string | undefined): boolean {
  const have = scopeSet(outer);
  return [...scopeSet(inner)].every((s) => have.has(s));
}
