import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CATALOG_FILE, CatalogStore, catalogKey, sameListing, type CatalogRecord } from '../../src/catalog/catalog-store.js';
import { CacheIoError, McpxError } from '../../src/errors.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await fs.mkdtemp(join(os.tmpdir(), 'mcpx-catalog-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(dirs.splice(0).map((d) => fs.rm(d, { recursive: true, force: true })));
});

function recordingLogger() {
  const warnings: Array<{ obj: Record<string, unknown>; msg: string | undefined }> = [];
  return { warnings, logger: { warn: (obj: object, msg?: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg }) } };
}

interface CatalogFile {
  version: number;
  servers: Record<string, CatalogRecord>;
}
const readJson = async (file: string): Promise<CatalogFile> => JSON.parse(await fs.readFile(file, 'utf8')) as CatalogFile;
const mode = async (p: string): Promise<number> => (await fs.stat(p)).mode & 0o777;

// A 2020-12 schema using what a zod-shaped copy would lose: `$schema`, `$defs`, `prefixItems`,
// keywords no vocabulary defines, key order, and a property literally named `__proto__`.
const SCHEMA_2020 = JSON.parse(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:mcpx:test:search",
  "type": "object",
  "$defs": {
    "point": { "type": "array", "prefixItems": [{ "type": "number" }, { "type": "number" }], "items": false, "minItems": 2 },
    "tag": { "type": "string", "pattern": "^[a-z]+$", "x-vendor-hint": { "weird": [1, null, true, 2.5e-7] } }
  },
  "properties": {
    "where": { "$ref": "#/$defs/point" },
    "tags": { "type": "array", "items": { "$ref": "#/$defs/tag" }, "unevaluatedItems": false, "contains": { "const": "a" } },
    "__proto__": { "type": "string", "description": "ünïcødé ✓" },
    "mode": { "enum": ["fast", "exact", null], "default": "fast" }
  },
  "dependentSchemas": { "where": { "required": ["tags"] } },
  "required": ["where"],
  "additionalProperties": false,
  "$comment": "keep me",
  "someUnknownKeyword": { "nested": { "deeper": [] } }
}`) as Record<string, unknown>;

const TOOL = {
  name: 'search',
  title: 'Search',
  description: 'Finds things',
  inputSchema: SCHEMA_2020,
  outputSchema: { type: 'object', properties: { hits: { type: 'integer', minimum: 0 } } },
  annotations: { readOnlyHint: true },
  _meta: { 'x/y': 1 },
};
const FULL: CatalogRecord = {
  at: '2026-11-29T21:00:00.000Z',
  era: 'modern',
  tools: [TOOL, { name: 'echo', inputSchema: { type: 'object' } }],
  prompts: [{ name: 'greet', arguments: [{ name: 'who', required: true }] }],
  resources: [{ uri: 'file:///a.txt', name: 'a', mimeType: 'text/plain' }],
  resourceTemplates: [{ uriTemplate: 'file:///{path}', name: 'files' }],
  capabilities: { tools: { listChanged: true }, experimental: { 'x.y': {} } },
  serverInfo: { name: 'dual', version: '1.0.0' },
  instructions: 'Be nice.',
};
const SMALL: CatalogRecord = { at: '2026-11-29T21:00:01+01:00', tools: [{ name: 'add', inputSchema: { type: 'object' } }] };

describe('CatalogStore', () => {
  it('catalogKey is the era cache key and the lane', () => {
    const def = { command: 'node', args: ['server.mjs'], env: { A: '1' } };
    expect(catalogKey(def, 'own')).toBe(`${eraCacheKey(def)}:own`);
    expect(catalogKey(def, 'legacy')).toBe(`${eraCacheKey(def)}:legacy`);
    expect(catalogKey({ ...def, mcpx: { max: 2 } } as typeof def, 'own')).toBe(catalogKey(def, 'own'));
  });

  it('round trip: listed items come back byte for byte, in memory, on disk and after reopening', async () => {
    const dir = await tempDir();
    const store = await CatalogStore.open(dir);
    expect(store.file).toBe(join(dir, CATALOG_FILE));
    expect(store.get('a:own')).toBeUndefined();
    await store.set('a:own', FULL);
    await store.set('b:legacy', SMALL);

    const exact = (r: CatalogRecord | undefined): string => JSON.stringify(r);
    expect(exact(store.get('a:own'))).toBe(exact(FULL));
    const onDisk = await readJson(store.file);
    expect(Object.keys(onDisk)).toEqual(['version', 'servers']);
    expect(onDisk.version).toBe(1);
    expect(Object.keys(onDisk.servers)).toEqual(['a:own', 'b:legacy']);
    expect(exact(onDisk.servers['a:own'])).toBe(exact(FULL));
    expect(JSON.stringify(onDisk.servers['a:own']!.tools[0]!.inputSchema)).toBe(JSON.stringify(SCHEMA_2020));
    expect(Object.keys((onDisk.servers['a:own']!.tools[0]!.inputSchema as { properties: object }).properties)).toContain('__proto__');

    const again = await CatalogStore.open(dir);
    expect(exact(again.get('a:own'))).toBe(exact(FULL));
    expect(again.get('b:legacy')).toEqual(SMALL);
    expect(
      again
        .entries()
        .map(([k]) => k)
        .sort(),
    ).toEqual(['a:own', 'b:legacy']);

    await again.delete('a:own');
    expect(again.get('a:own')).toBeUndefined();
    expect(Object.keys((await readJson(store.file)).servers)).toEqual(['b:legacy']);
    expect((await CatalogStore.open(dir)).get('a:own')).toBeUndefined();
    expect(await fs.readdir(dir)).toEqual([CATALOG_FILE]); // no temp or lock files left behind
  });

  it('records are copied and deep-frozen; unknown top-level fields are not stored; invalid records are refused', async () => {
    const dir = await tempDir();
    const store = await CatalogStore.open(dir);
    const rec = structuredClone({ ...SMALL, junk: 'x' }) as CatalogRecord;
    await store.set('k', rec);
    (rec.tools[0]!.inputSchema as Record<string, unknown>).type = 'string';
    const got = store.get('k')!;
    expect(got).toEqual(SMALL);
    expect('junk' in got).toBe(false);
    expect(Object.isFrozen(got.tools[0]!.inputSchema)).toBe(true);
    expect(Object.isFrozen(rec.tools[0])).toBe(false); // the caller's object is left alone

    const bad: Array<[string, unknown]> = [
      ['a tool without a name', { at: SMALL.at, tools: [{ inputSchema: {} }] }],
      ['a prompt with a numeric name', { at: SMALL.at, tools: [], prompts: [{ name: 3 }] }],
      ['a resource without uri', { at: SMALL.at, tools: [], resources: [{ name: 'r' }] }],
      ['a template without uriTemplate', { at: SMALL.at, tools: [], resourceTemplates: [{ uri: 'x' }] }],
      ['no tools', { at: SMALL.at }],
      ['a bad at', { ...SMALL, at: 'yesterday' }],
      ['a bad era', { ...SMALL, era: 'future' }],
      ['capabilities not an object', { ...SMALL, capabilities: [] }],
    ];
    for (const [, record] of bad) await expect(store.set('bad', record as CatalogRecord)).rejects.toThrow(TypeError);
    expect(store.get('bad')).toBeUndefined();
  });

  it('creates the state folder 0700 and the file 0600', async () => {
    const dir = join(await tempDir(), 'state', 'nested');
    const store = await CatalogStore.open(dir);
    expect(existsSync(dir)).toBe(false); // opening never creates anything
    await store.set('a', SMALL);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(store.file)).toBe(0o600);
    await store.set('b', FULL);
    expect(await mode(store.file)).toBe(0o600);
  });

  it('changes made while a write waits for the lock join one later write', async () => {
    const dir = await tempDir();
    const lock = join(dir, `${CATALOG_FILE}.lock`);
    await fs.writeFile(lock, 'someone else\n');
    const store = await CatalogStore.open(dir);
    const renames = vi.spyOn(fs, 'rename');
    const first = store.set('k0', SMALL);
    await new Promise((r) => setTimeout(r, 50)); // the first write is now waiting for the lock
    const rest = Array.from({ length: 30 }, (_, i) => store.set(`k${i + 1}`, { ...SMALL, instructions: `#${i + 1}` }));
    setTimeout(() => void fs.rm(lock), 100);
    await Promise.all([first, ...rest]);
    const onDisk = await readJson(store.file);
    expect(Object.keys(onDisk.servers)).toHaveLength(31);
    expect(onDisk.servers.k7?.instructions).toBe('#7');
    expect(renames.mock.calls.filter(([, to]) => to === store.file)).toHaveLength(2);
  });

  it('two instances on one folder merge instead of overwriting, deletes included', async () => {
    const dir = await tempDir();
    const a = await CatalogStore.open(dir);
    const b = await CatalogStore.open(dir);
    await Promise.all([...Array.from({ length: 10 }, (_, i) => a.set(`a${i}`, SMALL)), ...Array.from({ length: 10 }, (_, i) => b.set(`b${i}`, FULL))]);
    await a.set('a0', FULL);
    expect(Object.keys((await readJson(a.file)).servers)).toHaveLength(20);
    expect(a.get('b3')).toEqual(FULL); // a saw b's records when it wrote
    await a.delete('b1');
    await b.set('b2', SMALL);
    const final = (await readJson(a.file)).servers;
    expect(final.b1).toBeUndefined();
    expect(final.b2).toEqual(SMALL);
    expect(Object.keys(final)).toHaveLength(19);
  });

  describe('damaged files never throw and are replaced by the next write', () => {
    const damaged: Array<[string, string]> = [
      ['empty', ''],
      ['truncated JSON', JSON.stringify({ version: 1, servers: { a: FULL } }).slice(0, 120)],
      ['not JSON', 'hello'],
      ['an array', '[]'],
      ['other version', JSON.stringify({ version: 2, servers: { a: SMALL } })],
      ['no version', JSON.stringify({ servers: { a: SMALL } })],
      ['servers not an object', JSON.stringify({ version: 1, servers: [SMALL] })],
    ];
    for (const [name, text] of damaged) {
      it(name, async () => {
        const dir = await tempDir();
        const file = join(dir, CATALOG_FILE);
        await fs.writeFile(file, text);
        const { warnings, logger } = recordingLogger();
        const store = await CatalogStore.open(dir, { logger });
        expect(store.entries()).toEqual([]);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.obj.file).toBe(file);
        expect(typeof warnings[0]!.obj.problem).toBe('string');
        await store.set('a', SMALL);
        expect(await readJson(file)).toEqual({ version: 1, servers: { a: SMALL } });
      });
    }

    it('bad records are dropped, the good ones kept unchanged', async () => {
      const dir = await tempDir();
      const file = join(dir, CATALOG_FILE);
      const servers = {
        good: FULL,
        small: SMALL,
        'tool-without-name': { at: SMALL.at, tools: [{ name: 'ok' }, { description: 'no name' }] },
        'tools-not-array': { at: SMALL.at, tools: { name: 'x' } },
        'item-not-object': { at: SMALL.at, tools: ['search'] },
        'resource-without-uri': { ...SMALL, resources: [{ name: 'r' }] },
        'template-without-uriTemplate': { ...SMALL, resourceTemplates: [{ uri: 'file:///x' }] },
        'bad-at': { ...SMALL, at: 'soon' },
        'bad-era': { ...SMALL, era: 'ancient' },
        'instructions-not-string': { ...SMALL, instructions: 7 },
        'not-object': 'tools',
      };
      await fs.writeFile(file, JSON.stringify({ version: 1, servers }));
      const { warnings, logger } = recordingLogger();
      const store = await CatalogStore.open(dir, { logger });
      expect(store.entries().map(([k]) => k)).toEqual(['good', 'small']);
      expect(JSON.stringify(store.get('good'))).toBe(JSON.stringify(FULL));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toBe('tool catalog: dropped 9 invalid record(s)');
      expect(warnings[0]!.obj.dropped).toHaveLength(9);
      await store.set('new', SMALL);
      expect(Object.keys((await readJson(file)).servers)).toEqual(['good', 'new', 'small']);
    });
  });

  it('a file that is a directory: open warns, set fails with MCPX_CACHE_IO and keeps the record in memory', async () => {
    const dir = await tempDir();
    await fs.mkdir(join(dir, CATALOG_FILE));
    const { warnings, logger } = recordingLogger();
    const store = await CatalogStore.open(dir, { logger });
    expect(warnings).toHaveLength(1);
    const err = await store.set('a', SMALL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CacheIoError);
    expect((err as McpxError).code).toBe('MCPX_CACHE_IO');
    expect(store.get('a')).toEqual(SMALL);
    expect(await fs.readdir(dir)).toEqual([CATALOG_FILE]);
  });

  it('a missing file is not a warning', async () => {
    const { warnings, logger } = recordingLogger();
    const store = await CatalogStore.open(await tempDir(), { logger });
    expect(store.entries()).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('disabled: nothing is read or written', async () => {
    const dir = await tempDir();
    const file = join(dir, CATALOG_FILE);
    await fs.writeFile(file, JSON.stringify({ version: 1, servers: { a: SMALL } }));
    const store = await CatalogStore.open(dir, { enabled: false });
    expect(store.enabled).toBe(false);
    expect(store.get('a')).toBeUndefined();
    await store.set('b', FULL);
    await store.delete('a');
    await store.whenIdle();
    expect(store.get('b')).toBeUndefined();
    expect(store.entries()).toEqual([]);
    expect(await readJson(file)).toEqual({ version: 1, servers: { a: SMALL } });
    expect(await fs.readdir(dir)).toEqual([CATALOG_FILE]);
    const fresh = join(dir, 'never');
    await (await CatalogStore.open(fresh, { enabled: false })).set('c', SMALL);
    expect(existsSync(fresh)).toBe(false);
  });

  describe('lock file', () => {
    it('a held lock makes a write fail with MCPX_CACHE_IO after lockTimeoutMs; the change lands later', async () => {
      const dir = await tempDir();
      const lock = join(dir, `${CATALOG_FILE}.lock`);
      await fs.writeFile(lock, 'someone else\n');
      const store = await CatalogStore.open(dir, { lockTimeoutMs: 150 });
      const t0 = Date.now();
      const err = await store.set('a', SMALL).catch((e: unknown) => e);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
      expect(err).toBeInstanceOf(CacheIoError);
      expect((err as Error).message).toMatch(/lock/);
      expect(existsSync(store.file)).toBe(false);
      await fs.rm(lock);
      await store.set('b', FULL);
      expect(Object.keys((await readJson(store.file)).servers)).toEqual(['a', 'b']);
    });

    it('a stale lock (older than staleLockMs) is removed with a warning', async () => {
      const dir = await tempDir();
      const lock = join(dir, `${CATALOG_FILE}.lock`);
      await fs.writeFile(lock, '99999 crashed\n');
      const old = new Date(Date.now() - 5_000);
      await fs.utimes(lock, old, old);
      const { warnings, logger } = recordingLogger();
      const store = await CatalogStore.open(dir, { logger, lockTimeoutMs: 500, staleLockMs: 2_000 });
      await store.set('a', SMALL);
      expect((await readJson(store.file)).servers.a).toEqual(SMALL);
      expect(warnings.map((w) => w.msg)).toEqual(['removed a stale tool catalog lock']);
      expect(warnings[0]!.obj.holder).toBe('99999 crashed');
      expect(await fs.readdir(dir)).toEqual([CATALOG_FILE]);
    });

    it('a lock younger than staleLockMs is left alone', async () => {
      const dir = await tempDir();
      const lock = join(dir, `${CATALOG_FILE}.lock`);
      await fs.writeFile(lock, 'alive\n');
      const store = await CatalogStore.open(dir, { lockTimeoutMs: 100, staleLockMs: 60_000 });
      await expect(store.set('a', SMALL)).rejects.toBeInstanceOf(CacheIoError);
      expect(await fs.readFile(lock, 'utf8')).toBe('alive\n');
    });
  });
});

describe('sameListing', () => {
  it('ignores at, era, capabilities, serverInfo, instructions and key order inside items', () => {
    const reordered = JSON.parse(JSON.stringify(FULL), (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
    ) as CatalogRecord;
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(FULL));
    expect(sameListing(FULL, { ...reordered, at: '2027-01-01T00:00:00Z', era: 'legacy', capabilities: {}, serverInfo: {}, instructions: '' })).toBe(true);
  });

  it('an absent list equals an empty one', () => {
    expect(sameListing(SMALL, { ...SMALL, prompts: [], resources: [], resourceTemplates: [] })).toBe(true);
  });

  it('notices a change anywhere in any list, item order included', () => {
    const tweak = (f: (r: CatalogRecord) => void): CatalogRecord => {
      const r = structuredClone(FULL);
      f(r);
      return r;
    };
    expect(
      sameListing(
        FULL,
        tweak((r) => ((r.tools[0]!.inputSchema as { $defs: { point: { minItems: number } } }).$defs.point.minItems = 3)),
      ),
    ).toBe(false);
    expect(
      sameListing(
        FULL,
        tweak((r) => r.tools.reverse()),
      ),
    ).toBe(false);
    expect(
      sameListing(
        FULL,
        tweak((r) => r.prompts!.pop()),
      ),
    ).toBe(false);
    expect(
      sameListing(
        FULL,
        tweak((r) => (r.resources![0]!.uri = 'file:///b.txt')),
      ),
    ).toBe(false);
    expect(
      sameListing(
        FULL,
        tweak((r) => (r.resourceTemplates = [])),
      ),
    ).toBe(false);
    expect(
      sameListing(
        FULL,
        tweak((r) => (r.tools[1]!.description = 'new')),
      ),
    ).toBe(false);
  });
});

/**
 * Compiles src/catalog/catalog-store.ts and the project files it imports (only those: a whole-project
 * tsc takes far longer) into `out`, so plain `node` child processes can load them.
 */
async function compileCatalogStore(out: string): Promise<string> {
  const entry = join(ROOT, 'src', 'catalog', 'catalog-store.ts');
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = await fs.readFile(file, 'utf8');
    for (const m of source.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)\.js'/gms)) queue.push(resolve(dirname(file), `${m[1]}.ts`));
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    const target = join(out, relative(ROOT, file)).replace(/\.ts$/, '.js');
    await fs.mkdir(dirname(target), { recursive: true });
    await fs.writeFile(target, outputText);
  }
  await fs.writeFile(join(out, 'package.json'), '{"type":"module"}\n');
  await fs.symlink(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir');
  return join(out, 'src', 'catalog', 'catalog-store.js');
}

describe('CatalogStore across processes', () => {
  const HELPER = join(ROOT, 'test', 'catalog', 'helpers', 'catalog-writer.mjs');
  const WRITERS = 6;
  const PER_WRITER = 20;
  let build: string;
  let compiled: string;

  beforeAll(async () => {
    build = await fs.mkdtemp(join(os.tmpdir(), 'mcpx-catalog-build-'));
    compiled = await compileCatalogStore(build);
  });
  afterAll(async () => {
    await fs.rm(build, { recursive: true, force: true });
  });

  it(`${WRITERS} processes × ${PER_WRITER} keys: every record lands and the file stays valid`, async () => {
    const dir = await tempDir();
    const startAt = Date.now() + 400; // every child loads first, then all start together
    const results = await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        run(process.execPath, [HELPER, compiled, dir, String(w), String(PER_WRITER), String(startAt)], { cwd: ROOT, timeout: 20_000 }),
      ),
    );
    for (const r of results) expect(r.stderr).toBe('');
    const summaries = results.map((r) => JSON.parse(r.stdout) as { writerId: string; ms: number; seen: number });
    console.log(`[catalog-store] ${WRITERS} writers × ${PER_WRITER} sets: ${summaries.map((s) => `${s.ms} ms`).join(', ')}`);

    const onDisk = await readJson(join(dir, CATALOG_FILE));
    expect(onDisk.version).toBe(1);
    expect(Object.keys(onDisk.servers)).toHaveLength(WRITERS * PER_WRITER);
    for (let w = 0; w < WRITERS; w++) {
      for (let i = 0; i < PER_WRITER; i++) {
        const rec = onDisk.servers[`w${w}-${i}:own`];
        expect(rec?.era).toBe(i % 2 === 0 ? 'legacy' : 'modern');
        expect(rec?.tools).toEqual([
          {
            name: `tool-${w}-${i}`,
            inputSchema: {
              $schema: 'https://json-schema.org/draft/2020-12/schema',
              type: 'object',
              properties: { n: { type: 'integer', const: i }, by: { const: `writer-${w}` } },
              required: ['n'],
            },
          },
        ]);
      }
    }
    // the last writer to finish saw everything
    expect(Math.max(...summaries.map((s) => s.seen))).toBe(WRITERS * PER_WRITER);
    expect((await CatalogStore.open(dir)).entries()).toHaveLength(WRITERS * PER_WRITER);
    expect(await fs.readdir(dir)).toEqual([CATALOG_FILE]);
    expect(await mode(join(dir, CATALOG_FILE))).toBe(0o600);
  });
});
