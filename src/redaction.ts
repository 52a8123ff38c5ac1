/**
 * How mcpx shows a secret it must not show: one mark, and one rule for secrets in URLs, used by the
 * config loader (`mcpx config`, config errors), the HTTP transports (errors and logs) and the daemon's
 * scrubber alike.
 */

/** What replaces a secret wherever one is shown. */
export const REDACTED = '<redacted>';

/** Query parameters whose values are treated as secrets in a URL (`api_key`, `token`, `sessionId`, …). */
export const SECRET_PARAM = /key|token|secret|pass|auth|sig|cred|session/i;
/** In a text that does not parse as a URL: `name=value` after `?`, `&` or `;`, for a secret-looking name. */
const SECRET_PARAM_TEXT = /([?&;][^=&;#\s]*(?:key|token|secret|pass|auth|sig|cred|session)[^=&;#\s]*=)[^&;#\s"']*/gi;
const MARK = 'mcpx-redacted-0c5e1f';

/**
 * The URL with its userinfo (user name and password: `https://TOKEN@host` carries a token as the user
 * name), and the values of query parameters named like secrets, replaced by
 * `<redacted>`. A text that is not a URL (a bad port, a typo) gets the same treatment by pattern: it is shown
 * in config errors, and a secret in it must not be.
 */
export function redactUrl(url: string | URL): string {
  const text = typeof url === 'string' ? url : url.href;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return text.replace(/\/\/[^/@\s]+@/, `//${REDACTED}@`).replace(SECRET_PARAM_TEXT, `$1${REDACTED}`);
  }
  let changed = false;
  if (u.username !== '' || u.password !== '') {
    // One mark for the whole userinfo: that a credential is set shows, not how it is split.
    u.username = MARK;
    u.password = '';
    changed = true;
  }
  for (const k of [...new Set(u.searchParams.keys())]) {
    if (SECRET_PARAM.test(k)) {
      u.searchParams.set(k, MARK);
      changed = true;
    }
  }
  return changed ? u.toString().replaceAll(MARK, REDACTED) : text;
}
