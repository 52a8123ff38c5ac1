/**
 * Small helpers for reading undici responses, shared by the Streamable HTTP and HTTP+SSE channels:
 * headers, bounded bodies, and error causes worded for users.
 */
import type { Dispatcher } from 'undici';
import { MessageTooLargeError } from '../errors.js';

export type ResponseHeaders = Dispatcher.ResponseData['headers'];

export function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function mediaType(headers: ResponseHeaders): string {
  return (headerValue(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function describeCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = errorCode(err);
  const inner = err.cause instanceof Error && err.cause.message !== err.message ? ` (${err.cause.message})` : '';
  return `${code && !err.message.includes(code) ? `${code}: ` : ''}${err.message}${inner}`;
}

/** Read a whole body, refusing more than `limit` bytes. */
export async function readLimited(body: AsyncIterable<Buffer | Uint8Array>, limit: number, declared?: string): Promise<Buffer> {
  if (declared !== undefined && Number(declared) > limit) throw new MessageTooLargeError(limit);
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    total += buf.length;
    if (total > limit) throw new MessageTooLargeError(limit);
    parts.push(buf);
  }
  return Buffer.concat(parts, total);
}

/** Read at most `limit` bytes of a body for an error report; the rest is discarded. */
export async function readPrefix(
  body: AsyncIterable<Buffer | Uint8Array> & { destroy(): unknown },
  limit: number,
): Promise<{ text: string; complete: boolean }> {
  const parts: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      parts.push(buf);
      total += buf.length;
      if (total > limit) {
        body.destroy();
        return { text: Buffer.concat(parts).subarray(0, limit).toString('utf8'), complete: false };
      }
    }
  } catch {
    return { text: Buffer.concat(parts).toString('utf8'), complete: false };
  }
  return { text: Buffer.concat(parts).toString('utf8'), complete: true };
}

export function discard(body: { destroy(): unknown; dump?: () => Promise<void> }): Promise<void> {
  if (typeof body.dump === 'function') return body.dump().catch(() => undefined);
  body.destroy();
  return Promise.resolve();
}
