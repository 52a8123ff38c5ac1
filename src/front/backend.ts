/**
 * What the MCP front (./front.ts) needs from the daemon: the catalogue, one request on one server,
 * changes to announce, and questions. The front lives in the daemon for every caller (`/mcp` and each
 * `mcpx serve` stream), so one implementation serves it: the controller itself (./controller-backend.ts).
 * The front decides nothing about upstream eras; it names things, routes each request to its server, and
 * speaks the caller's era.
 */
import type { LeftOut } from '../catalog/left-out.js';
import type { Lane } from '../machines/preference.js';

export type CatalogItem = Record<string, unknown>;

/** What one server offers, for the lane the caller's era selects. */
export interface ServerCatalog {
  server: string;
  lane: Lane;
  /**
   * Where the listing came from: `live` (listed from a running instance in this daemon's lifetime),
   * `catalog` (the persisted catalogue, written by an earlier run: it may be stale), `none` (nothing
   * could be listed: see `error`).
   */
  source: 'live' | 'catalog' | 'none';
  /** When it was listed (ISO 8601). */
  at?: string;
  tools: CatalogItem[];
  prompts: CatalogItem[];
  resources: CatalogItem[];
  resourceTemplates: CatalogItem[];
  /** Items the server listed that no client SDK would take (src/catalog/valid-listing.ts): not served. */
  leftOut?: LeftOut[];
  error?: { code: string; message: string; data?: Record<string, unknown> };
  /** The extensions the server offers (its `capabilities.extensions`, SEP-2133), when it offers any. */
  extensions?: Record<string, unknown>;
}

export interface CatalogView {
  /** Every configured, enabled server, in config order (the order names are given in). */
  servers: ServerCatalog[];
}

export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

/** Who is asking: what the pool needs to pick the lane and scope key, and how to reach the caller. */
export interface RelayContext {
  /** The caller's MCP revision (absent: modern). */
  callerProtocol?: string;
  /** The caller's session, the scope key for servers pooled per session. */
  session?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  onProgress?: (p: Progress) => void;
}

/** A relayed request failed: an mcpx code, and the upstream's JSON-RPC error when it answered with one. */
export class RelayError extends Error {
  readonly code: string;
  readonly data: Record<string, unknown> | undefined;
  constructor(code: string, message: string, data?: Record<string, unknown>) {
    super(message);
    this.name = 'RelayError';
    this.code = code;
    this.data = data;
  }

  /** The upstream's own JSON-RPC error, when the upstream answered with one. */
  get rpc(): { code: number; message: string; data?: unknown } | undefined {
    const code = this.data?.['rpcCode'];
    if (typeof code !== 'number') return undefined;
    const message = typeof this.data?.['rpcMessage'] === 'string' ? (this.data['rpcMessage'] as string) : this.message;
    return { code, message, ...(this.data?.['rpcData'] === undefined ? {} : { data: this.data['rpcData'] }) };
  }
}

export type ListKind = 'tools' | 'prompts' | 'resources';

export interface CatalogChange {
  /** The server whose listing changed; absent: the set of servers changed (a config reload). */
  server?: string;
  lists: ListKind[];
}

/** The MCP client requests a front relays to one server. */
export const RELAYED_METHODS = ['tools/call', 'prompts/get', 'resources/read', 'completion/complete'] as const;
export type RelayedMethod = (typeof RELAYED_METHODS)[number];

/** A question an upstream asked during an ask (an elicitation, a sampling request, roots). */
export interface AskQuestion {
  id: string;
  method: string;
  params?: Record<string, unknown>;
  /** The upstream's own key for it (a 2026-07-28 upstream's inputRequests key). */
  key?: string;
}

/** Where an interruptible call is (`GET /v1/ask/:id`). */
export interface AskView {
  id: string;
  status: string;
  questions: AskQuestion[];
  result?: Record<string, unknown>;
  error?: { code: string; message: string; data?: Record<string, unknown> };
}

/** Calls the upstream may interrupt with questions (`/v1/ask`), held daemon-side between rounds. */
export interface AskBackend {
  ask(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    ctx: RelayContext & {
      capabilities: Record<string, unknown>;
      method?: 'tools/call' | 'prompts/get' | 'resources/read';
      params?: Record<string, unknown>;
      questionTimeoutMs?: number;
    },
  ): Promise<{ id: string }>;
  /** Waits up to `waitMs` for questions or the end. */
  askPoll(id: string, waitMs: number, ctx: RelayContext): Promise<AskView>;
  askAnswer(id: string, answers: Record<string, unknown>): Promise<void>;
  askAbandon(id: string): Promise<void>;
}

export interface FrontBackend {
  /** What every configured server offers for this caller (starting servers that have no catalogue yet; `knownOnly`: starting none). */
  catalog(ctx: RelayContext, opts?: { knownOnly?: boolean }): Promise<CatalogView>;
  /** Runs one request on one server; rejects with a RelayError. */
  request(server: string, method: RelayedMethod, params: Record<string, unknown>, ctx: RelayContext): Promise<Record<string, unknown>>;
  /** Changes callers should hear about (list_changed); returns the unsubscribe function. */
  onChange(listener: (change: CatalogChange) => void): () => void;
  /** Interruptible calls, for callers that can answer questions. */
  asks?: AskBackend;
}
