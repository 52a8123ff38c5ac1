/**
 * The shapes every transport adapter shares. A Channel moves whole JSON-RPC messages to and from
 * one upstream (a child process, an HTTP endpoint); an RpcPeer adds request/response correlation.
 * Neither knows anything about eras: the session machine decides those.
 */
import type { RpcErrorObject } from '../errors.js';

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: unknown;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: RpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Why a channel closed. `error` is set when mcpx closed it because of a fault (e.g. a huge message). */
export interface CloseInfo {
  reason: 'exit' | 'stopped' | 'error' | 'spawn-failed' | 'connection-lost';
  code?: number | null;
  signal?: string | null;
  error?: Error;
  /** The last lines the process wrote to stderr, for error messages (never contains config secrets). */
  stderrTail?: string[];
}

/** What a request carries besides its method and params: who asked, and how long they will wait. */
export interface RequestOptions<C = unknown> {
  /** Use this id on the wire instead of the peer's own counter (the probe chooses its ids). */
  id?: JsonRpcId;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The caller's context, opaque to the transport; handed back with the messages this request provoked. */
  context?: C;
  /** Extra HTTP headers for this request (SEP-2243 `Mcp-Param-*`); handed to the channel's send(). */
  headers?: Record<string, string>;
}

/** What a channel gets with one outgoing message besides its context. */
export interface SendOptions {
  /**
   * Extra HTTP headers for this message. StreamableHttpChannel adds them to modern (2026-07-28) POSTs
   * only, never over the headers it owns; transports without per-message headers ignore them.
   */
  headers?: Record<string, string>;
}

/**
 * `C` is the context its owner sends with a message. A channel that can attribute what arrives to the
 * message that provoked it (capabilities.ts `attributesServerRequests`) delivers that message's context
 * with it; otherwise messages arrive with none.
 */
export interface Channel<C = unknown> {
  /** Open the channel (spawn the process / nothing for HTTP). Rejects with a typed McpxError. */
  start(): Promise<void>;
  send(message: JsonRpcMessage, context?: C, options?: SendOptions): void;
  /**
   * Orderly stop. Resolves when nothing is left running. Safe to call twice or after a crash. `error`, when
   * given, is why the owner closes it: requests still waiting fail with it (transports that have none ignore it).
   */
  close(error?: Error): Promise<void>;
  onMessage(listener: (message: JsonRpcMessage, context?: C) => void): void;
  onClose(listener: (info: CloseInfo) => void): void;
  /**
   * Message transports (HTTP) can fail one request without closing: a non-2xx status with no JSON-RPC
   * body, a dropped response stream. RpcPeer rejects that request with the error given here.
   */
  onRequestError?(listener: (id: JsonRpcId, error: Error) => void): void;
  /**
   * HTTP legacy sessions: `handler` opens a session the server expired (404) again; the transport holds the
   * requests that met the 404 until it settles. Transports without server-side sessions do not have this.
   */
  onSessionExpired?(handler: () => Promise<void>): void;
  readonly pid: number | undefined;
  readonly closed: boolean;
}
