/**
 * The `ui://` rewriting rules on their own (src/front/ui-uris.ts): which URIs collide, the form they take,
 * templates, reads routed back, and a rewrite that never applies twice. End to end: test/serve/serve-apps.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ServerCatalog } from '../../src/catalog/view.js';
import { UiUris } from '../../src/front/ui-uris.js';

const MIME = 'text/html;profile=mcp-app';

function server(name: string, opts: { tools?: Array<Record<string, unknown>>; resources?: string[]; templates?: string[] }): ServerCatalog {
  return {
    server: name,
    lane: 'own',
    source: 'live',
    tools: opts.tools ?? [],
    prompts: [],
    resources: (opts.resources ?? []).map((uri) => ({ uri, name: uri, mimeType: MIME })),
    resourceTemplates: (opts.templates ?? []).map((uriTemplate) => ({ uriTemplate, name: uriTemplate })),
  };
}

const appTool = (name: string, uri: string, flatOnly = false) => ({
  name,
  _meta: flatOnly ? { 'ui/resourceUri': uri } : { ui: { resourceUri: uri, visibility: ['model', 'app'] }, 'ui/resourceUri': uri },
});

describe('UiUris', () => {
  const shared = 'ui://prefab/tool/renderer.html';
  const uris = new UiUris([
    server('a b', { tools: [appTool('x', shared)] }),
    // The same URI in the deprecated key only, and in a listing: still a collision.
    server('a_b', { tools: [appTool('y', shared, true)], resources: ['ui://own/app.html'] }),
    server('c', { resources: [shared], templates: ['ui://pages/{id}'] }),
    server('d', { templates: ['ui://pages/{id}', 'ui://solo/{id}'] }),
  ]);

  it('rewrites only URIs more than one server refers to, the scheme kept `ui`, names that sanitize alike kept apart', () => {
    const a = uris.shown('a b', shared);
    const b = uris.shown('a_b', shared);
    const c = uris.shown('c', shared);
    expect(a).toBe('ui://a_b+prefab/tool/renderer.html');
    expect(b).toMatch(/^ui:\/\/a_b-[0-9a-f]{6}\+prefab\/tool\/renderer\.html$/);
    expect(c).toBe('ui://c+prefab/tool/renderer.html');
    expect(uris.shown('a_b', 'ui://own/app.html')).toBe('ui://own/app.html');
    expect(uris.shown('c', 'https://example.com/x')).toBe('https://example.com/x');
  });

  it('routes a rewritten URI back to its server under the upstream URI, and a URI only a tool names to that tool', () => {
    expect(uris.route('ui://c+prefab/tool/renderer.html')).toEqual({ server: 'c', uri: shared });
    expect(uris.route(uris.shown('a_b', shared))).toEqual({ server: 'a_b', uri: shared });
    expect(uris.route('ui://own/app.html')).toEqual({ server: 'a_b', uri: 'ui://own/app.html' });
    // A `+` that is not a server's prefix, or a URI that does not collide, is not mcpx's to route.
    expect(uris.route('ui://nobody+prefab/tool/renderer.html')).toBeUndefined();
    expect(uris.route('ui://c+own/app.html')).toBeUndefined();
  });

  it('rewrites colliding templates and the URIs they match, per server', () => {
    expect(uris.resource('d', { uriTemplate: 'ui://pages/{id}' })).toEqual({ uriTemplate: 'ui://d+pages/{id}' });
    expect(uris.resource('d', { uriTemplate: 'ui://solo/{id}' })).toEqual({ uriTemplate: 'ui://solo/{id}' });
    expect(uris.shown('c', 'ui://pages/7')).toBe('ui://c+pages/7');
    expect(uris.route('ui://d+pages/7')).toEqual({ server: 'd', uri: 'ui://pages/7' });
  });

  it('rewrites a tool and a result once: both `_meta` keys, resource links, embedded resources, read contents, prompt messages', () => {
    const tool = uris.tool('c', appTool('z', shared));
    expect(tool).toEqual(appTool('z', 'ui://c+prefab/tool/renderer.html'));
    // Applying it again changes nothing: the map is from upstream URIs to shown ones.
    expect(uris.tool('c', tool)).toEqual(tool);
    const result = {
      content: [
        { type: 'text', text: shared },
        { type: 'resource_link', uri: shared, name: 'app' },
        { type: 'resource', resource: { uri: shared, text: '<html></html>' } },
      ],
      contents: [{ uri: shared, mimeType: MIME, text: '<html></html>' }],
      messages: [{ role: 'user', content: { type: 'resource', resource: { uri: shared, text: '' } } }],
      _meta: { ui: { resourceUri: shared }, 'ui/resourceUri': shared },
    };
    const shown = 'ui://c+prefab/tool/renderer.html';
    const once = uris.result('c', result);
    expect(once).toEqual({
      content: [
        { type: 'text', text: shared },
        { type: 'resource_link', uri: shown, name: 'app' },
        { type: 'resource', resource: { uri: shown, text: '<html></html>' } },
      ],
      contents: [{ uri: shown, mimeType: MIME, text: '<html></html>' }],
      messages: [{ role: 'user', content: { type: 'resource', resource: { uri: shown, text: '' } } }],
      _meta: { ui: { resourceUri: shown }, 'ui/resourceUri': shown },
    });
    expect(uris.result('c', once)).toEqual(once);
    expect(result.content[1]).toEqual({ type: 'resource_link', uri: shared, name: 'app' }); // the input is not changed
  });

  it('leaves everything as it is when nothing collides (the same objects)', () => {
    const none = new UiUris([server('a', { tools: [appTool('x', 'ui://a/app.html')] }), server('b', { tools: [appTool('y', 'ui://b/app.html')] })]);
    const tool = appTool('x', 'ui://a/app.html');
    expect(none.tool('a', tool)).toBe(tool);
    const result = { content: [{ type: 'resource_link', uri: 'ui://a/app.html', name: 'app' }] };
    expect(none.result('a', result)).toBe(result);
    expect(none.route('ui://b/app.html')).toEqual({ server: 'b', uri: 'ui://b/app.html' });
  });
});
