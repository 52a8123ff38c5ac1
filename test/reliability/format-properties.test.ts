/**
 * Property-based (fast-check): what mcpx reads that someone else wrote.
 *
 * - NDJSON framing (src/transports/ndjson.ts) with arbitrary byte streams cut into arbitrary chunks: the
 *   lines delivered are exactly those of a one-pass reference reading of the whole stream (LF ends a
 *   line, one CR before it dropped, a BOM dropped, blank lines skipped, a final unterminated line on
 *   end()), whatever the cuts — inside multi-byte characters, between CR and LF; with a line limit,
 *   the same lines up to the first one over it, then one overflow and nothing more. Messages encoded
 *   with `encode` come back equal, however cut.
 * - `upstream-eras.json` (src/upstream/era-cache.ts) with arbitrary contents: opening never throws;
 *   it holds exactly the records the schema accepts (none when the file is not a version-1 object);
 *   a write after that leaves a file that reads back as the same records plus the new one.
 * - The plain checks of the state files' records (src/state/record-checks.ts, which replaced zod there so
 *   the daemon starts without loading it) against the zod schemas they replaced, kept here: on arbitrary
 *   values, the same records accepted and the same record kept.
 * - The config file (src/config/config-file.ts) with arbitrary text and arbitrary JSON: parsing never
 *   throws; every problem names the file; a problem about a server names its key; a file with no
 *   problems gives servers named as in the file, each with a command or a URL, and settings that load.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/config-file.js';
import { Settings } from '../../src/config/settings.js';
import { encode, NdjsonDecoder } from '../../src/transports/ndjson.js';
import * as z from 'zod';
import { catalogRecordOf, eraRecordOf } from '../../src/state/record-checks.js';
import { ERA_CACHE_FILE, ERA_CACHE_VERSION, EraCache, type EraRecord } from '../../src/upstream/era-cache.js';

const RUNS = Number(process.env['MCPX_PROPERTY_RUNS'] ?? 200);
const runs = { numRuns: RUNS, interruptAfterTimeLimit: 15_000 };
const generated = { ndjson: 0, eraCache: 0, config: 0 };
afterAll(() => {
  console.log(`format-properties: generated ${generated.ndjson} byte streams, ${generated.eraCache} era-cache files, ${generated.config} config files`);
});

// ---- the zod schemas the state files' records were checked with (the plain checks must agree) ----

const eraRecordSchema = z.object({
  era: z.enum(['legacy', 'modern']),
  version: z.string().min(1),
  at: z.iso.datetime({ offset: true }),
  source: z.string().min(1),
  transport: z.enum(['streamable-http', 'sse']).optional(),
  initialize: z.literal('refused').optional(),
});

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const plainObject = z.custom<Record<string, unknown>>(isPlainObject, 'expected a JSON object');
const itemWith = (field: string) =>
  z.custom<Record<string, unknown>>((v) => isPlainObject(v) && typeof v[field] === 'string', `expected a JSON object with a string "${field}"`);
const catalogRecordSchema = z.object({
  at: z.iso.datetime({ offset: true }),
  era: z.enum(['legacy', 'modern']).optional(),
  tools: z.array(itemWith('name')),
  prompts: z.array(itemWith('name')).optional(),
  resources: z.array(itemWith('uri')).optional(),
  resourceTemplates: z.array(itemWith('uriTemplate')).optional(),
  capabilities: plainObject.optional(),
  serverInfo: plainObject.optional(),
  instructions: z.string().optional(),
});

// ---- NDJSON ----

/** The reference: the whole stream at once. */
function referenceLines(bytes: Uint8Array, max = Number.POSITIVE_INFINITY): { lines: string[]; overflow: boolean } {
  const buf = Buffer.from(bytes);
  const lines: string[] = [];
  const segments: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < buf.length; i++) {
    if (buf[i] === 0x0a) {
      segments.push(buf.subarray(start, i));
      start = i + 1;
    }
  }
  if (start < buf.length) segments.push(buf.subarray(start)); // the final line, delivered on end()
  for (const seg of segments) {
    const length = seg.length > 0 && seg[seg.length - 1] === 0x0d ? seg.length - 1 : seg.length;
    if (length > max) return { lines, overflow: true };
    if (length === 0) continue;
    let text = seg.toString('utf8', 0, length);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (!/\S/.test(text)) continue;
    lines.push(text);
  }
  return { lines, overflow: false };
}

/** Cuts `bytes` at the given positions (any, sorted and deduplicated here). */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const points = [...new Set(at.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  return out;
}

function decodeAll(chunks: Uint8Array[], max?: number): { lines: string[]; overflows: Array<{ limit: number; bytes: number }> } {
  const lines: string[] = [];
  const overflows: Array<{ limit: number; bytes: number }> = [];
  const d = new NdjsonDecoder({ onLine: (l) => lines.push(l), ...(max === undefined ? {} : { maxLineBytes: max }), onOverflow: (o) => overflows.push(o) });
  for (const c of chunks) d.push(c);
  d.end();
  d.push(Buffer.from('{"after":"end"}\n')); // ignored: the input ended
  return { lines, overflows };
}

/** Bytes that stress the framing: LF, CR, BOM, multi-byte and broken UTF-8, spaces, JSON-ish text. */
const frameBytes = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: fc.uint8Array({ maxLength: 24 }) },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom('\n', '\r\n', '\r', '\ufeff', ' \t', 'é', '€', '😀', '{"jsonrpc":"2.0","id":1}', '\u2028')
          .map((s) => new Uint8Array(Buffer.from(s))),
      },
      { weight: 1, arbitrary: fc.constantFrom([0xe2, 0x82], [0xf0, 0x9f], [0xc3], [0xff, 0xfe], [0x80]).map((a) => Uint8Array.from(a)) },
    ),
    { maxLength: 40 },
  )
  .map((parts) => new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p)))));
const cuts = fc.array(fc.nat({ max: 2_000 }), { maxLength: 12 });

describe('NDJSON framing, arbitrary byte streams', () => {
  it('the same lines as the reference reading, however the stream is cut', () => {
    fc.assert(
      fc.property(frameBytes, cuts, (bytes, at) => {
        generated.ndjson += 1;
        const got = decodeAll(cut(bytes, at));
        expect(got.lines).toEqual(referenceLines(bytes).lines);
        expect(got.overflows).toEqual([]);
      }),
      runs,
    );
  });

  it('with a line limit: the same lines up to the first line over it, then exactly one overflow and nothing more', () => {
    fc.assert(
      fc.property(frameBytes, cuts, fc.integer({ min: 1, max: 40 }), (bytes, at, max) => {
        generated.ndjson += 1;
        const ref = referenceLines(bytes, max);
        const got = decodeAll(cut(bytes, at), max);
        expect(got.lines).toEqual(ref.lines);
        expect(got.overflows.length).toBe(ref.overflow ? 1 : 0);
        for (const o of got.overflows) {
          expect(o.limit).toBe(max);
          expect(o.bytes).toBeGreaterThan(max);
        }
      }),
      runs,
    );
  });

  it('messages written with encode() come back equal (U+2028/9 and all), however cut', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 4 }), { minLength: 1, maxLength: 8 }), cuts, (messages, at) => {
        generated.ndjson += 1;
        const wire = new Uint8Array(Buffer.from(messages.map((m) => encode(m)).join('')));
        const got = decodeAll(cut(wire, at));
        expect(got.lines).toHaveLength(messages.length);
        expect(got.lines.map((l) => JSON.parse(l) as unknown)).toEqual(messages.map((m) => JSON.parse(JSON.stringify(m)) as unknown));
      }),
      runs,
    );
  });
});

// ---- upstream-eras.json ----

const tmp: string[] = [];
afterAll(() => {
  for (const d of tmp) rmSync(d, { recursive: true, force: true });
});
function freshDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mcpx-eraprop-'));
  tmp.push(d);
  return d;
}

const goodRecord = fc.record(
  {
    era: fc.constantFrom('legacy', 'modern'),
    version: fc.constantFrom('2025-11-25', '2026-07-28', '2024-11-05'),
    at: fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
    source: fc.constantFrom('probe', 'cache', 'x'),
    transport: fc.constantFrom('streamable-http', 'sse'),
    initialize: fc.constant('refused'),
  },
  { requiredKeys: ['era', 'version', 'at', 'source'] },
);
/** A record: valid, valid with one field spoilt, or anything. */
const anyRecord = fc.oneof(
  { weight: 3, arbitrary: goodRecord },
  {
    weight: 2,
    arbitrary: fc
      .tuple(goodRecord, fc.constantFrom('era', 'version', 'at', 'source', 'transport', 'initialize'), fc.jsonValue({ maxDepth: 1 }))
      .map(([r, k, v]) => ({ ...r, [k]: v })),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);
const serverKey = fc.oneof(fc.string({ maxLength: 16 }), fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', ''));

/** The file's text: a well-formed cache of mixed records, a damaged one, or anything at all. */
const eraFile = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.tuple(serverKey, anyRecord), { maxLength: 6 }).map((entries) => ({ kind: 'cache' as const, entries })) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ kind: 'json' as const, text: JSON.stringify(v) })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 80 }).map((text) => ({ kind: 'text' as const, text })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 80 }).map((b) => ({ kind: 'bytes' as const, bytes: b })) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.array(fc.tuple(serverKey, goodRecord), { maxLength: 4 }), fc.nat()).map(([entries, n]) => {
      const text = cacheText(entries);
      return { kind: 'text' as const, text: text.slice(0, n % (text.length + 1)) }; // truncated mid-write
    }),
  },
);

/** `{"version":1,"servers":{…}}` with keys written literally (a `__proto__` key stays a key). */
function cacheText(entries: Array<[string, unknown]>, version: unknown = ERA_CACHE_VERSION): string {
  const servers = entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',');
  return `{"version":${JSON.stringify(version)},"servers":{${servers}}}`;
}

/** What the cache must hold after reading `text`. */
function expectedRecords(text: string): Map<string, EraRecord> {
  const out = new Map<string, EraRecord>();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return out;
  }
  const plain = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!plain(data) || data['version'] !== ERA_CACHE_VERSION || !plain(data['servers'])) return out;
  for (const [k, v] of Object.entries(data['servers'])) {
    const r = eraRecordSchema.safeParse(v);
    if (r.success) out.set(k, r.data as EraRecord);
  }
  return out;
}

describe('upstream-eras.json with arbitrary contents', () => {
  it('opens without throwing, holds exactly the valid records, and a write keeps them and adds the new one', async () => {
    const fresh: EraRecord = { era: 'modern', version: '2026-07-28', at: new Date().toISOString(), source: 'probe' };
    await fc.assert(
      fc.asyncProperty(eraFile, async (f) => {
        generated.eraCache += 1;
        const dir = freshDir();
        const file = join(dir, ERA_CACHE_FILE);
        const text = f.kind === 'cache' ? cacheText(f.entries) : f.kind === 'bytes' ? Buffer.from(f.bytes).toString('utf8') : f.text;
        if (f.kind === 'bytes') writeFileSync(file, f.bytes);
        else writeFileSync(file, text);
        const warnings: unknown[] = [];
        const cache = await EraCache.open(dir, { logger: { warn: (o: unknown) => warnings.push(o) } });
        const want = expectedRecords(text);
        expect(new Map(cache.entries())).toEqual(want);
        for (const [, r] of cache.entries()) expect(eraRecordSchema.safeParse(r).success).toBe(true);

        await cache.set('new-server', fresh);
        await cache.whenIdle();
        const onDisk = JSON.parse(await readFile(file, 'utf8')) as { version: number; servers: Record<string, unknown> };
        expect(onDisk.version).toBe(ERA_CACHE_VERSION);
        const again = await EraCache.open(dir);
        expect(new Map(again.entries())).toEqual(new Map([...want, ['new-server', fresh]]));
        rmSync(dir, { recursive: true, force: true });
      }),
      { ...runs, numRuns: Math.ceil(RUNS / 2) },
    );
  });
});

// ---- the config file ----

// Never read: the file name parse errors are to name.
const CONFIG = join(tmpdir(), 'some-project', '.mcpx.json');

const entry = fc.record(
  {
    command: fc.oneof(fc.constantFrom('node', 'npx', '', ' '), fc.jsonValue({ maxDepth: 1 })),
    args: fc.oneof(fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
    env: fc.oneof(
      fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 8 }), fc.constant('${HOME}'), fc.constant('${NOPE}'))),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    url: fc.oneof(
      fc.constantFrom('http://127.0.0.1:9/mcp', 'https://127.0.0.1/x?api_key=s3cr3t', 'http://127.0.0.1:99999/mcp', 'ftp://x', 'not a url'),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    headers: fc.oneof(fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 8 })), fc.jsonValue({ maxDepth: 1 })),
    type: fc.constantFrom('stdio', 'http', 'sse', 'streamable-http', 'bogus'),
    protocol: fc.constantFrom('auto', 'legacy', 'modern', 'prefer-discover', '2025-11-25', 'nonsense'),
    disabled: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 0 })),
    mcpx: fc.oneof(
      fc.record(
        {
          max: fc.oneof(fc.integer({ min: -2, max: 20 }), fc.string({ maxLength: 4 })),
          scope: fc.constantFrom('global', 'session', 'tool', 'x'),
          idleTimeout: fc.constantFrom('5m', '0', 'soon', 10),
          startTimeout: fc.constantFrom('20s', '-1s', 'x'),
          maxx: fc.constant(1),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 1 }),
    ),
  },
  { requiredKeys: [] },
);
const configDoc = fc.record(
  {
    mcpServers: fc.oneof(
      {
        weight: 4,
        arbitrary: fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'a b', 'ok')), entry, { maxKeys: 4 }),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    ),
    servers: fc.jsonValue({ maxDepth: 2 }),
    upstream: fc.oneof(
      fc.record({ protocol: fc.constantFrom('auto', 'legacy', 'x'), probeTimeout: fc.constantFrom('5s', 'x', 3) }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    pool: fc.oneof(
      fc.record({ max: fc.oneof(fc.integer({ min: -1, max: 9 }), fc.string({ maxLength: 3 })) }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    log: fc.oneof(fc.record({ level: fc.constantFrom('info', 'debug', 'loud') }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
  },
  { requiredKeys: [] },
);

/** Writes the document with keys literally (a `__proto__` key stays a key), sometimes as JSONC. */
function docText(doc: unknown, jsonc: boolean): string {
  const text = JSON.stringify(doc, null, jsonc ? 2 : undefined) ?? 'null';
  return jsonc ? `// a comment\n${text.replace(/\n}$/, ',\n}')}\n` : text;
}

function checkParsed(text: string): void {
  generated.config += 1;
  const env = { HOME: join(tmpdir(), 'someone'), PATH: '/usr/bin' };
  let loaded!: ReturnType<typeof parseConfigText>;
  expect(() => (loaded = parseConfigText(text, CONFIG, { env }))).not.toThrow();
  for (const p of [...loaded.errors, ...loaded.warnings]) {
    expect(p.message, JSON.stringify(p)).toContain(CONFIG);
    if (p.server !== undefined) expect(p.key, JSON.stringify(p)).toEqual(expect.any(String));
    if (p.key !== undefined) expect(p.message, JSON.stringify(p)).toContain(p.key);
  }
  if (loaded.errors.length === 0) {
    let doc: Record<string, unknown> = {};
    try {
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // JSONC: the names are checked against the parsed servers below
    }
    const block = (doc['mcpServers'] ?? doc['servers']) as Record<string, unknown> | undefined;
    for (const s of loaded.servers) {
      if (block) expect(Object.hasOwn(block, s.name), s.name).toBe(true);
      expect(s.transport === 'stdio' ? typeof (s.definition as { command?: unknown }).command : typeof (s.definition as { url?: unknown }).url).toBe('string');
    }
    expect(() => new Settings({ env: {}, cwd: '/', file: loaded.settingsFile, filePath: CONFIG })).not.toThrow();
  }
}

describe('the config file with arbitrary contents', () => {
  it('arbitrary text and bytes: never throws; every problem names the file', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('utf8')),
          fc.constantFrom('', '\ufeff', '{', '{"mcpServers":', '{"mcpServers":{"a":{"command":"x",}}}', '[]', 'null'),
        ),
        (text) => {
          checkParsed(text);
        },
      ),
      runs,
    );
  });

  it('arbitrary JSON and JSONC documents of the config shape: never throws; problems name the file and the key; a clean file loads', () => {
    fc.assert(
      fc.property(configDoc, fc.boolean(), (doc, jsonc) => {
        checkParsed(docText(doc, jsonc));
      }),
      runs,
    );
  });
});

// ---- the state files' records: plain checks against the zod schemas ----

/** What zod answers for `v`: the record kept, or undefined. */
function zodOf(schema: z.ZodType, v: unknown): unknown {
  const r = schema.safeParse(v);
  return r.success ? r.data : undefined;
}

/** Both accept or both refuse; accepted, the same record with the same keys in the same order. */
function expectSame(plain: unknown, zod: unknown): void {
  expect(plain === undefined).toBe(zod === undefined);
  if (zod === undefined) return;
  expect(plain).toStrictEqual(zod);
  expect(Object.keys(plain as object)).toEqual(Object.keys(zod as object));
}

/** Date-time strings near the edges of what `z.iso.datetime({ offset: true })` accepts. */
const dateTimeText = fc.oneof(
  fc.date({ min: new Date('0001-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 61 }),
      fc.constantFrom('', '.5', '.123', '.', '.123456789'),
      fc.constantFrom('Z', 'z', '+01:00', '-23:59', '+24:00', '+0100', '', '+01:60'),
      fc.constantFrom('T', ' ', 't'),
      fc.boolean(),
    )
    .map(([y, mo, d, h, mi, s, frac, zone, sep, seconds]) => {
      const p = (n: number, w = 2) => String(n).padStart(w, '0');
      return `${p(y, 4)}-${p(mo)}-${p(d)}${sep}${p(h)}:${p(mi)}${seconds ? `:${p(s)}${frac}` : ''}${zone}`;
    }),
  fc.constantFrom(
    '2024-02-29T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2000-02-29T12:00:00Z',
    '1900-02-29T12:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-01T00:00:00.Z',
  ),
  fc.string({ maxLength: 30 }),
);

/** A field's value: a fitting one, a near miss, or anything JSON (undefined too: zod keeps it for an optional key). */
const fieldValue = (fitting: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 4, arbitrary: fitting }, { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: fc.constant(undefined) });
const item = (field: string) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .dictionary(fc.constantFrom('name', 'uri', 'uriTemplate', 'description', 'x'), fc.oneof(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 })))
        .map((d) => ({ [field]: 'n', ...d })),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
const items = (field: string) =>
  fc.oneof({ weight: 4, arbitrary: fc.array(item(field), { maxLength: 4 }) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });

const eraCandidate = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        era: fieldValue(fc.constantFrom('legacy', 'modern', 'Legacy', '')),
        version: fieldValue(fc.constantFrom('2025-11-25', '', 'x')),
        at: fieldValue(dateTimeText),
        source: fieldValue(fc.constantFrom('probe', 'cache', '', 'x')),
        transport: fieldValue(fc.constantFrom('streamable-http', 'sse', 'stdio')),
        initialize: fieldValue(fc.constantFrom('refused', 'accepted')),
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

const catalogCandidate = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        at: fieldValue(dateTimeText),
        era: fieldValue(fc.constantFrom('legacy', 'modern', 'x')),
        tools: items('name'),
        prompts: fieldValue(items('name')),
        resources: fieldValue(items('uri')),
        resourceTemplates: fieldValue(items('uriTemplate')),
        capabilities: fieldValue(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }))),
        serverInfo: fieldValue(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }))),
        instructions: fieldValue(fc.string({ maxLength: 8 })),
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

describe("the state files' plain record checks agree with the zod schemas they replaced", () => {
  it('era records: the same accepted, the same kept', () => {
    fc.assert(
      fc.property(eraCandidate, (v) => {
        expectSame(eraRecordOf(v), zodOf(eraRecordSchema, v));
      }),
      { numRuns: RUNS * 10 },
    );
  });

  it('catalogue records: the same accepted, the same kept (items passed untouched)', () => {
    fc.assert(
      fc.property(catalogCandidate, (v) => {
        const plain = catalogRecordOf(v);
        expectSame(plain, zodOf(catalogRecordSchema, v));
        if (plain)
          for (const k of ['tools', 'prompts', 'resources', 'resourceTemplates'] as const)
            plain[k]?.forEach((it, i) => expect(it).toBe((v as Record<string, unknown[]>)[k]![i]));
      }),
      { numRuns: RUNS * 10 },
    );
  });

  it('date-times: exactly those z.iso.datetime({ offset: true }) accepts', () => {
    const schema = z.iso.datetime({ offset: true });
    fc.assert(
      fc.property(dateTimeText, (t) => {
        expect(eraRecordOf({ era: 'modern', version: 'v', at: t, source: 's' }) !== undefined, t).toBe(schema.safeParse(t).success);
      }),
      { numRuns: RUNS * 10 },
    );
  });
});
