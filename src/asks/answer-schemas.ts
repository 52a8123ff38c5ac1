/**
 * What a caller's answer to each question must be: the result object MCP defines for it (extra fields such
 * as `_meta` pass). Loaded by AskStore with the first answer it checks.
 */
import * as z from 'zod';
import type { QuestionMethod } from './questions.js';

const contentBlock = z.looseObject({ type: z.string({ error: 'type must be a string' }) });
export const ANSWER_SCHEMAS: Record<QuestionMethod, { schema: z.ZodType; shape: string }> = {
  'elicitation/create': {
    schema: z.looseObject({
      action: z.enum(['accept', 'decline', 'cancel']),
      content: z.record(z.string(), z.unknown(), { error: 'content must be an object' }).optional(),
    }),
    shape: 'an ElicitResult {action: "accept"|"decline"|"cancel", content?}',
  },
  'sampling/createMessage': {
    schema: z.looseObject({
      role: z.enum(['user', 'assistant']),
      content: z.union([contentBlock, z.array(contentBlock)], { error: 'content must be a content block or an array of them' }),
      model: z.string({ error: 'model must be a string' }),
      stopReason: z.string().optional(),
    }),
    shape: 'a CreateMessageResult {role, content, model, stopReason?}',
  },
  'roots/list': {
    schema: z.looseObject({
      roots: z.array(z.looseObject({ uri: z.string({ error: 'uri must be a string' }), name: z.string().optional() }), { error: 'roots must be an array' }),
    }),
    shape: 'a ListRootsResult {roots: [{uri, name?}]}',
  },
};
