/**
 * What an upstream may ask an ask's caller, and what the caller declared it can answer: the
 * vocabulary the ask statechart (./ask.machine.ts) and its store (src/asks/ask-store.ts) share.
 */
import { isObject } from '../is-object.js';

/** What an upstream may ask its caller (in either era). */
export const QUESTION_METHODS = ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const;
export type QuestionMethod = (typeof QUESTION_METHODS)[number];

export const isQuestionMethod = (m: string): m is QuestionMethod => (QUESTION_METHODS as readonly string[]).includes(m);

/** `busy`: the asks waiting on their callers were at their bound (serve.maxAsks, serve.maxAsksPerCaller) and none could be reclaimed. */
export type RefusalReason = 'capability' | 'unsupported' | 'limit' | 'busy' | 'timeout' | 'abandoned' | 'expired' | 'finished' | 'misrouted';

/** A question mcpx refused on the caller's behalf (`questionId` when it had been put to the caller). */
export interface RefusalView {
  questionId?: string;
  method: string;
  reason: RefusalReason;
  message: string;
}

/** The capability a question needs that the caller did not declare, or undefined when it may be asked. */
export function missingCapability(method: QuestionMethod, params: Record<string, unknown>, caps: Record<string, unknown>): string | undefined {
  switch (method) {
    case 'elicitation/create': {
      const e = caps['elicitation'];
      if (!isObject(e)) return 'elicitation';
      if (params['mode'] === 'url') return isObject(e['url']) ? undefined : 'elicitation.url';
      // An empty `elicitation: {}` declares form mode (2025-11-25's backwards-compatible reading).
      return isObject(e['form']) || Object.keys(e).length === 0 ? undefined : 'elicitation.form';
    }
    case 'sampling/createMessage':
      return isObject(caps['sampling']) ? undefined : 'sampling';
    case 'roots/list':
      return isObject(caps['roots']) ? undefined : 'roots';
  }
}

/** What `/v1/ask` declares for a caller that names no capabilities: what the route can carry to a program (forms and URLs). */
export const DEFAULT_ASK_CAPABILITIES: Readonly<Record<string, unknown>> = Object.freeze({ elicitation: { form: {}, url: {} } });

/** The kinds of question an ask with these capabilities refuses at once (said in its answer). */
export function refusedKinds(caps: Record<string, unknown>): string[] {
  const kinds: Array<[string, QuestionMethod, Record<string, unknown>]> = [
    ['elicitation.form', 'elicitation/create', {}],
    ['elicitation.url', 'elicitation/create', { mode: 'url' }],
    ['sampling', 'sampling/createMessage', {}],
    ['roots', 'roots/list', {}],
  ];
  return kinds.filter(([, method, params]) => missingCapability(method, params, caps) !== undefined).map(([kind]) => kind);
}
