/**
 * src/catalog/tool-search.ts: ranking properties of the BM25F index (exact names first, words split
 * from identifiers, fields that count more, related words), the compact hit (first sentence,
 * signature), odd input, and a 1,000-tool build searched well within a millisecond per query.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { buildToolIndex, firstSentence, signatureOf, type SearchableTool } from '../../src/catalog/tool-search.js';

const tool = (server: string, name: string, description: string, properties: Record<string, unknown> = {}, required: string[] = []): SearchableTool => ({
  server,
  name,
  exposed: `${server}__${name}`,
  description,
  inputSchema: { type: 'object', properties, required },
});

const TOOLS: SearchableTool[] = [
  tool('fs', 'read_file', 'Read the complete contents of a file from the file system.', { path: { type: 'string' }, head: { type: 'number' } }, ['path']),
  tool(
    'fs',
    'write_file',
    'Create a new file or completely overwrite an existing file with new content.',
    { path: { type: 'string' }, content: { type: 'string' } },
    ['path', 'content'],
  ),
  tool('fs', 'list_directory', 'Get a detailed listing of all files and directories in a specified path.', { path: { type: 'string' } }, ['path']),
  tool(
    'github',
    'create_issue',
    'Create a new issue in a GitHub repository.',
    { owner: { type: 'string' }, repo: { type: 'string' }, title: { type: 'string' } },
    ['owner', 'repo', 'title'],
  ),
  tool('github', 'searchRepositories', 'Search for GitHub repositories.', { query: { type: 'string', description: 'Search query' } }, ['query']),
  tool('slack', 'post_message', 'Post a new message to a Slack channel.', { channel_id: { type: 'string' }, text: { type: 'string' } }, ['channel_id', 'text']),
  tool('browser', 'take_screenshot', 'Take a screenshot of the current page.', { fullPage: { type: 'boolean' } }),
  tool('memory', 'delete_entities', 'Delete multiple entities and their associated relations from the knowledge graph.', {
    entityNames: { type: 'array', items: { type: 'string' } },
  }),
];

describe('buildToolIndex: ranking', () => {
  const index = buildToolIndex(TOOLS, [{ server: 'slack', title: 'Slack workspace', instructions: 'Talk to a Slack workspace: channels, messages, users.' }]);

  it('counts its tools', () => {
    expect(index.size).toBe(TOOLS.length);
  });

  it('ranks an exact exposed name or tool name first', () => {
    for (const t of TOOLS) {
      expect(index.search(t.exposed)[0]?.exposed).toBe(t.exposed);
      expect(index.search(t.name)[0]?.exposed).toBe(t.exposed);
      expect(index.search(t.exposed.toUpperCase())[0]?.exposed).toBe(t.exposed);
    }
  });

  it('ranks an exact name first even against a tool whose description repeats the words', () => {
    const noisy = buildToolIndex([tool('a', 'read', 'Read read read files, read everything, read file read.'), tool('b', 'read_file', 'Open a thing.')]);
    expect(noisy.search('read_file')[0]?.exposed).toBe('b__read_file');
  });

  it('splits names at _, -, . and camelCase', () => {
    expect(index.search('search repositories')[0]?.exposed).toBe('github__searchRepositories');
    expect(index.search('list directory')[0]?.exposed).toBe('fs__list_directory');
    const dotted = buildToolIndex([tool('k', 'pods.listAll', 'x'), tool('k', 'nodes-get', 'y')]);
    expect(dotted.search('pods')[0]?.name).toBe('pods.listAll');
    expect(dotted.search('nodes')[0]?.name).toBe('nodes-get');
  });

  it('stems: plural and verb forms find the same tool', () => {
    expect(index.search('reading files')[0]?.exposed).toBe('fs__read_file');
    expect(index.search('screenshots')[0]?.exposed).toBe('browser__take_screenshot');
  });

  it('finds a tool through a related word it never uses', () => {
    // "remove" is not in delete_entities' text; "delete" is its concept.
    expect(index.search('remove entities')[0]?.exposed).toBe('memory__delete_entities');
    // "send" is not in post_message's text.
    expect(index.search('send a message')[0]?.exposed).toBe('slack__post_message');
  });

  it('weights the name above the description', () => {
    const two = buildToolIndex([tool('a', 'notes', 'Keeps things. Also mentions a screenshot once.'), tool('b', 'screenshot', 'Keeps things.')]);
    expect(two.search('screenshot')[0]?.exposed).toBe('b__screenshot');
  });

  it('ranks words next to each other in a name or first sentence above the same words apart', () => {
    const pairs = buildToolIndex([
      tool('a', 'request_mirror_pull', 'Request a mirror of a remote and pull it.'),
      tool('b', 'pull_request_mirror', 'Mirror a pull request of a remote.'),
    ]);
    expect(pairs.search('pull request')[0]?.exposed).toBe('b__pull_request_mirror');
    expect(pairs.search('request mirror')[0]?.exposed).toBe('a__request_mirror_pull');
  });

  it('ranks the first step of a multi-step query first: words of later clauses count less', () => {
    const steps = buildToolIndex([
      tool('k', 'describe_resource', 'Describe a failing or broken resource in detail.'),
      tool('k', 'list_pods', 'List the pods of a namespace.'),
    ]);
    for (const q of [
      'list the pods, then describe the failing broken one',
      'list pods; describe the failing broken one',
      'list pods then describe the failing broken one',
    ])
      expect(steps.search(q)[0]?.name, q).toBe('list_pods');
    // One clause: every word counts the same.
    expect(steps.search('list pods and describe the failing broken one')[0]?.name).toBe('describe_resource');
  });

  it('uses the server name and the server instructions', () => {
    expect(index.search('slack')[0]?.server).toBe('slack');
    expect(index.search('github')[0]?.server).toBe('github');
  });

  it('returns compact hits: first sentence, signature and a rounded score', () => {
    const [hit] = index.search('read file');
    expect(hit).toMatchObject({
      server: 'fs',
      name: 'read_file',
      exposed: 'fs__read_file',
      description: 'Read the complete contents of a file from the file system.',
      signature: 'read_file(path: string, head?: number)',
    });
    expect(hit!.score).toBeGreaterThan(0);
    expect(Math.round(hit!.score * 1000) / 1000).toBe(hit!.score);
  });

  it('orders by score, best first, and honours the limit (default 5, at most 50)', () => {
    const all = index.search('file', 50);
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.score).toBeGreaterThanOrEqual(all[i]!.score);
    const many = buildToolIndex(Array.from({ length: 80 }, (_, i) => tool('s', `thing_${i}`, 'A widget tool.')));
    expect(many.search('widget')).toHaveLength(5);
    expect(many.search('widget', 2)).toHaveLength(2);
    expect(many.search('widget', 500)).toHaveLength(50);
    expect(many.search('widget', 0)).toHaveLength(1);
    expect(many.search('widget', Number.NaN)).toHaveLength(5);
  });

  it('answers [] for an empty query, stop words only, punctuation, or no match', () => {
    expect(index.search('')).toEqual([]);
    expect(index.search('   ')).toEqual([]);
    expect(index.search('the of and')).toEqual([]);
    expect(index.search('?!…')).toEqual([]);
    expect(index.search('zzqxj')).toEqual([]);
    expect(buildToolIndex([]).search('file')).toEqual([]);
    expect(buildToolIndex([]).size).toBe(0);
  });

  it('searches the first 1,000 characters of a very long query, in bounded time', () => {
    const long = `screenshot ${'lorem ipsum '.repeat(20_000)}`;
    const t0 = performance.now();
    expect(index.search(long)[0]?.exposed).toBe('browser__take_screenshot');
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(index.search(`${'lorem '.repeat(300)}screenshot`)).toEqual([]);
  });

  it('takes tools with no description or schema, and odd schemas', () => {
    const odd = buildToolIndex([
      { server: 's', name: 'bare', exposed: 's__bare' },
      { server: 's', name: 'weird', exposed: 's__weird', inputSchema: { type: 'object', properties: 'nope' as unknown as Record<string, unknown> } },
      { server: 's', name: 'hasOwnProperty', exposed: 's__hasOwnProperty', description: 'constructor __proto__ toString' },
    ]);
    expect(odd.search('bare')[0]).toMatchObject({ exposed: 's__bare', description: '', signature: 'bare()' });
    expect(odd.search('weird')[0]?.signature).toBe('weird()');
    expect(odd.search('constructor')[0]?.exposed).toBe('s__hasOwnProperty');
    expect(odd.search('__proto__')[0]?.exposed).toBe('s__hasOwnProperty');
  });
});

describe('buildToolIndex: the captured listings of real servers (bench/tool-search/listings)', () => {
  const dir = join(packageRoot(), 'bench', 'tool-search', 'listings');
  const listings = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as { server: string; instructions?: string; tools: SearchableTool[] });
  const tools = listings.flatMap((l) => l.tools.map((t) => ({ ...t, server: l.server, exposed: `${l.server}__${t.name}` })));
  const index = buildToolIndex(
    tools,
    listings.map((l) => ({ server: l.server, ...(l.instructions ? { instructions: l.instructions } : {}) })),
  );

  it('ranks every tool first for its exposed name, and for its own name (among the servers that share it)', () => {
    expect(tools.length).toBeGreaterThan(200);
    for (const t of tools) {
      expect(index.search(t.exposed)[0]?.exposed).toBe(t.exposed);
      const sharing = tools.filter((o) => o.name.toLowerCase() === t.name.toLowerCase()).length;
      expect(
        index
          .search(t.name, sharing)
          .map((h) => h.exposed)
          .includes(t.exposed),
      ).toBe(true);
    }
  });

  it('answers the same query the same way every time (its scratch space is reset)', () => {
    const queries = ['take a screenshot of the page', 'open an issue', 'github__create_issue', 'delete', 'x'];
    const first = queries.map((q) => index.search(q, 10));
    for (let i = 0; i < 3; i++) expect(queries.map((q) => index.search(q, 10))).toEqual(first);
    // Limits cut the same ranking.
    expect(index.search('take a screenshot of the page', 3)).toEqual(first[0]!.slice(0, 3));
  });

  it('keeps every hit compact: one sentence, a signature of at most 120 characters', () => {
    for (const q of ['search the web', 'list files', 'kubernetes pods', 'notion page']) {
      for (const h of index.search(q, 10)) {
        expect(h.description.length).toBeLessThanOrEqual(200);
        expect(h.description).not.toContain('\n');
        expect(h.signature.length).toBeLessThanOrEqual(120);
        expect(h.signature.startsWith(`${h.name}(`)).toBe(true);
      }
    }
  });
});

describe('firstSentence', () => {
  it('takes the first sentence, not an abbreviation inside it', () => {
    expect(firstSentence('Read a file. Then more.')).toBe('Read a file.');
    expect(firstSentence('Lists pods, e.g. in a namespace. More here.')).toBe('Lists pods, e.g. in a namespace.');
    expect(firstSentence('First line\nwraps on.\n\nSecond paragraph.')).toBe('First line wraps on.');
    expect(firstSentence('No full stop')).toBe('No full stop');
    expect(firstSentence(undefined)).toBe('');
    expect(firstSentence('')).toBe('');
  });

  it('skips headings and list marks before the first sentence (as some servers write descriptions)', () => {
    expect(firstSentence('\n    🎯 Purpose:\n      1. Retrieves a paginated list of objects.\n\n    📦 Returns: more')).toBe(
      'Retrieves a paginated list of objects.',
    );
    expect(firstSentence('🛡️ Guardrails\n  1. Data Modification Warning: This tool modifies data. Only use when asked.')).toBe(
      'Data Modification Warning: This tool modifies data.',
    );
    expect(firstSentence('## Usage\n\nDo the thing. Other.')).toBe('Do the thing.');
    expect(firstSentence('- Lists pods. More.')).toBe('Lists pods.');
    expect(firstSentence('Usage:')).toBe('Usage:');
  });

  it('cuts a very long sentence with …', () => {
    const s = firstSentence('word '.repeat(100));
    expect(s.length).toBeLessThanOrEqual(200);
    expect(s.endsWith('…')).toBe(true);
  });
});

describe('signatureOf', () => {
  it('marks optional parameters and shortens types', () => {
    expect(
      signatureOf({
        name: 'f',
        inputSchema: {
          type: 'object',
          properties: {
            a: { type: 'string' },
            b: { type: 'integer' },
            c: { type: 'array', items: { type: 'string' } },
            d: { type: 'object', properties: {} },
            e: { type: 'string', enum: ['x', 'y'] },
            f: { type: ['string', 'null'] },
            g: { anyOf: [{ type: 'string' }, { type: 'number' }] },
            h: {},
          },
          required: ['a', 'c'],
        },
      }),
    ).toBe('f(a: string, b?: number, c: string[], d?: object, e?: "x"|"y", f?: string|null, g?: string|number, h?: any)');
  });

  it('keeps a long enum as its type', () => {
    expect(signatureOf({ name: 'f', inputSchema: { properties: { m: { type: 'string', enum: ['a', 'b', 'c', 'd', 'e', 'f'] } } } })).toBe('f(m?: string)');
  });

  it('cuts a long signature at a parameter with …', () => {
    const properties = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`parameter_${i}`, { type: 'string' }]));
    const sig = signatureOf({ name: 'many', inputSchema: { type: 'object', properties } });
    expect(sig.length).toBeLessThanOrEqual(120);
    expect(sig).toMatch(/^many\(parameter_0\?: string, .*, …\)$/);
  });

  it('takes no schema or a broken one', () => {
    expect(signatureOf({ name: 'x' })).toBe('x()');
    expect(signatureOf({ name: 'x', inputSchema: { properties: null } as unknown as Record<string, unknown> })).toBe('x()');
  });
});

describe('buildToolIndex: 1,000 tools', () => {
  const VERBS = ['get', 'list', 'create', 'update', 'delete', 'search', 'send', 'read', 'write', 'run'];
  const NOUNS = ['file', 'issue', 'message', 'page', 'user', 'pod', 'table', 'event', 'comment', 'branch'];
  const big: SearchableTool[] = [];
  for (let s = 0; s < 10; s++)
    for (const v of VERBS)
      for (const noun of NOUNS)
        big.push(
          tool(`server${s}`, `${v}_${noun}`, `${v[0]!.toUpperCase()}${v.slice(1)} a ${noun} in service ${s}. Takes an id and options for the ${noun}.`, {
            id: { type: 'string', description: `The ${noun} id` },
            options: { type: 'object' },
          }),
        );

  it('builds, finds an exact name first, and answers a query in well under a millisecond (p50)', () => {
    expect(big).toHaveLength(1000);
    const t0 = performance.now();
    const index = buildToolIndex(big);
    const buildMs = performance.now() - t0;
    expect(index.size).toBe(1000);
    expect(index.search('server7__delete_branch')[0]?.exposed).toBe('server7__delete_branch');
    // Generous bounds for a busy, shared machine: the bench measures the real figures.
    expect(buildMs).toBeLessThan(2000);
    const queries = ['remove a branch', 'find messages', 'create issue', 'read file contents', 'list pods in service 3', 'update the user'];
    for (const q of queries) index.search(q); // warm up
    const times: number[] = [];
    for (let i = 0; i < 300; i++) {
      const s = performance.now();
      index.search(queries[i % queries.length]!, 10);
      times.push(performance.now() - s);
    }
    times.sort((a, b) => a - b);
    expect(times[150]!).toBeLessThan(5);
  });
});
