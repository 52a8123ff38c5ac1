/**
 * What the request handlers of one front instance share: its config, the era it was pinned to, the
 * caller's session key, the kept catalogue views and the requestState codec; and how a request finds
 * its caller's revision and its target.
 */
import type { RequestStateCodec, Server, ServerContext } from '@modelcontextprotocol/server';
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { newCall, type Call, type Caller, type ProgressListener, type RelayedMethod } from '../call/call.js';
import type { SearchScope } from '../catalog/search-index.js';
import type { ToolGlobs } from '../catalog/tool-filter.js';
import type { Controller } from '../core/controller.js';
import type { Logger } from '../log.js';
import { relayed } from './front-relay.js';
import type { FrontView, ViewCache } from './front-view.js';
import type { ToolListing, ToolStrategy } from './tool-strategy.js';

export interface FrontConfig {
  /** The daemon's core: the catalogue, calls, asks (the front lives in the daemon, for `/mcp` and every `mcpx serve` stream). */
  controller: Controller;
  /** Serve this one server under its own names. */
  passthrough?: string;
  /** Show only these servers (aggregate mode). */
  servers?: readonly string[];
  /** The config this entry's callers mean (its id, as the daemon loaded it); absent: the daemon's own. */
  config?: string;
  /** How tools are offered (./tool-strategy.ts); default `auto`. */
  tools?: ToolStrategy;
  /** The tools shown, by globs on the names callers see (`--allow-tools`, `--deny-tools`). */
  toolGlobs?: ToolGlobs;
  version: string;
  logger?: Logger;
  /** The caller's session when the entry has no session of its own (a serve stream: one per stream). */
  session?: string;
  /**
   * Signs the `requestState` a 2026-07-28 caller echoes between rounds of a question (HMAC-SHA256,
   * 32 bytes or more). Default: a random key per factory, i.e. per daemon (`/mcp`) or per `mcpx serve` stream.
   */
  stateKey?: Uint8Array;
  /** How long a caller has to answer a question round (default 10 minutes). */
  questionTtlSeconds?: number;
}

/** What a `requestState` carries between rounds: the daemon-side ask, the questions put ([key the caller saw, question id]), what was asked for. */
export interface AskState {
  ask: string;
  questions: Array<[string, string]>;
  name: string;
}

export interface FrontScope {
  cfg: FrontConfig;
  era: 'legacy' | 'modern';
  log: Logger;
  codec: RequestStateCodec<AskState>;
  /** The scope key of a caller with no session of its own. */
  session: string;
  views: ViewCache;
  server: Server;
  /** What the entry shows, for the tool search index. */
  scope: SearchScope;
  /** `auto`'s decision for this connection (a legacy caller's, whose connection this instance is). */
  decided: { listing?: ToolListing };
  /** `auto`'s decisions for the entry's 2026-07-28 callers, by client name (they have no connection). */
  decisions: Map<string, ToolListing>;
}

/**
 * Who calls: the caller's revision (the request's own `_meta` (2026-07-28), else the one negotiated at
 * initialize) and session (its Mcp-Session-Id, else the entry's).
 */
export function callerOf(f: FrontScope, ctx: ServerContext): Caller {
  const claimed = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
  const callerProtocol = typeof claimed === 'string' ? claimed : (f.server.getNegotiatedProtocolVersion() ?? (f.era === 'legacy' ? '2025-03-26' : undefined));
  return {
    via: 'mcp',
    ...(f.cfg.config === undefined ? {} : { config: f.cfg.config }),
    ...(callerProtocol ? { callerProtocol } : {}),
    session: ctx.sessionId ?? f.session,
  };
}

/** The call an MCP client's request makes: built here, once, and carried as it is to the upstream. */
export function callOf(
  f: FrontScope,
  ctx: ServerContext,
  server: string,
  method: RelayedMethod,
  params: Record<string, unknown>,
  onProgress?: ProgressListener,
): Call {
  return newCall({ ...callerOf(f, ctx), signal: ctx.mcpReq.signal, ...(onProgress ? { onProgress } : {}), server, method, params });
}

/** A listing's view: always fetched (a caller listing wants what is offered now), and kept for the requests that follow. */
export const freshView = (f: FrontScope, caller: Caller, onProgress?: ProgressListener): Promise<FrontView> => f.views.get(caller, true, onProgress);

/** A listing; a caller that sent a progress token hears of each server started for it. */
export const listing = (f: FrontScope, ctx: ServerContext): Promise<FrontView> =>
  relayed(ctx, f.log, (onProgress) => freshView(f, callerOf(f, ctx), onProgress));

/**
 * The server and upstream name behind a tool or prompt name: from the kept view, else (a name it does
 * not know, or no view kept) from a fresh one, so a tool added since the last listing is found.
 */
export async function targetOf(
  f: FrontScope,
  caller: Caller,
  kind: 'tools' | 'prompts',
  name: string,
): Promise<{ v: FrontView; found: ReturnType<FrontView['resolve']> }> {
  let v = await f.views.get(caller);
  let found = v.resolve(kind, name);
  if (!found) {
    v = await f.views.get(caller, true);
    found = v.resolve(kind, name);
  }
  return { v, found };
}
