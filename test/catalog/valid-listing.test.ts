/**
 * src/catalog/valid-listing.ts against the official SDKs' own schemas: whatever one upstream lists,
 * what mcpx serves parses with the SDK v1 and v2 clients' ListToolsResultSchema (and prompts, resources,
 * templates); an item both SDKs take is served unchanged (unless its name is empty); a tool with no inputSchema type is repaired.
 */
import * as v2 from '@modelcontextprotocol/core';
import * as v1 from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validItems, validListing, type ListName } from '../../src/catalog/valid-listing.js';

const RESULT = {
  tools: [v1.ListToolsResultSchema, v2.ListToolsResultSchema],
  prompts: [v1.ListPromptsResultSchema, v2.ListPromptsResultSchema],
  resources: [v1.ListResourcesResultSchema, v2.ListResourcesResultSchema],
  resourceTemplates: [v1.ListResourceTemplatesResultSchema, v2.ListResourceTemplatesResultSchema],
} as const;
const KEY: Record<ListName, string> = { tools: 'name', prompts: 'name', resources: 'uri', resourceTemplates: 'uriTemplate' };
const parses = (list: ListName, items: unknown[]) =>
  RESULT[list].map((s) => (s as { safeParse(v: unknown): { success: boolean } }).safeParse({ [list]: items }).success);

const GITLAB = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'listings', 'server-gitlab-2025.4.25-fresh-install.json'), 'utf8'));

// Items shaped like what servers list, with every field now and then of a wrong kind.
const json = fc.jsonValue({ maxDepth: 3 });
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof(a, json);
const schema = fc.oneof(
  fc.record(
    {
      type: fc.oneof(fc.constant('object'), fc.constant('string'), json),
      $schema: fc.constant('http://json-schema.org/draft-07/schema#'),
      properties: maybe(fc.dictionary(fc.string(), fc.oneof(fc.record({ type: fc.constant('string') }), json))),
      required: maybe(fc.array(fc.string())),
    },
    { requiredKeys: [] },
  ),
  json,
);
const names = fc.oneof(fc.constantFrom('a', 'b', 'c', 'x.y', ''), json);
const item = fc.record(
  {
    name: names,
    title: maybe(fc.string()),
    description: maybe(fc.string()),
    inputSchema: schema,
    outputSchema: schema,
    annotations: maybe(fc.record({ readOnlyHint: maybe(fc.boolean()), priority: maybe(fc.double()) }, { requiredKeys: [] })),
    arguments: maybe(fc.array(fc.record({ name: maybe(fc.string()), required: maybe(fc.boolean()) }, { requiredKeys: [] }))),
    uri: maybe(fc.constantFrom('file:///a', 'file:///b', '')),
    uriTemplate: maybe(fc.constantFrom('file:///{x}', 'file:///{y}')),
    icons: maybe(fc.array(fc.record({ src: maybe(fc.string()), theme: maybe(fc.constantFrom('light', 'dark', 'blue')) }))),
    _meta: maybe(fc.dictionary(fc.string(), json)),
  },
  { requiredKeys: [] },
);
const listing = fc.array(fc.oneof({ weight: 6, arbitrary: item }, { weight: 1, arbitrary: json }), { maxLength: 12 });

describe('valid listings', () => {
  it("server-gitlab 2025.4.25's tools as a fresh install lists them: every one repaired (type object), every SDK parses them", () => {
    expect(parses('tools', GITLAB.tools)).toEqual([false, false]); // the client's whole tools/list fails
    const v = validListing({ tools: GITLAB.tools });
    expect(v.leftOut).toEqual([]);
    expect(v.tools.map((t) => t['name'])).toEqual(GITLAB.tools.map((t: { name: string }) => t.name));
    for (const t of v.tools) expect(t['inputSchema']).toEqual({ type: 'object', $schema: 'http://json-schema.org/draft-07/schema#' });
    expect(parses('tools', v.tools)).toEqual([true, true]);
  });

  it('what cannot be made valid is left out with its reason; the rest is served', () => {
    const v = validItems('tools', [
      { name: 'ok', inputSchema: { type: 'object' } },
      { name: 'str', inputSchema: { type: 'string' } },
      { name: 42, inputSchema: {} },
      { name: 'ok', inputSchema: {} },
      { name: 'out', inputSchema: {}, outputSchema: { type: 'array' } },
      { name: 'props', inputSchema: { properties: { a: true } } },
      'not a tool',
      { name: 'bare' },
    ]);
    expect(v.items.map((t) => t['name'])).toEqual(['ok', 'bare']);
    expect(v.leftOut).toEqual([
      { list: 'tools', name: 'str', reason: expect.stringMatching(/^inputSchema\.type: /) },
      { list: 'tools', name: '#2', reason: expect.stringMatching(/^name: /) },
      { list: 'tools', name: 'ok', reason: 'a second tool with this name' },
      { list: 'tools', name: 'out', reason: expect.stringMatching(/^outputSchema\.type: /) },
      { list: 'tools', name: 'props', reason: expect.stringMatching(/^inputSchema\.properties\.a: /) },
      { list: 'tools', name: '#6', reason: 'not an object' },
    ]);
  });

  it.each(['tools', 'prompts', 'resources', 'resourceTemplates'] as ListName[])(
    '%s: whatever is listed, both SDKs parse what is served, and an item both took is served unchanged',
    (list) => {
      fc.assert(
        fc.property(listing, (items) => {
          const v = validItems(list, items);
          expect(parses(list, v.items)).toEqual([true, true]);
          expect(v.items.length + v.leftOut.length).toBe(items.length);
          const seen = new Set<unknown>();
          for (const raw of items) {
            const key = (raw as Record<string, unknown> | null)?.[KEY[list]];
            // mcpx is stricter on one point: an empty name (URI) names nothing a caller could ask for.
            if (parses(list, [raw]).every(Boolean) && key !== '' && !seen.has(key)) expect(v.items).toContainEqual(raw);
            if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) seen.add(key);
          }
        }),
        { numRuns: 300 },
      );
    },
  );
});
