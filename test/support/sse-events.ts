/**
 * Reads a daemon `/v1/events` response body into `events` until it ends, is aborted, or `stopAt` sees
 * the event it waits for. Uses the product's own SSE decoder.
 */
import { SseDecoder } from '../../src/transports/sse.js';

export interface DaemonEvent {
  type: string;
  data: any;
}

export async function collectEvents(body: AsyncIterable<Buffer | Uint8Array>, events: DaemonEvent[], stopAt?: (e: DaemonEvent) => boolean): Promise<void> {
  let done = false;
  const decoder = new SseDecoder({
    onEvent: (e) => {
      if (done || !e.data) return;
      const event = { type: e.event, data: JSON.parse(e.data) };
      events.push(event);
      if (stopAt?.(event)) done = true;
    },
  });
  try {
    for await (const chunk of body) {
      decoder.push(chunk instanceof Uint8Array ? chunk : Buffer.from(chunk));
      if (done) return;
    }
  } catch {
    // aborted: the caller stopped listening
  }
}
