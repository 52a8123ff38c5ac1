/**
 * The era cache (era-probe.md §5): what each upstream process definition turned out to speak,
 * kept in memory and in `<stateDir>/upstream-eras.json`:
 *
 *   {"version":1,"servers":{"<sha256>":{"era":"legacy","version":"2025-11-25","at":"…","source":"probe"}}}
 *
 * Reading never fails: a missing, empty, truncated, non-JSON, other-version or wrong-shape file
 * reads as empty (with a warning), and bad individual records are dropped. The next write replaces
 * the file.
 *
 * Writing is safe against other processes (a second daemon, `mcpx` CLI runs) sharing the state
 * folder: each write takes an exclusive lock file (`upstream-eras.json.lock`, created with 'wx'),
 * re-reads the file, applies only this process's changes onto what is there, writes a temp file
 * (mode 0600) in the same folder, renames it over the file, and releases the lock. Writes within
 * one process are serialized on a promise chain, and changes made while a write waits join it.
 */
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import stringify from 'safe-stable-stringify';
import { z } from 'zod';
import { CacheIoError } from '../errors.js';

export const ERA_CACHE_FILE = 'upstream-eras.json';
export const ERA_CACHE_VERSION = 1;

export interface EraRecord {
  era: 'legacy' | 'modern';
  /** The negotiated protocol revision. */
  version: string;
  /** When it was learned, ISO 8601. */
  at: string;
  /** How it was learned. */
  source: 'probe' | 'cache' | (string & {});
  /** For HTTP servers: which transport answered (room for the HTTP+SSE fallback). */
  transport?: 'streamable-http' | 'sse';
  /**
   * `refused`: a modern server that refused initialize (or died on it). Lets prefer-initialize skip a
   * doomed initialize; without it a cached modern era says nothing about the server's legacy side.
   */
  initialize?: 'refused';
}

export const eraRecordSchema = z.object({
  era: z.enum(['legacy', 'modern']),
  version: z.string().min(1),
  at: z.iso.datetime({ offset: true }),
  source: z.string().min(1),
  transport: z.enum(['streamable-http', 'sse']).optional(),
  initialize: z.literal('refused').optional(),
});

/** The part of a pino logger the cache uses (src/log.ts's Logger fits). */
export interface EraCacheLogger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface EraCacheOptions {
  logger?: EraCacheLogger;
  /** `upstream.eraCache`. When false nothing is read or written and `get` always answers undefined. Default true. */
  enabled?: boolean;
  /** How long a write waits for the lock before failing with MCPX_CACHE_IO. Default 3000 ms. */
  lockTimeoutMs?: number;
  /** A lock file older than this is left over from a crashed writer and is removed. Default 10000 ms. */
  staleLockMs?: number;
}

interface FileState {
  servers: Map<string, EraRecord>;
  /** Set when the file exists but could not be used as a whole. */
  problem?: string;
  missing?: boolean;
  /** Keys of records that failed validation and were dropped. */
  dropped: string[];
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;
const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

function toRecord(value: unknown): EraRecord | undefined {
  const r = eraRecordSchema.safeParse(value);
  if (!r.success) return undefined;
  const { era, version, at, source, transport, initialize } = r.data;
  return Object.freeze({ era, version, at, source, ...(transport === undefined ? {} : { transport }), ...(initialize === undefined ? {} : { initialize }) });
}

async function readFileState(file: string): Promise<FileState> {
  const servers = new Map<string, EraRecord>();
  const dropped: string[] = [];
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return { servers, missing: true, dropped };
    return { servers, problem: `cannot read it (${errCode(err) ?? String(err)})`, dropped };
  }
  if (text.trim() === '') return { servers, problem: 'the file is empty', dropped };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { servers, problem: `truncated or not JSON (${(err as Error).message})`, dropped };
  }
  if (!isPlainObject(data)) return { servers, problem: `expected an object, found ${kindOf(data)}`, dropped };
  if (data.version !== ERA_CACHE_VERSION) {
    return { servers, problem: `unsupported version ${JSON.stringify(data.version) ?? 'undefined'} (expected ${ERA_CACHE_VERSION})`, dropped };
  }
  if (!isPlainObject(data.servers)) return { servers, problem: `"servers" is ${kindOf(data.servers)}, not an object`, dropped };
  for (const [key, value] of Object.entries(data.servers)) {
    const record = toRecord(value);
    if (record) servers.set(key, record);
    else dropped.push(key);
  }
  return { servers, dropped };
}

export class EraCache {
  readonly enabled: boolean;
  private readonly path: string;
  private readonly lockPath: string;
  private readonly logger: EraCacheLogger | undefined;
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private records = new Map<string, EraRecord>();
  /** Changes not yet on disk: a record to write, or null for a delete. */
  private readonly pending = new Map<string, EraRecord | null>();
  private chain: Promise<void> = Promise.resolve();
  /** A write queued on the chain that has not started yet; later changes join it. */
  private queued: Promise<void> | undefined;

  private constructor(stateDir: string, opts: EraCacheOptions) {
    this.enabled = opts.enabled ?? true;
    this.path = join(stateDir, ERA_CACHE_FILE);
    this.lockPath = `${this.path}.lock`;
    this.logger = opts.logger;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 3_000;
    this.staleLockMs = opts.staleLockMs ?? 10_000;
  }

  /** Loads `<stateDir>/upstream-eras.json`. Never throws for what the file contains (or for failing to read it). */
  static async open(stateDir: string, opts: EraCacheOptions = {}): Promise<EraCache> {
    const cache = new EraCache(stateDir, opts);
    if (!cache.enabled) return cache;
    const state = await readFileState(cache.path);
    if (state.missing) cache.logger?.debug?.({ file: cache.path }, 'no era cache yet');
    if (state.problem) cache.logger?.warn({ file: cache.path, problem: state.problem }, 'era cache unusable; starting empty, the next write replaces it');
    if (state.dropped.length > 0) cache.logger?.warn({ file: cache.path, dropped: state.dropped }, `era cache: dropped ${state.dropped.length} invalid record(s)`);
    cache.records = state.servers;
    return cache;
  }

  get file(): string {
    return this.path;
  }

  get(key: string): EraRecord | undefined {
    return this.enabled ? this.records.get(key) : undefined;
  }

  /** A snapshot of every record held (this process's and, as of the last write, other processes'). */
  entries(): Array<[string, EraRecord]> {
    return [...this.records.entries()];
  }

  /**
   * Records `record` under `key`. Memory changes at once; the promise settles when the change is on disk.
   * @throws CacheIoError (MCPX_CACHE_IO) when the file cannot be written; the record stays in memory and
   *   the next write retries it.
   */
  async set(key: string, record: EraRecord): Promise<void> {
    if (!this.enabled) return;
    const frozen = toRecord(record);
    if (!frozen) throw new TypeError(`not a valid era record: ${stringify(record)}`);
    this.records.set(key, frozen);
    this.pending.set(key, frozen);
    return this.schedule();
  }

  async delete(key: string): Promise<void> {
    if (!this.enabled) return;
    this.records.delete(key);
    this.pending.set(key, null);
    return this.schedule();
  }

  /** Resolves once every change made so far has been written (or has failed to be). */
  async whenIdle(): Promise<void> {
    await this.chain;
  }

  private schedule(): Promise<void> {
    if (this.queued) return this.queued;
    const run = this.chain.then(() => {
      this.queued = undefined;
      return this.flush();
    });
    this.queued = run;
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = new Map(this.pending);
    const dir = dirname(this.path);
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new CacheIoError(this.path, `cannot create the state folder (${errCode(err) ?? String(err)})`, err);
    }
    const release = await this.lock();
    try {
      const disk = await readFileState(this.path);
      if (disk.problem) this.logger?.warn({ file: this.path, problem: disk.problem }, 'replacing the damaged era cache');
      const servers = disk.servers;
      for (const [key, value] of batch) {
        if (value === null) servers.delete(key);
        else servers.set(key, value);
      }
      await this.writeAtomically(servers);
      for (const [key, value] of batch) if (this.pending.get(key) === value) this.pending.delete(key);
      // Memory now mirrors the file (other processes' records included) plus what is still pending.
      const next = new Map(servers);
      for (const [key, value] of this.pending) {
        if (value === null) next.delete(key);
        else next.set(key, value);
      }
      this.records = next;
    } finally {
      await release();
    }
  }

  private async writeAtomically(servers: Map<string, EraRecord>): Promise<void> {
    // `version` first and servers sorted by key, so the file reads (and diffs) the same way every time.
    const sorted = Object.fromEntries([...servers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const body = `${JSON.stringify({ version: ERA_CACHE_VERSION, servers: sorted }, null, 2)}\n`;
    const tmp = `${this.path}.${process.pid}-${randomUUID().slice(0, 8)}.tmp`;
    let handle: fs.FileHandle | undefined;
    try {
      handle = await fs.open(tmp, 'wx', 0o600);
      await handle.chmod(0o600); // whatever the umask
      await handle.writeFile(body, 'utf8');
      await handle.sync();
      await handle.close();
      handle = undefined;
      await fs.rename(tmp, this.path);
    } catch (err) {
      await handle?.close().catch(() => undefined);
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw new CacheIoError(this.path, `cannot write (${errCode(err) ?? String(err)})`, err);
    }
  }

  /** Takes the lock file; resolves to its release function. */
  private async lock(): Promise<() => Promise<void>> {
    const token = `${process.pid} ${randomUUID()}\n`;
    const deadline = Date.now() + this.lockTimeoutMs;
    let backoff = 2;
    for (;;) {
      try {
        const handle = await fs.open(this.lockPath, 'wx', 0o600);
        try {
          await handle.writeFile(token, 'utf8');
        } finally {
          await handle.close();
        }
        return () => this.unlock(token);
      } catch (err) {
        if (errCode(err) !== 'EEXIST') {
          throw new CacheIoError(this.path, `cannot create the lock file ${this.lockPath} (${errCode(err) ?? String(err)})`, err);
        }
      }
      if (await this.removeStaleLock()) continue;
      if (Date.now() >= deadline) {
        throw new CacheIoError(this.path, `another process held ${this.lockPath} for more than ${this.lockTimeoutMs} ms`);
      }
      await sleep(backoff + Math.random() * backoff);
      backoff = Math.min(backoff * 2, 40);
    }
  }

  private async unlock(token: string): Promise<void> {
    try {
      // Only remove the lock if it is still ours (someone may have judged it stale and taken it).
      if ((await fs.readFile(this.lockPath, 'utf8')) === token) await fs.rm(this.lockPath, { force: true });
      else this.logger?.warn({ file: this.lockPath }, 'era cache lock was taken over while held');
    } catch (err) {
      if (errCode(err) !== 'ENOENT') this.logger?.warn({ file: this.lockPath, err }, 'could not release the era cache lock');
    }
  }

  /**
   * Removes the lock file if it is older than staleLockMs. The file is first renamed to a private name
   * and judged there, so two processes that both find it stale cannot remove each other's fresh lock:
   * only one rename succeeds, and a renamed file that turns out to be fresh is put back.
   */
  private async removeStaleLock(): Promise<boolean> {
    try {
      const stat = await fs.stat(this.lockPath);
      if (Date.now() - stat.mtimeMs <= this.staleLockMs) return false;
    } catch (err) {
      return errCode(err) === 'ENOENT'; // released meanwhile: try again at once
    }
    const aside = `${this.lockPath}.${process.pid}-${randomUUID().slice(0, 8)}.stale`;
    try {
      await fs.rename(this.lockPath, aside);
    } catch {
      return true; // someone else moved it first; try to take the lock again
    }
    try {
      const stat = await fs.stat(aside);
      if (Date.now() - stat.mtimeMs <= this.staleLockMs) {
        // A fresh lock replaced the stale one between our look and our rename: give it back.
        await fs.link(aside, this.lockPath).catch(() => undefined);
        return false;
      }
      const holder = (await fs.readFile(aside, 'utf8').catch(() => '')).trim();
      this.logger?.warn({ file: this.lockPath, holder, ageMs: Math.round(Date.now() - stat.mtimeMs) }, 'removed a stale era cache lock');
      return true;
    } catch {
      return true;
    } finally {
      await fs.rm(aside, { force: true }).catch(() => undefined);
    }
  }
}
