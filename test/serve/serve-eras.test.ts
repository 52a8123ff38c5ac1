/**
 * End to end: MCP clients of both eras reach every upstream through `mcpx serve` (stdio) and `/mcp`
 * (Streamable HTTP): the official SDK v1 client (2025-11-25) and the SDK v2 client pinned to
 * 2026-07-28, against SDK v1 legacy-only, SDK v2 dual and SDK v2 modern-only fixtures under every
 * preference. Which era served each call is the fixture's own word (its echo names the era it was
 * built for), checked against the era table; under `follow` the caller's era picks the lane.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANONICAL_PREFERENCES, type Preference } from '../../src/machines/preference.js';
import type { FixtureName } from '../fixtures/index.js';
import type { FixtureServer } from '../server/helpers.js';
import { killAll } from '../cli/helpers.js';
import { httpCaller, startServeDaemon, stdioCaller, textOf, type CallerEra, type McpCaller, type Way } from './clients.js';

type Kind = 'legacy' | 'dual' | 'modern';
const FIXTURE: Record<Kind, FixtureName> = { legacy: 'legacy-v1', dual: 'dual-v2', modern: 'modern-v2' };

/** The era each value reaches (null: fails to connect); follow depends on the caller (below). */
const TABLE: Record<Preference, Record<Kind, 'legacy' | 'modern' | null>> = {
  'prefer-discover': { legacy: 'legacy', dual: 'modern', modern: 'modern' },
  'prefer-initialize': { legacy: 'legacy', dual: 'legacy', modern: 'modern' },
  'force-discover': { legacy: null, dual: 'modern', modern: 'modern' },
  'force-initialize': { legacy: 'legacy', dual: 'legacy', modern: null },
  follow: { legacy: 'legacy', dual: 'modern', modern: 'modern' },
};
const FOLLOW_LEGACY_CALLER: Record<Kind, 'legacy' | 'modern'> = { legacy: 'legacy', dual: 'legacy', modern: 'modern' };

const name = (kind: Kind, p: Preference) => `${kind}-${p}`;
const KINDS = Object.keys(FIXTURE) as Kind[];

function expectedEra(kind: Kind, p: Preference, caller: CallerEra): 'legacy' | 'modern' | null {
  if (p === 'follow' && caller === 'legacy') return FOLLOW_LEGACY_CALLER[kind];
  return TABLE[p][kind];
}

describe('mcpx serve and /mcp: both callers × every upstream × every preference', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let url: string;
  let token: string;

  beforeAll(async () => {
    const servers: Record<string, FixtureServer> = {};
    for (const p of CANONICAL_PREFERENCES) for (const kind of KINDS) servers[name(kind, p)] = { fixture: FIXTURE[kind], protocol: p };
    const d = await startServeDaemon('mcpx-serve-eras-', servers);
    dir = { path: d.dir, remove: d.remove };
    ({ env, url, token } = d);
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  const connect = (era: CallerEra, way: Way): Promise<McpCaller> => (way === 'stdio' ? stdioCaller(era, { env }) : httpCaller(era, { url, token }));

  for (const way of ['stdio', 'http'] as const) {
    for (const era of ['legacy', 'modern'] as const) {
      it(`a ${era} caller over ${way}`, async () => {
        const c = await connect(era, way);
        try {
          const { tools } = await c.listTools();
          const names = tools.map((t) => t['name'] as string);
          for (const p of CANONICAL_PREFERENCES) {
            for (const kind of KINDS) {
              const want = expectedEra(kind, p, era);
              if (want === null) expect(names, name(kind, p)).not.toContain(`${name(kind, p)}__echo`);
              else expect(names, name(kind, p)).toContain(`${name(kind, p)}__echo`);
            }
          }
          // Under follow a caller sees the lane that serves it: the dual fixture offers legacy_only_ask on legacy sessions only.
          if (era === 'legacy') expect(names).toContain('dual-follow__legacy_only_ask');
          else expect(names).not.toContain('dual-follow__legacy_only_ask');
          const echo = tools.find((t) => t['name'] === 'dual-prefer-discover__echo')!;
          expect(echo['description']).toBe('Echo the text back with the era');
          expect(echo['inputSchema']).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });

          for (const p of CANONICAL_PREFERENCES) {
            for (const kind of KINDS) {
              const want = expectedEra(kind, p, era);
              const r = await c.callTool(`${name(kind, p)}__echo`, { text: 'hi' });
              if (want === null) {
                expect(r['isError'], name(kind, p)).toBe(true);
                expect(textOf(r)).toMatch(new RegExp(`^mcpx: ${name(kind, p)}: MCPX_[A-Z_]+: `));
              } else {
                expect(r['isError'] ?? false, `${name(kind, p)}: ${textOf(r)}`).toBe(false);
                expect(textOf(r), name(kind, p)).toBe(`hi era=${want}`);
              }
            }
          }
          // A name nobody offers is the caller's mistake: a JSON-RPC error, not a tool result.
          await expect(c.callTool('nobody__nothing', {})).rejects.toThrow(/Unknown tool/);
        } finally {
          await c.close();
        }
      }, 120_000);
    }
  }
});
