/**
 * The tool search index the daemon keeps (src/catalog/search-index.ts): built from the known catalogue
 * when it changes, never per request; filtered before ranking (an entry's denied tools, app-only tools,
 * servers it does not show); named as the fronts name tools.
 */
import { describe, expect, it } from 'vitest';
import { ToolSearch } from '../../src/catalog/search-index.js';
import type { CatalogChange, CatalogView, ServerCatalog } from '../../src/catalog/view.js';

const server = (name: string, tools: Array<Record<string, unknown>>, extra: Partial<ServerCatalog> = {}): ServerCatalog => ({
  server: name,
  lane: 'own',
  source: 'catalog',
  tools,
  prompts: [],
  resources: [],
  resourceTemplates: [],
  ...extra,
});

function rig(servers: ServerCatalog[]) {
  let revision = 1;
  let views = 0;
  const listeners = new Set<(c: CatalogChange) => void>();
  const view: CatalogView = { servers };
  const search = new ToolSearch({
    view: async () => {
      views += 1;
      return view;
    },
    revision: () => revision,
    onChange: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  });
  return {
    search,
    view,
    views: () => views,
    change(c: CatalogChange = { lists: ['tools'] }) {
      revision += 1;
      for (const l of listeners) l(c);
    },
    bump() {
      revision += 1;
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

const FILES = server('files', [
  {
    name: 'read_file',
    description: 'Read a file from disk. Returns its text.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'delete_file', description: 'Delete a file.', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'app_only', description: 'Read a file for the app.', _meta: { ui: { visibility: ['app'] } } },
]);
const GIT = server(
  'git',
  [{ name: 'read_file', description: 'Read a file at a commit.', inputSchema: { type: 'object', properties: { rev: { type: 'string' } } } }],
  {
    instructions: 'Git history of the repository.',
  },
);

describe('the tool search index', () => {
  it('is built once per catalogue change, never per request or per caller of the same scope', async () => {
    const r = rig([FILES, GIT]);
    for (let i = 0; i < 100; i++) await r.search.scope({ callerProtocol: '2025-11-25', session: `s${i}` });
    expect(r.search.builds).toBe(1);
    r.change();
    await settle();
    await settle();
    expect(r.search.builds).toBe(2); // rebuilt on the change, before anyone asks
    for (let i = 0; i < 10; i++) await r.search.scope({ callerProtocol: '2025-11-25' });
    expect(r.search.builds).toBe(2);
    // A revision that moved without an announcement (a first listing) is seen at the next use.
    r.bump();
    await r.search.scope({ callerProtocol: '2025-11-25' });
    expect(r.search.builds).toBe(3);
    r.search.close();
  });

  it('names tools as the fronts do, and leaves out app-only tools, denied tools and servers not shown', async () => {
    const r = rig([FILES, GIT]);
    const all = await r.search.scope({});
    expect([...all.tools.keys()]).toEqual(['files__read_file', 'files__delete_file', 'git__read_file']);
    expect(all.search('read a file', 10).map((h) => h.exposed)).toEqual(expect.arrayContaining(['files__read_file', 'git__read_file']));
    expect(all.search('read a file for the app', 10).map((h) => h.exposed)).not.toContain('files__app_only');
    expect(all.servers).toEqual([{ server: 'files' }, { server: 'git', instructions: 'Git history of the repository.' }]);

    const denied = await r.search.scope({}, { globs: { deny: ['*delete*', 'git__*'] } });
    expect([...denied.tools.keys()]).toEqual(['files__read_file']);
    expect(denied.search('delete a file', 10).map((h) => h.exposed)).not.toContain('files__delete_file');

    const allowed = await r.search.scope({}, { globs: { allow: ['git__*'] } });
    expect([...allowed.tools.keys()]).toEqual(['git__read_file']);

    const one = await r.search.scope({}, { passthrough: 'git' });
    expect([...one.tools.keys()]).toEqual(['read_file']);
    expect(one.tools.get('read_file')!.server).toBe('git');
    r.search.close();
  });

  it('a build that failed is not kept: the next use builds again', async () => {
    let fail = true;
    const search = new ToolSearch({
      view: async () => {
        if (fail) throw new Error('catalogue unreadable');
        return { servers: [FILES] };
      },
      revision: () => 1,
      onChange: () => () => undefined,
    });
    await expect(search.scope({})).rejects.toThrow('catalogue unreadable');
    fail = false;
    expect((await search.scope({})).tools.size).toBe(2);
    search.close();
  });
});
