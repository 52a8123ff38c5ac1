/**
 * What of an actor's context and events may leave the daemon for an inspector: no env, no headers, no
 * tokens or other secrets. Keys that name a secret (env, headers, authorization, token, password, …)
 * are replaced by `<redacted>` wherever they sit, every string passes the daemon's secret scrubber
 * (which knows the configured env and header values and the daemon's token), and long strings, deep
 * objects and long arrays are cut, so an upstream's large answer never floods the inspector.
 */

/** Keys whose values are never sent, at any depth (case-insensitive). */
export const SENSITIVE_KEY =
  /^(env|headers?|authorization|proxy-authorization|cookie|set-cookie|token|access_?token|refresh_?token|secret|client_?secret|password|passwd|api[-_]?key|credentials?|definition)$/i;

export interface SanitizeOptions {
  scrub?: (text: string) => string;
  maxString?: number;
  maxDepth?: number;
  maxArray?: number;
  maxKeys?: number;
}

export function sanitize(value: unknown, opts: SanitizeOptions = {}): unknown {
  const scrub = opts.scrub ?? ((t: string) => t);
  const maxString = opts.maxString ?? 500;
  const maxDepth = opts.maxDepth ?? 6;
  const maxArray = opts.maxArray ?? 50;
  const maxKeys = opts.maxKeys ?? 100;
  const seen = new WeakSet<object>();
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') {
      const s = scrub(v);
      return s.length > maxString ? `${s.slice(0, maxString - 1)}…` : s;
    }
    if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return v;
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'function' || typeof v === 'symbol') return undefined;
    if (typeof v !== 'object') return undefined;
    if (seen.has(v)) return '[circular]';
    if (depth >= maxDepth) return '…';
    seen.add(v);
    try {
      if (v instanceof Error)
        return { name: v.name, message: walk(v.message, depth + 1), ...('code' in v ? { code: walk((v as { code: unknown }).code, depth + 1) } : {}) };
      if (Array.isArray(v)) {
        const items = v.slice(0, maxArray).map((x) => walk(x, depth + 1));
        if (v.length > maxArray) items.push(`… ${v.length - maxArray} more`);
        return items;
      }
      // actor refs (a pool's children, a ref kept in context): their id only
      if ('sessionId' in v && 'send' in v && typeof (v as { send: unknown }).send === 'function') return { actor: walk((v as { id?: unknown }).id, depth + 1) };
      const out: Record<string, unknown> = {};
      let n = 0;
      for (const [k, x] of Object.entries(v)) {
        if (n++ >= maxKeys) {
          out['…'] = `${Object.keys(v).length - maxKeys} more keys`;
          break;
        }
        out[k] = SENSITIVE_KEY.test(k) ? '<redacted>' : walk(x, depth + 1);
      }
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(value, 0);
}

/** An event for an inspector: its type, and the rest sanitized. */
export function sanitizeEvent<E extends { type: string }>(event: E, opts: SanitizeOptions = {}): E {
  const out = sanitize(event, opts) as E;
  return { ...out, type: event.type };
}
