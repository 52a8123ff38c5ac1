/**
 * An item a server listed that mcpx does not serve (src/catalog/valid-listing.ts), and how it is named
 * to a person: by `mcpx tools`, `mcpx doctor`, the live page and the daemon log alike. Imports nothing,
 * so the CLI reads it without loading the checks.
 */
export type ListName = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface LeftOut {
  list: ListName;
  /** Its name (URI, URI template), or `#<index>` when it has none to show. */
  name: string;
  reason: string;
}

const WHAT: Record<ListName, string> = { tools: 'tool', prompts: 'prompt', resources: 'resource', resourceTemplates: 'resource template' };

/** One line: what it is, and why a client could not take it. */
export function describeLeftOut(l: LeftOut): string {
  return `${WHAT[l.list]} ${JSON.stringify(l.name)} is not served: ${l.reason}`;
}
