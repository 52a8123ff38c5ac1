/**
 * The client requests a front relays to an upstream. Its own module: the pool checks a method before it
 * loads any session code.
 */

/** Those both eras share (the 2026-07-28 ClientRequest union minus server/discover and subscriptions/listen). */
export const FORWARDED_METHODS = [
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'tools/list',
  'tools/call',
] as const;
export type ForwardedMethod = (typeof FORWARDED_METHODS)[number];

export const isForwardedMethod = (m: unknown): m is ForwardedMethod => typeof m === 'string' && (FORWARDED_METHODS as readonly string[]).includes(m);
