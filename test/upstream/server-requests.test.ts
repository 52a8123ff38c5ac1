/**
 * Questions from upstreams reach the call that provoked them (docs/behaviour.md §6, "Attribution").
 * Over stdio a question carries no hint of its call, so mcpx routes it to the one call in flight that
 * can answer, and refuses to guess when several could.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonRpcRequest } from '../../src/transports/types.js';
import { realSession, tempDir, textOf } from '../support/real.js';
import { answering } from '../support/relay.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

describe('legacy server-to-client requests over stdio', () => {
  it('an elicitation/create reaches the relay of the call that provoked it, with that call', async () => {
    const { session } = realSession(`${dir.path}/ask.log`, { fixture: 'dual-v2' }, 'force-initialize', { clientCapabilities: { elicitation: {} } });
    try {
      await session.start();
      const seen: Array<{ method: string; call: unknown }> = [];
      const result = await session.callTool(
        'legacy_only_ask',
        {},
        {
          id: 'ada-terminal',
          relay: answering(async (req: JsonRpcRequest, call) => {
            seen.push({ method: req.method, call: call.id });
            return { action: 'accept', content: { name: 'Ada' } };
          }),
        },
      );
      expect(textOf(result)).toBe('hello Ada era=legacy');
      expect(seen).toEqual([{ method: 'elicitation/create', call: 'ada-terminal' }]);
    } finally {
      await session.stop();
    }
  });

  it('with no caller able to answer, the question is refused and the tool reports it', async () => {
    const { session } = realSession(`${dir.path}/no-asker.log`, { fixture: 'dual-v2' }, 'force-initialize', { clientCapabilities: { elicitation: {} } });
    try {
      await session.start();
      const result = await session.callTool('legacy_only_ask', {});
      // The SDK turns the failed elicitation into a tool error; the call itself completes.
      expect(JSON.stringify(result)).toMatch(/no caller|isError/);
    } finally {
      await session.stop();
    }
  });
});
