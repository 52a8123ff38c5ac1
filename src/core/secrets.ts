/**
 * Secrets the daemon knows (configured env values and header values, credentials in URLs, `${VAR}`
 * expansions, its own bearer token) and a scrubber that blanks them out of any text: every log line the daemon writes
 * and every /v1 response body go through it.
 *
 * This is defence in depth. Structurally nothing prints a definition unredacted (`redactConfig`
 * does that for /v1/servers and `mcpx config`); the scrubber catches what slips through anyway, e.g.
 * an upstream error message that quotes its own environment.
 *
 * Text mcpx cuts short (a stderr line, a log excerpt) ends in `…`; a secret cut there is no longer
 * whole, so the start of a known secret right before a `…` is blanked as well (from MIN_FRAGMENT
 * characters: a shorter tail says little, and blanking it would mangle ordinary words). The stdio
 * transport already redacts its own server's secrets before it cuts; this catches the others.
 */
import type { ResolvedServer } from '../config/config-file.js';
import { REDACTED, SECRET_PARAM } from '../redaction.js';
import { CUT_MARK, MIN_SECRET_LENGTH, secretFragmentAtEnd } from '../transports/secret-text.js';
import { isStdioDefinition } from '../upstream/definition.js';

/** The shortest start of a secret blanked before a cut mark. */
export const MIN_FRAGMENT = 3;

export class Scrubber {
  private secrets: string[] = [];
  private pattern: RegExp | null = null;
  /** Every secret and its JSON-escaped form, for the fragment check. */
  private variants: string[] = [];
  private readonly fixed = new Set<string>();
  /** Secrets that come and go while the daemon runs (OAuth tokens, client secrets), by owner. */
  private readonly dynamic = new Map<string, readonly string[]>();

  /** Adds a secret that stays for the life of the scrubber (the daemon's token). */
  addFixed(secret: string | undefined): void {
    if (secret && secret.length >= MIN_SECRET_LENGTH) {
      this.fixed.add(secret);
      this.rebuild(this.secrets);
    }
  }

  /** Replaces the secrets `owner` holds now (an empty list forgets them). */
  setDynamic(owner: string, secrets: readonly string[]): void {
    const kept = secrets.filter((s) => s.length >= MIN_SECRET_LENGTH);
    if (kept.length === 0) this.dynamic.delete(owner);
    else this.dynamic.set(owner, kept);
    this.rebuild(this.secrets);
  }

  /** Replaces the configured secrets (after a config load or reload). */
  setFromServers(servers: readonly ResolvedServer[]): void {
    this.rebuild(secretsOf(servers));
  }

  /** Whether there is any secret to blank (none: scrub returns every text as it is). */
  get active(): boolean {
    return this.pattern !== null;
  }

  /** Every known secret replaced by `<redacted>`, and so is the start of one cut short by a `…`. */
  scrub(text: string): string {
    if (this.pattern === null || text.length < MIN_SECRET_LENGTH) return text;
    this.pattern.lastIndex = 0;
    const whole = text.replace(this.pattern, REDACTED);
    return whole.includes(CUT_MARK) ? this.blankCutFragments(whole) : whole;
  }

  private blankCutFragments(text: string): string {
    const parts = text.split(CUT_MARK);
    for (let i = 0; i < parts.length - 1; i += 1) {
      const before = parts[i]!;
      const k = secretFragmentAtEnd(before, this.variants, MIN_FRAGMENT);
      if (k > 0) parts[i] = `${before.slice(0, before.length - k)}${REDACTED}`;
    }
    return parts.join(CUT_MARK);
  }

  /** Whether `text` contains a known secret. */
  leaks(text: string): boolean {
    if (this.pattern === null) return false;
    this.pattern.lastIndex = 0;
    return this.pattern.test(text);
  }

  private rebuild(configured: string[]): void {
    this.secrets = configured;
    const all = [...new Set([...this.fixed, ...configured, ...[...this.dynamic.values()].flat()])].filter((s) => s.length >= MIN_SECRET_LENGTH);
    // Longest first, so a secret that contains another is replaced whole.
    all.sort((a, b) => b.length - a.length);
    const variants = new Set<string>();
    for (const s of all) {
      variants.add(s);
      // How the secret reads inside JSON text (quotes and backslashes escaped).
      const json = JSON.stringify(s).slice(1, -1);
      if (json !== s) variants.add(json);
    }
    this.variants = [...variants];
    this.pattern = variants.size === 0 ? null : new RegExp([...variants].map(escapeRegExp).join('|'), 'g');
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The secret values of configured servers (docs/contract.md): every `env` value whatever its name
 * (`DATABASE_URL`, `GH` hold credentials as often as `API_KEY` does), the credentials inside one that is
 * a URL, every header value, a URL's user name and password, and whatever a `${VAR}` expansion put in.
 */
export function secretsOf(servers: readonly ResolvedServer[]): string[] {
  const out: string[] = [];
  const credentialsOf = (text: string): void => {
    try {
      const u = new URL(text);
      for (const part of [u.username, u.password]) if (part) out.push(decodeURIComponent(part), part);
      for (const [k, v] of u.searchParams) if (SECRET_PARAM.test(k) && v) out.push(v);
    } catch {
      // not a URL: nothing to take from it
    }
  };
  for (const s of servers) {
    const def = s.definition;
    for (const v of s.expanded ?? []) out.push(v);
    if (isStdioDefinition(def)) {
      for (const v of Object.values(def.env ?? {})) {
        out.push(v);
        if (v.includes('://')) credentialsOf(v);
      }
    } else {
      for (const v of Object.values(def.headers ?? {})) {
        out.push(v);
        // `Bearer abc…`: the credential alone, too.
        const m = /^\s*\S+\s+(\S.*)$/.exec(v);
        if (m?.[1]) out.push(m[1]);
      }
      if (def.oauth && def.oauth.clientSecret) out.push(def.oauth.clientSecret);
      credentialsOf(def.url);
      try {
        // user info becomes a Basic header (src/transports/http-channel-base.ts): its encoded form too.
        const u = new URL(def.url);
        if (u.username || u.password) out.push(Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`, 'utf8').toString('base64'));
      } catch {
        // not a URL
      }
    }
  }
  return out.filter((v) => v.length >= MIN_SECRET_LENGTH);
}
