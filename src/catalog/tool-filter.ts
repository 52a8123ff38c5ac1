/**
 * Which tools an entry shows (`mcpx serve --allow-tools/--deny-tools`, `/mcp?allowTools=&denyTools=`):
 * globs on the names its callers see (`*` any run of characters, `?` one), matched whole and
 * case-sensitively, as tool names are. A tool is shown when it matches an allow glob (or none is given)
 * and no deny glob. A denied tool is absent from the entry's listings and search, and refused on call.
 */
import { isObject } from '../is-object.js';

export interface ToolGlobs {
  allow?: readonly string[];
  deny?: readonly string[];
}

/** `a,b` and repeated values alike, as a list of globs (empty ones dropped). */
export function globList(values: ReadonlyArray<string | undefined> | string | undefined): string[] {
  const all = typeof values === 'string' ? [values] : (values ?? []);
  return all
    .flatMap((v) => (v ?? '').split(','))
    .map((g) => g.trim())
    .filter((g) => g.length > 0);
}

const compiled = new Map<string, RegExp>();

function globRegExp(glob: string): RegExp {
  let re = compiled.get(glob);
  if (!re) {
    re = new RegExp(
      `^${glob
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
      's',
    );
    if (compiled.size > 1_000) compiled.clear();
    compiled.set(glob, re);
  }
  return re;
}

export const matchesGlob = (name: string, glob: string): boolean => globRegExp(glob).test(name);

/** Whether an entry with these globs shows the tool its callers know as `exposed`. */
export function toolShown(globs: ToolGlobs | undefined, exposed: string): boolean {
  if (!globs) return true;
  if (globs.allow && globs.allow.length > 0 && !globs.allow.some((g) => matchesGlob(exposed, g))) return false;
  return !(globs.deny ?? []).some((g) => matchesGlob(exposed, g));
}

/** A stable key for a set of globs (what an entry's views and search index are kept under). */
export function globsKey(globs: ToolGlobs | undefined): string {
  if (!globs) return '';
  return JSON.stringify([[...(globs.allow ?? [])].sort(), [...(globs.deny ?? [])].sort()]);
}

/**
 * A tool meant for an MCP App alone (`_meta.ui.visibility` without `"model"`): a host keeps it from its
 * model, and mcpx never offers it as a search result.
 */
export function appOnlyTool(tool: Record<string, unknown>): boolean {
  const meta = tool['_meta'];
  const ui = isObject(meta) ? meta['ui'] : undefined;
  const visibility = isObject(ui) ? ui['visibility'] : undefined;
  return Array.isArray(visibility) && !visibility.includes('model');
}
