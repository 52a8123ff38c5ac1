/**
 * The SDK transport of one `mcpx serve` stream in the daemon (./socket-entry.ts): the messages the stdin
 * gate let through come in already parsed (./stdin-gate.ts parses each line once; the SDK's stdio
 * transport would parse it again, through a stream of its own), and answers go out a line each, through
 * the stream's turn-batched writer. A message is handed on as it is: the SDK classifies every message it
 * receives against JSON-RPC's shapes itself (request, notification, response), and reports and drops one
 * that is none of them, as its stdio transport does with a line that fails its parse. Checking here too
 * would be one more schema parse per message on every call's path.
 */
import { serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/server';
import type { TurnBatchedOutput } from './turn-batched-output.js';

export class StreamTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  private closed = false;

  /** `sent`: told of each message written (and whether the stream took it at once), for the stream's flow control. */
  constructor(
    private readonly out: TurnBatchedOutput,
    private readonly sent?: (message: JSONRPCMessage, ok: boolean) => void,
  ) {}

  async start(): Promise<void> {}

  /** One message from the gate. */
  receive(value: object): void {
    if (this.closed) return;
    this.onmessage?.(value as JSONRPCMessage);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the serve stream is closed'));
    const ok = this.out.write(serializeMessage(message));
    this.sent?.(message, ok);
    if (ok) return Promise.resolve();
    return new Promise((resolve) => this.out.once('drain', () => resolve()));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}
