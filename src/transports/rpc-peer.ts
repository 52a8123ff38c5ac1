/**
 * Request/response correlation over any Channel: ids, timeouts, cancellation, and answering the
 * requests the server sends us. The peer has no close of its own; it follows its channel.
 */
import {
  McpxError,
  MessageTooLargeError,
  RequestTimeoutError,
  TransportClosedError,
  UpstreamBacklogError,
  UpstreamRpcError,
  type RpcErrorObject,
} from '../errors.js';
import { isNotification, isRequest, isResponse, silentLogger, type TransportLogger } from './jsonrpc.js';
import { RPC } from '../protocol/constants.js';
import type {
  Channel,
  CloseInfo,
  JsonRpcFailure,
  JsonRpcId,
  JsonRpcMessage,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcSuccess,
  RequestOptions,
} from './types.js';
import { timerDelay } from '../timer-delay.js';
import { describeClose } from './close-info.js';

export interface ServerRequestContext<C = unknown> {
  /** The context the channel delivered with the request (HTTP: the provoking request's context). */
  context?: C;
}

export type PeerRequestHandler<C = unknown> = (request: JsonRpcRequest, ctx: ServerRequestContext<C>) => Promise<unknown>;
export type NotificationListener<C = unknown> = (notification: JsonRpcNotification, ctx: ServerRequestContext<C>) => void;

export interface RpcPeerOptions {
  logger?: TransportLogger;
}

interface Pending {
  method: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

/** `C`: the context requests carry through the channel (RequestOptions.context), and messages come back with. */
export class RpcPeer<C = unknown> {
  readonly channel: Channel<C>;
  private readonly log: TransportLogger;
  private readonly pending = new Map<JsonRpcId, Pending>();
  private nextId = 1;
  private requestHandler: PeerRequestHandler<C> | undefined;
  private readonly notificationListeners: NotificationListener<C>[] = [];
  private closeInfo: CloseInfo | undefined;

  constructor(channel: Channel<C>, options: RpcPeerOptions = {}) {
    this.channel = channel;
    this.log = options.logger ?? silentLogger;
    channel.onMessage((message, context) => this.handleMessage(message, context));
    channel.onClose((info) => this.handleClose(info));
    channel.onRequestError?.((id, error) => {
      const p = this.pending.get(id);
      if (!p) return;
      p.cleanup();
      p.reject(error);
    });
  }

  /** Requests sent and not yet answered, timed out, cancelled or failed. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * Send a request and wait for its result. Rejects with UpstreamRpcError (a JSON-RPC error answer),
   * RequestTimeoutError, McpxError MCPX_REQUEST_CANCELLED (opts.signal aborted) or
   * TransportClosedError (the channel closed first, or was already closed).
   */
  request(method: string, params?: Record<string, unknown>, opts: RequestOptions<C> = {}): Promise<unknown> {
    if (this.closeInfo) return Promise.reject(closedError(method, this.closeInfo));
    const id = opts.id ?? this.nextId++;
    if (this.pending.has(id)) {
      return Promise.reject(new TypeError(`request id ${JSON.stringify(id)} is already pending`));
    }
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(cancelledError(method, id, signal.reason));

    return new Promise<unknown>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const cleanup = (): void => {
        this.pending.delete(id);
        clearTimeout(timer);
        if (onAbort) signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(id, { method, resolve, reject, cleanup });

      if (opts.timeoutMs !== undefined) {
        const ms = opts.timeoutMs;
        timer = setTimeout(() => {
          if (!this.pending.has(id)) return;
          cleanup();
          reject(new RequestTimeoutError(method, ms));
          this.sendCancelled(method, id, `timed out after ${ms} ms`, opts.context);
        }, timerDelay(ms));
      }
      if (signal) {
        onAbort = () => {
          if (!this.pending.has(id)) return;
          cleanup();
          reject(cancelledError(method, id, signal.reason));
          this.sendCancelled(method, id, reasonText(signal.reason), opts.context);
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }

      const message: JsonRpcRequest = params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
      try {
        if (opts.headers === undefined) this.channel.send(message, opts.context);
        else this.channel.send(message, opts.context, { headers: opts.headers });
      } catch (err) {
        cleanup();
        reject(err instanceof Error ? err : new TransportClosedError(String(err)));
      }
    });
  }

  /** Send a notification. Throws TransportClosedError when the channel is closed. */
  notify(method: string, params?: Record<string, unknown>, context?: C): void {
    const message: JsonRpcNotification = params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
    this.channel.send(message, context);
  }

  /** Answer server→client requests. Only one handler; a second call replaces the first. */
  onRequest(handler: PeerRequestHandler<C>): void {
    this.requestHandler = handler;
  }

  onNotification(listener: NotificationListener<C>): void {
    this.notificationListeners.push(listener);
  }

  // ---------------------------------------------------------------------------------- inbound

  private handleMessage(message: JsonRpcMessage, context: C | undefined): void {
    if (isResponse(message)) {
      this.handleResponse(message);
    } else if (isRequest(message)) {
      void this.answer(message, context);
    } else if (isNotification(message)) {
      for (const listener of this.notificationListeners) {
        try {
          listener(message, { context });
        } catch (err) {
          this.log.error({ err, method: message.method }, 'a notification listener threw');
        }
      }
    }
  }

  private handleResponse(message: JsonRpcSuccess | JsonRpcFailure): void {
    const entry = message.id === null ? undefined : this.pending.get(message.id);
    if (!entry) {
      const level = message.id === null ? 'warn' : 'debug';
      this.log[level]({ id: message.id, ...('error' in message ? { error: message.error } : {}) }, 'dropping a response that matches no pending request');
      return;
    }
    entry.cleanup();
    if ('error' in message) entry.reject(new UpstreamRpcError(entry.method, message.error));
    else entry.resolve(message.result);
  }

  private async answer(request: JsonRpcRequest, context: C | undefined): Promise<void> {
    let response: JsonRpcSuccess | JsonRpcFailure;
    const handler = this.requestHandler;
    if (!handler) {
      response = { jsonrpc: '2.0', id: request.id, error: { code: RPC.methodNotFound, message: 'Method not found' } };
    } else {
      try {
        const result = await handler(request, { context });
        // A response must carry `result`; JSON.stringify would drop an undefined one.
        response = { jsonrpc: '2.0', id: request.id, result: result === undefined ? {} : result };
      } catch (err) {
        response = { jsonrpc: '2.0', id: request.id, error: toRpcError(err) };
        this.log.debug({ method: request.method, id: request.id, error: response.error }, 'server request handler failed');
      }
    }
    try {
      this.channel.send(response, context);
    } catch (err) {
      this.log.debug({ err, method: request.method, id: request.id }, 'could not answer a server request; channel closed');
    }
  }

  private handleClose(info: CloseInfo): void {
    if (this.closeInfo) return;
    this.closeInfo = info;
    const entries = [...this.pending.values()];
    for (const entry of entries) {
      entry.cleanup();
      entry.reject(closedError(entry.method, info));
    }
  }

  private sendCancelled(method: string, id: JsonRpcId, reason: string, context: C | undefined): void {
    if (method === 'initialize' || this.closeInfo) return; // the spec forbids cancelling initialize
    try {
      this.notify('notifications/cancelled', { requestId: id, reason }, context);
    } catch (err) {
      this.log.debug({ err, id }, 'could not send notifications/cancelled');
    }
  }
}

/** A thrown value as a JSON-RPC error object. */
export function toRpcError(err: unknown): RpcErrorObject {
  if (err instanceof UpstreamRpcError) return { ...err.rpc };
  if (typeof err === 'object' && err !== null) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    if (typeof e.code === 'number' && Number.isInteger(e.code) && typeof e.message === 'string') {
      return e.data === undefined ? { code: e.code, message: e.message } : { code: e.code, message: e.message, data: e.data };
    }
  }
  if (err instanceof McpxError) return { code: RPC.internalError, message: err.message, data: { mcpxCode: err.code } };
  if (err instanceof Error) return { code: RPC.internalError, message: err.message };
  return { code: RPC.internalError, message: String(err) };
}

function reasonText(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return 'cancelled';
}

function cancelledError(method: string, id: JsonRpcId, reason: unknown): McpxError {
  return new McpxError('MCPX_REQUEST_CANCELLED', `${method} was cancelled: ${reasonText(reason)}`, {
    cause: reason,
    data: { method, requestId: id },
  });
}

function closedError(method: string, info: CloseInfo): McpxError {
  // mcpx itself closed the connection over an oversized message: that, not a crash, is what the caller hears.
  if (info.error instanceof MessageTooLargeError || info.error instanceof UpstreamBacklogError) {
    return new McpxError(info.error.code, `${info.error.message}; mcpx closed the connection while waiting for ${method}`, {
      cause: info.error,
      data: { ...info.error.data, method },
    });
  }
  const tail = info.stderrTail ?? [];
  const stderr = tail.length > 0 ? `; stderr tail:\n  ${tail.join('\n  ')}` : '; no stderr output';
  return new TransportClosedError(`transport closed (${describeClose(info, { reason: true })}) while waiting for ${method}${stderr}`, {
    method,
    reason: info.reason,
    ...(info.code !== undefined ? { exitCode: info.code } : {}),
    ...(info.signal !== undefined ? { signal: info.signal } : {}),
    ...(info.error instanceof McpxError ? { errorCode: info.error.code } : {}),
    stderrTail: tail,
  });
}
