/**
 * A server's own say over its tools, from its `mcpx` block (docs/serving.md, "Which tools are served"):
 *
 * - `tools: {allow?, deny?}`: globs on the tool's own name as the server lists it. A tool is served when
 *   it matches some `allow` glob (no `allow`: every tool) and no `deny` glob. `*` is any run of characters
 *   (none included), `?` exactly one; every other character is itself (case-sensitive, no classes, no
 *   escapes: tool names are `A-Z a-z 0-9 _ - .` in practice).
 * - `pin`: `true` (every served tool) or globs: those tools stay in every listing, whatever a front's
 *   tool strategy.
 * - `pinTools`: a tool whose definition changed since it was first seen is held until accepted
 *   (./tool-digests.ts); absent here, the `catalog.pinTools` setting decides.
 *
 * Pure functions; imports nothing, so the config check and `mcpx doctor` read it without the catalogue.
 */

export interface ToolFilter {
  allow?: readonly string[];
  deny?: readonly string[];
}

export interface ToolPolicy {
  tools?: ToolFilter;
  /** `true`: every tool; a list: the tools these globs match. */
  pin?: true | readonly string[];
  /** Hold changed tools (the effective value: the server's `mcpx.pinTools`, else `catalog.pinTools`). */
  pinTools?: boolean;
}

const compiled = new Map<string, RegExp>();

/** A glob as a RegExp over the whole name: `*` any run, `?` one character, the rest literal. */
export function globRegExp(glob: string): RegExp {
  let re = compiled.get(glob);
  if (!re) {
    const body = [...glob].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
    re = new RegExp(`^${body}$`, 's');
    compiled.set(glob, re);
  }
  return re;
}

export function globMatches(glob: string, name: string): boolean {
  return globRegExp(glob).test(name);
}

const anyMatches = (globs: readonly string[], name: string): boolean => globs.some((g) => globMatches(g, name));

/** Whether the server's filter lets this tool be served. */
export function toolAllowed(filter: ToolFilter | undefined, name: string): boolean {
  if (!filter) return true;
  if (filter.allow !== undefined && !anyMatches(filter.allow, name)) return false;
  return filter.deny === undefined || !anyMatches(filter.deny, name);
}

/** Why the filter refuses this tool (for the error a call gets), or undefined when it allows it. */
export function filterRefusal(filter: ToolFilter | undefined, name: string): string | undefined {
  if (!filter) return undefined;
  const denied = filter.deny?.find((g) => globMatches(g, name));
  if (denied !== undefined) return `mcpx.tools.deny ${JSON.stringify(denied)}`;
  if (filter.allow !== undefined && !anyMatches(filter.allow, name))
    return `no glob of mcpx.tools.allow (${filter.allow.map((g) => JSON.stringify(g)).join(', ')})`;
  return undefined;
}

/** Whether `pin` pins this tool. */
export function toolPinned(pin: ToolPolicy['pin'], name: string): boolean {
  return pin === true || (pin !== undefined && anyMatches(pin, name));
}

/** The globs of a policy (allow, deny, pin) that match none of `names`: worth a warning (a typo, or a tool the server no longer has). */
export function unmatchedGlobs(policy: ToolPolicy, names: readonly string[]): Array<{ key: 'tools.allow' | 'tools.deny' | 'pin'; glob: string }> {
  const out: Array<{ key: 'tools.allow' | 'tools.deny' | 'pin'; glob: string }> = [];
  const check = (key: 'tools.allow' | 'tools.deny' | 'pin', globs: readonly string[] | undefined) => {
    for (const glob of globs ?? []) if (!names.some((n) => globMatches(glob, n))) out.push({ key, glob });
  };
  check('tools.allow', policy.tools?.allow);
  check('tools.deny', policy.tools?.deny);
  check('pin', policy.pin === true ? undefined : policy.pin);
  return out;
}
