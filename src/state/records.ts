/**
 * The records the state files keep, in one module: the era cache's (src/upstream/era-cache.ts) and the
 * tool catalogue's (src/catalog/catalog-store.ts). Their checks (./record-checks.ts) and their stores both
 * import them from here.
 */
import type { WireTransport } from '../transports/capabilities.js';

export interface EraRecord {
  era: 'legacy' | 'modern';
  /** The negotiated protocol revision. */
  version: string;
  /** When it was learned, ISO 8601. */
  at: string;
  /** How it was learned. */
  source: 'probe' | 'cache' | (string & {});
  /** The legacy-only wire that answered (HTTP+SSE), where the next start begins; the file holds only HTTP wires. */
  transport?: WireTransport;
  /**
   * `refused`: a modern server that refused initialize (or died on it). Lets prefer-initialize skip a
   * doomed initialize; without it a cached modern era says nothing about the server's legacy side.
   */
  initialize?: 'refused';
}

/** One listed tool, prompt, resource or template: a plain JSON object as the upstream sent it. */
export type CatalogItem = Record<string, unknown>;

export interface CatalogRecord {
  /** When it was listed, ISO 8601. */
  at: string;
  /** The era the listing was made in. */
  era?: 'legacy' | 'modern';
  /** Each has a string `name`. */
  tools: CatalogItem[];
  /** Each has a string `name`. */
  prompts?: CatalogItem[];
  /** Each has a string `uri`. */
  resources?: CatalogItem[];
  /** Each has a string `uriTemplate`. */
  resourceTemplates?: CatalogItem[];
  capabilities?: Record<string, unknown>;
  serverInfo?: Record<string, unknown>;
  instructions?: string;
}

/** The three parts of a tool's definition a digest is kept of (src/catalog/tool-digests.ts): each a sha256, hex. */
export interface ToolDigestParts {
  /** `description` and `title`. */
  description: string;
  /** `inputSchema` and `outputSchema`. */
  schema: string;
  annotations: string;
}

/** One tool's definition as approved (first seen, or accepted), and the one listed now when it differs. */
export interface ToolDigest {
  /** sha256 (hex) of the canonical JSON of description, title, inputSchema, outputSchema and annotations. */
  digest: string;
  parts: ToolDigestParts;
  /** When it was first seen, or accepted (ISO 8601). */
  at: string;
  /** The definition listed since `at` that differs from the approved one; `at` here: when the difference was first seen. */
  changed?: { digest: string; parts: ToolDigestParts; at: string };
}

/** The digests of one server definition's tools on one lane (the catalogue's key), by the tool's own name. */
export interface DigestRecord {
  tools: Record<string, ToolDigest>;
}
