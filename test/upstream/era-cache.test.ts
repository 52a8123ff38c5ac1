import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CacheIoError, McpxError } from '../../src/errors.js';
import { ERA_CACHE_FILE, EraCache, type EraRecord } from '../../src/upstream/era-cache.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await fs.mkdtemp(join(os.tmpdir(), 'mcpx-era-cache-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => fs.rm(d, { recursive: true, force: true })));
});

const key = (s: string): string => createHash('sha256').update(s).digest('hex');
const legacy: EraRecord = { era: 'legacy', version: '2025-11-25', at: '2026-11-29T21:00:00Z', source: 'probe' };
const modern: EraRecord = { era: 'modern', version: '2026-07-28', at: '2026-11-29T21:00:01.123Z', source: 'probe', transport: 'streamable-http' };

function recordingLogger() {
  const warnings: Array<{ obj: Record<string, unknown>; msg: string | undefined }> = [];
  return { warnings, logger: { warn: (obj: object, msg?: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg }) } };
}

async function readJson(file: string): Promise<{ version: number; servers: Record<string, EraRecord> }> {
  return JSON.parse(await fs.readFile(file, 'utf8')) as { version: number; servers: Record<string, EraRecord> };
}

const mode = async (p: string): Promise<number> => (await fs.stat(p)).mode & 0o777;

describe('EraCache', () => {
  it('round trip: set, reopen, get, delete', async () => {
    const dir = await tempDir();
    const cache = await EraCache.open(dir);
    expect(cache.file).toBe(join(dir, ERA_CACHE_FILE));
    expect(cache.get(key('a'))).toBeUndefined();
    await cache.set(key('a'), legacy);
    await cache.set(key('b'), modern);
    expect(cache.get(key('a'))).toEqual(legacy);

    expect(await readJson(cache.file)).toEqual({ version: 1, servers: { [key('a')]: legacy, [key('b')]: modern } });

    const again = await EraCache.open(dir);
    expect(again.get(key('a'))).toEqual(legacy);
    expect(again.get(key('b'))).toEqual(modern);
    expect(
      again
        .entries()
        .map(([k]) => k)
        .sort(),
    ).toEqual([key('a'), key('b')].sort());

    await again.delete(key('a'));
    expect(again.get(key('a'))).toBeUndefined();
    expect(Object.keys((await readJson(cache.file)).servers)).toEqual([key('b')]);
    expect((await EraCache.open(dir)).get(key('a'))).toBeUndefined();
    // no temp or lock files left behind
    expect(await fs.readdir(dir)).toEqual([ERA_CACHE_FILE]);
  });

  it('creates the state folder 0700 and the file 0600', async () => {
    const dir = join(await tempDir(), 'state', 'nested');
    const cache = await EraCache.open(dir);
    expect(existsSync(dir)).toBe(false); // opening never creates anything
    await cache.set(key('a'), legacy);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(cache.file)).toBe(0o600);
    await cache.set(key('b'), modern);
    expect(await mode(cache.file)).toBe(0o600);
  });

  it('records are copied and frozen; junk fields are not stored', async () => {
    const dir = await tempDir();
    const cache = await EraCache.open(dir);
    const rec = { ...legacy, extra: 'x' } as EraRecord;
    await cache.set(key('a'), rec);
    rec.era = 'modern';
    expect(cache.get(key('a'))).toEqual(legacy);
    expect(Object.isFrozen(cache.get(key('a')))).toBe(true);
    await expect(cache.set(key('b'), { ...legacy, era: 'future' as 'legacy' })).rejects.toThrow(TypeError);
    await expect(cache.set(key('b'), { ...legacy, at: 'yesterday' })).rejects.toThrow(TypeError);
  });

  it('concurrent sets in one process are batched and all land', async () => {
    const dir = await tempDir();
    const cache = await EraCache.open(dir);
    await Promise.all(Array.from({ length: 50 }, (_, i) => cache.set(key(`k${i}`), { ...legacy, source: `s${i}` })));
    const onDisk = await readJson(cache.file);
    expect(Object.keys(onDisk.servers)).toHaveLength(50);
    expect(onDisk.servers[key('k7')]?.source).toBe('s7');
  });

  it('two instances on one folder merge instead of overwriting', async () => {
    const dir = await tempDir();
    const a = await EraCache.open(dir);
    const b = await EraCache.open(dir);
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => a.set(key(`a${i}`), legacy)),
      ...Array.from({ length: 20 }, (_, i) => b.set(key(`b${i}`), modern)),
    ]);
    await a.set(key('a0'), modern); // a's later write must keep b's records
    expect(Object.keys((await readJson(a.file)).servers)).toHaveLength(40);
    // a saw b's records when it wrote
    expect(a.get(key('b3'))).toEqual(modern);
    // a delete in one instance is not undone by the other's next write
    await a.delete(key('b1'));
    await b.set(key('b2'), legacy);
    const final = (await readJson(a.file)).servers;
    expect(final[key('b1')]).toBeUndefined();
    expect(final[key('b2')]).toEqual(legacy);
    expect(Object.keys(final)).toHaveLength(39);
  });

  describe('damaged files never throw and are replaced by the next write', () => {
    const damaged: Array<[string, string]> = [
      ['empty', ''],
      ['white space only', '  \n'],
      ['truncated JSON', '{"version":1,"servers":{"abc":{"era":"leg'],
      ['not JSON', 'hello'],
      ['null', 'null'],
      ['an array', '[]'],
      ['a number', '42'],
      ['other version', JSON.stringify({ version: 2, servers: { [key('x')]: legacy } })],
      ['no version', JSON.stringify({ servers: { [key('x')]: legacy } })],
      ['servers not an object', JSON.stringify({ version: 1, servers: [] })],
    ];
    for (const [name, text] of damaged) {
      it(name, async () => {
        const dir = await tempDir();
        const file = join(dir, ERA_CACHE_FILE);
        await fs.writeFile(file, text);
        const { warnings, logger } = recordingLogger();
        const cache = await EraCache.open(dir, { logger });
        expect(cache.entries()).toEqual([]);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.obj.file).toBe(file);
        expect(typeof warnings[0]!.obj.problem).toBe('string');

        await cache.set(key('a'), legacy);
        expect(await readJson(file)).toEqual({ version: 1, servers: { [key('a')]: legacy } });
      });
    }

    it('a record with a bad era (or other bad fields) is dropped, the rest kept', async () => {
      const dir = await tempDir();
      const file = join(dir, ERA_CACHE_FILE);
      await fs.writeFile(
        file,
        JSON.stringify({
          version: 1,
          servers: {
            [key('good')]: legacy,
            [key('bad-era')]: { ...legacy, era: 'ancient' },
            [key('no-version')]: { era: 'legacy', at: legacy.at, source: 'probe' },
            [key('bad-at')]: { ...legacy, at: 'soon' },
            [key('bad-transport')]: { ...modern, transport: 'ws' },
            [key('not-object')]: 'legacy',
          },
        }),
      );
      const { warnings, logger } = recordingLogger();
      const cache = await EraCache.open(dir, { logger });
      expect(cache.entries()).toEqual([[key('good'), legacy]]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.obj.dropped).toHaveLength(5);
      await cache.set(key('new'), modern);
      expect(await readJson(file)).toEqual({ version: 1, servers: { [key('good')]: legacy, [key('new')]: modern } });
    });

    it('a file that is a directory: open warns, set fails with MCPX_CACHE_IO', async () => {
      const dir = await tempDir();
      await fs.mkdir(join(dir, ERA_CACHE_FILE));
      const { warnings, logger } = recordingLogger();
      const cache = await EraCache.open(dir, { logger });
      expect(cache.entries()).toEqual([]);
      expect(warnings).toHaveLength(1);
      const err = await cache.set(key('a'), legacy).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CacheIoError);
      expect((err as McpxError).code).toBe('MCPX_CACHE_IO');
      // memory still has it, and no temp/lock files are left behind
      expect(cache.get(key('a'))).toEqual(legacy);
      expect(await fs.readdir(dir)).toEqual([ERA_CACHE_FILE]);
    });
  });

  it('a missing file is not a warning', async () => {
    const { warnings, logger } = recordingLogger();
    const cache = await EraCache.open(await tempDir(), { logger });
    expect(cache.entries()).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('disabled: nothing is read or written', async () => {
    const dir = await tempDir();
    await fs.writeFile(join(dir, ERA_CACHE_FILE), JSON.stringify({ version: 1, servers: { [key('a')]: legacy } }));
    const cache = await EraCache.open(dir, { enabled: false });
    expect(cache.enabled).toBe(false);
    expect(cache.get(key('a'))).toBeUndefined();
    await cache.set(key('b'), modern);
    await cache.delete(key('a'));
    expect(cache.get(key('b'))).toBeUndefined();
    expect(cache.entries()).toEqual([]);
    expect(await readJson(join(dir, ERA_CACHE_FILE))).toEqual({ version: 1, servers: { [key('a')]: legacy } });
    const fresh = join(dir, 'never');
    await (await EraCache.open(fresh, { enabled: false })).set(key('c'), legacy);
    expect(existsSync(fresh)).toBe(false);
  });

  describe('lock file', () => {
    it('a held lock makes a write wait, then fail with MCPX_CACHE_IO after lockTimeoutMs', async () => {
      const dir = await tempDir();
      const cache = await EraCache.open(dir, { lockTimeoutMs: 200 });
      await fs.writeFile(join(dir, `${ERA_CACHE_FILE}.lock`), 'someone else\n');
      const t0 = Date.now();
      const err = await cache.set(key('a'), legacy).catch((e: unknown) => e);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
      expect(err).toBeInstanceOf(CacheIoError);
      expect((err as Error).message).toMatch(/lock/);
      expect(existsSync(cache.file)).toBe(false);
      // the change is still pending and lands once the lock is gone
      await fs.rm(join(dir, `${ERA_CACHE_FILE}.lock`));
      await cache.set(key('b'), modern);
      expect(Object.keys((await readJson(cache.file)).servers).sort()).toEqual([key('a'), key('b')].sort());
    });

    it('a lock released while waiting is taken', async () => {
      const dir = await tempDir();
      const lock = join(dir, `${ERA_CACHE_FILE}.lock`);
      await fs.writeFile(lock, 'someone else\n');
      const cache = await EraCache.open(dir);
      setTimeout(() => void fs.rm(lock), 100);
      await cache.set(key('a'), legacy);
      expect((await readJson(cache.file)).servers[key('a')]).toEqual(legacy);
    });

    it('a stale lock (older than staleLockMs) is removed with a warning', async () => {
      const dir = await tempDir();
      const lock = join(dir, `${ERA_CACHE_FILE}.lock`);
      await fs.writeFile(lock, '99999 crashed\n');
      const old = new Date(Date.now() - 11_000);
      await fs.utimes(lock, old, old);
      const { warnings, logger } = recordingLogger();
      const cache = await EraCache.open(dir, { logger, lockTimeoutMs: 500 });
      await cache.set(key('a'), legacy);
      expect((await readJson(cache.file)).servers[key('a')]).toEqual(legacy);
      expect(warnings.map((w) => w.msg)).toEqual(['removed a stale era cache lock']);
      expect(warnings[0]!.obj.holder).toBe('99999 crashed');
      expect(await fs.readdir(dir)).toEqual([ERA_CACHE_FILE]);
    });
  });
});

describe('EraCache across processes', () => {
  const DIST = join(ROOT, 'dist', 'src', 'upstream', 'era-cache.js');
  const SOURCES = [join(ROOT, 'src', 'upstream', 'era-cache.ts'), join(ROOT, 'src', 'state', 'locked-json-file.ts'), join(ROOT, 'src', 'errors.ts')];
  const HELPER = join(ROOT, 'test', 'upstream', 'helpers', 'era-writer.mjs');
  const WRITERS = 6;
  const PER_WRITER = 20;

  beforeAll(() => {
    const fresh = (): boolean => existsSync(DIST) && SOURCES.every((s) => statSync(s).mtimeMs <= statSync(DIST).mtimeMs);
    if (fresh()) return;
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
        cwd: ROOT,
        stdio: 'pipe',
        timeout: 60_000,
      });
    } catch (err) {
      // tsc still emits when some other file has a type error; only a missing or stale output matters here.
      if (!fresh()) throw err;
    }
  }, 60_000);

  it(`${WRITERS} processes × ${PER_WRITER} keys: every record lands and the file stays valid`, async () => {
    const dir = await tempDir();
    const startAt = Date.now() + 400; // every child loads first, then all start together
    const results = await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        run(process.execPath, [HELPER, dir, String(w), String(PER_WRITER), String(startAt)], { cwd: ROOT, timeout: 20_000 }),
      ),
    );
    for (const r of results) expect(r.stderr).toBe('');
    const summaries = results.map((r) => JSON.parse(r.stdout) as { writerId: string; ms: number; seen: number });
    console.log(`[era-cache] ${WRITERS} writers × ${PER_WRITER} sets: ${summaries.map((s) => `${s.ms} ms`).join(', ')}`);

    const onDisk = await readJson(join(dir, ERA_CACHE_FILE));
    expect(onDisk.version).toBe(1);
    expect(Object.keys(onDisk.servers)).toHaveLength(WRITERS * PER_WRITER);
    for (let w = 0; w < WRITERS; w++) {
      for (let i = 0; i < PER_WRITER; i++) {
        const rec = onDisk.servers[createHash('sha256').update(`${w}:${i}`).digest('hex')];
        expect(rec).toMatchObject({ era: i % 2 === 0 ? 'legacy' : 'modern', source: `writer-${w}` });
      }
    }
    // the last writer to finish saw everything
    expect(Math.max(...summaries.map((s) => s.seen))).toBe(WRITERS * PER_WRITER);
    const reopened = await EraCache.open(dir);
    expect(reopened.entries()).toHaveLength(WRITERS * PER_WRITER);
    expect(await fs.readdir(dir)).toEqual([ERA_CACHE_FILE]);
    expect(await mode(join(dir, ERA_CACHE_FILE))).toBe(0o600);
  });
});
