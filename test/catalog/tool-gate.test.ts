/**
 * The gate of the catalogue (src/catalog/tool-gate.ts): what a listing serves under a server's policy, the
 * pins among it, a changed tool held only under pinTools, and the typed refusal of a call.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { ToolDigests } from '../../src/catalog/tool-digests.js';
import { ToolGate, type ChangedTool } from '../../src/catalog/tool-gate.js';
import type { ToolPolicy } from '../../src/catalog/tool-policy.js';

const tools = ['read_a', 'read_b', 'write_c'].map((name) => ({ name, description: name, inputSchema: { type: 'object' } }));
const KEY = 'k:own';

function gate(policy: ToolPolicy): { g: ToolGate; digests: ToolDigests; changes: ChangedTool[] } {
  const digests = new ToolDigests(null);
  const changes: ChangedTool[] = [];
  const g = new ToolGate({ policy: () => policy, digests, log: silentLogger, changed: (c) => changes.push(c) });
  return { g, digests, changes };
}

describe('ToolGate', () => {
  it('serves what the filter lets through, and names the pins among it', () => {
    const { g } = gate({ tools: { allow: ['read_*', 'write_c'], deny: ['read_b'] }, pin: ['read_*', 'write_c'] });
    const s = g.served('srv', KEY, tools);
    expect(s.tools.map((t) => t.name)).toEqual(['read_a', 'write_c']);
    expect(s.pinned).toEqual(['read_a', 'write_c']);
    expect(gate({}).g.served('srv', KEY, tools)).toEqual({ tools, pinned: [] });
    expect(gate({ pin: true }).g.served('srv', KEY, tools).pinned).toEqual(['read_a', 'read_b', 'write_c']);
  });

  it('a changed tool is reported either way, held only under pinTools', () => {
    for (const pinTools of [false, true]) {
      const { g, changes } = gate({ pinTools });
      g.observe('srv', KEY, tools);
      expect(changes).toEqual([]);
      g.observe('srv', KEY, [{ ...tools[0]!, description: 'now different' }, tools[1]!, tools[2]!]);
      expect(changes).toEqual([
        { server: 'srv', tool: 'read_a', exposed: 'srv__read_a', lane: 'own', changed: ['description'], since: expect.any(String), held: pinTools },
      ]);
      expect(g.served('srv', KEY, tools).tools.map((t) => t.name)).toEqual(pinTools ? ['read_b', 'write_c'] : ['read_a', 'read_b', 'write_c']);
      expect(g.changed('srv', KEY, new Set(['read_a']))).toEqual(changes);
      expect(g.changed('srv', KEY, new Set())).toEqual([]);
      const refused = g.refusal('srv', 'read_a', KEY);
      if (!pinTools) expect(refused).toBeUndefined();
      else {
        expect(refused?.code).toBe('MCPX_TOOL_HELD');
        expect(refused?.message).toContain('mcpx tools --accept srv read_a');
        expect(refused?.data).toMatchObject({ server: 'srv', tool: 'read_a', changed: ['description'] });
      }
      expect(g.accept(KEY, 'read_a')).toBe(true);
      expect(g.refusal('srv', 'read_a', KEY)).toBeUndefined();
      expect(g.served('srv', KEY, tools).tools).toHaveLength(3);
    }
  });

  it('a filtered tool is refused with MCPX_TOOL_DENIED naming the glob, whatever the lane', () => {
    const { g } = gate({ tools: { deny: ['write_*'] } });
    const e = g.refusal('srv', 'write_c', undefined);
    expect([e?.code, e?.message]).toEqual([
      'MCPX_TOOL_DENIED',
      'tool "write_c" of server "srv" is not served: the config\'s mcpx.tools.deny "write_*" leaves it out',
    ]);
    expect(g.refusal('srv', 'read_a', KEY)).toBeUndefined();
  });
});
