/**
 * What every Channel shares: its listeners, and delivering to them. A listener that throws is logged and
 * never breaks the channel; a close is reported once, however many paths notice it.
 */
import type { TransportLogger } from './jsonrpc.js';
import type { CloseInfo, JsonRpcId, JsonRpcMessage } from './types.js';

export type MessageListener<C = unknown> = (message: JsonRpcMessage, context?: C) => void;
export type CloseListener = (info: CloseInfo) => void;
export type RequestErrorListener = (id: JsonRpcId, error: Error) => void;

/** `C`: the context the owner sends messages with (see Channel). */
export abstract class ChannelBase<C = unknown> {
  protected abstract readonly log: TransportLogger;
  private readonly messageListeners: MessageListener<C>[] = [];
  private readonly closeListeners: CloseListener[] = [];
  private readonly requestErrorListeners: RequestErrorListener[] = [];
  private closeReported = false;

  onMessage(listener: MessageListener<C>): void {
    this.messageListeners.push(listener);
  }

  onClose(listener: CloseListener): void {
    this.closeListeners.push(listener);
  }

  onRequestError(listener: RequestErrorListener): void {
    this.requestErrorListeners.push(listener);
  }

  /** Whether the close was reported already (nothing more is reported after it). */
  protected get closeFired(): boolean {
    return this.closeReported;
  }

  protected deliverMessage(message: JsonRpcMessage, context: C | undefined): void {
    this.each(this.messageListeners, 'message', (l) => l(message, context));
  }

  protected reportRequestError(id: JsonRpcId, error: Error): void {
    this.each(this.requestErrorListeners, 'request-error', (l) => l(id, error));
  }

  /** Reports the close to every listener, once; false when it was reported already. */
  protected reportClose(info: CloseInfo): boolean {
    if (this.closeReported) return false;
    this.closeReported = true;
    this.each(this.closeListeners, 'close', (l) => l(info));
    return true;
  }

  private each<L>(listeners: readonly L[], kind: string, call: (listener: L) => void): void {
    for (const listener of listeners) {
      try {
        call(listener);
      } catch (err) {
        this.log.error({ err }, `a ${kind} listener threw`);
      }
    }
  }
}
