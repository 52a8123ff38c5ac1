/**
 * A keyed JSON state file shared by every mcpx process using one state folder (the era cache, the
 * tool catalog):
 *
 *   {"version":<n>,"servers":{"<key>":{...record}}}
 *
 * Reading never fails: a missing, empty, truncated, non-JSON, other-version or wrong-shape file
 * reads as empty (with a warning), and records the schema refuses are dropped. The next write
 * replaces the file.
 *
 * Writing is safe against other processes (a second daemon, `mcpx` CLI runs): each write takes an
 * exclusive lock file (`<file>.lock`, created with 'wx'), re-reads the file, applies only this
 * process's changes onto what is there, writes a temp file (mode 0600) in the same folder, renames it
 * over the file (src/state/atomic-write.ts), and releases the lock. Writes within one process are serialized on a promise chain,
 * and changes made while a write waits join it.
 */
import { randomUUID } from 'node:crypto';
import { promises as fs, readlinkSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import stringify from 'safe-stable-stringify';
import { CacheIoError } from '../errors.js';
import { isObject } from '../is-object.js';
import { writeFileAtomic } from './atomic-write.js';
import { FileTooLargeError, fileKind, NotRegularFileError, readRegularFile } from './safe-files.js';

/** The part of a pino logger a state file uses (src/log.ts's Logger fits). */
export interface StateFileLogger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface StateFileOptions {
  logger?: StateFileLogger;
  /** When false nothing is read or written and `get` always answers undefined. Default true. */
  enabled?: boolean;
  /** How long a write waits for the lock before failing with MCPX_CACHE_IO. Default 3000 ms. */
  lockTimeoutMs?: number;
  /** A lock file older than this is left over from a crashed writer and is removed. Default 10000 ms. */
  staleLockMs?: number;
}

/** What one kind of state file is: where it lives, its version, and what a valid record is. */
export interface StateFileFormat<R> {
  /** The file's name inside the state folder. */
  fileName: string;
  /** Written as `version`; a file with any other version reads as empty. */
  version: number;
  /**
   * Checks one record, on reading and on `set`: the record as it is to be kept (unknown keys left out),
   * or undefined for one to refuse. Plain code (src/state/record-checks.ts), not zod: these files are read
   * before the daemon listens.
   */
  check: (value: unknown) => R | undefined;
  /** Names the file in log messages: `era cache` gives "removed a stale era cache lock". */
  label: string;
  /** Names a record in the TypeError `set` throws. Default `<label> record`. */
  recordLabel?: string;
}

interface FileState<R> {
  servers: Map<string, R>;
  /** Set when the file exists but could not be used as a whole. */
  problem?: string;
  missing?: boolean;
  /** Keys of records that failed validation and were dropped. */
  dropped: string[];
}

const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;
const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/** Records handed out by `get` are shared with every caller, so nothing in them may change. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export class LockedJsonFile<R> {
  readonly enabled: boolean;
  private readonly path: string;
  private readonly lockPath: string;
  private readonly format: StateFileFormat<R>;
  private readonly logger: StateFileLogger | undefined;
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private records = new Map<string, R>();
  /** Changes not yet on disk: a record to write, or null for a delete. */
  private readonly pending = new Map<string, R | null>();
  private chain: Promise<void> = Promise.resolve();
  /** A write queued on the chain that has not started yet; later changes join it. */
  private queued: Promise<void> | undefined;

  /** Reads nothing: subclasses offer a static `open` that constructs and then `load`s. */
  protected constructor(stateDir: string, format: StateFileFormat<R>, opts: StateFileOptions = {}) {
    this.enabled = opts.enabled ?? true;
    this.format = format;
    this.path = join(stateDir, format.fileName);
    this.lockPath = `${this.path}.lock`;
    this.logger = opts.logger;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 3_000;
    this.staleLockMs = opts.staleLockMs ?? 10_000;
  }

  /** Reads the file into memory (keeping changes not yet written). Never throws for what the file contains or for failing to read it. */
  protected async load(): Promise<void> {
    if (!this.enabled) return;
    const { label } = this.format;
    const state = await this.readFileState();
    if (state.missing) this.logger?.debug?.({ file: this.path }, `no ${label} yet`);
    if (state.problem) this.logger?.warn({ file: this.path, problem: state.problem }, `${label} unusable; starting empty, the next write replaces it`);
    if (state.dropped.length > 0) this.logger?.warn({ file: this.path, dropped: state.dropped }, `${label}: dropped ${state.dropped.length} invalid record(s)`);
    this.records = this.withPending(state.servers);
  }

  get file(): string {
    return this.path;
  }

  get(key: string): R | undefined {
    return this.enabled ? this.records.get(key) : undefined;
  }

  /** A snapshot of every record held (this process's and, as of the last read or write, other processes'). */
  entries(): Array<[string, R]> {
    return [...this.records.entries()];
  }

  /**
   * Records `record` under `key`. Memory changes at once; the promise settles when the change is on disk.
   * The record is copied (as JSON) and frozen, so later changes to the caller's object do not leak in.
   * @throws TypeError when the schema refuses the record (nothing changes).
   * @throws CacheIoError (MCPX_CACHE_IO) when the file cannot be written; the record stays in memory and
   *   the next write retries it.
   */
  async set(key: string, record: R): Promise<void> {
    if (!this.enabled) return;
    const frozen = this.toRecord(record, true);
    if (frozen === undefined) throw new TypeError(`not a valid ${this.format.recordLabel ?? `${this.format.label} record`}: ${stringify(record)}`);
    this.records.set(key, frozen);
    this.pending.set(key, frozen);
    return this.schedule();
  }

  /** Removes `key`; the promise settles when the removal is on disk (see `set` for failures). */
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

  private toRecord(value: unknown, copy: boolean): R | undefined {
    let input = value;
    if (copy) {
      // A JSON copy: what memory holds is exactly what the file will hold, and shares nothing with the caller.
      try {
        const text = JSON.stringify(value);
        if (text === undefined) return undefined;
        input = JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    }
    const r = this.format.check(input);
    return r === undefined ? undefined : deepFreeze(r);
  }

  private withPending(servers: Map<string, R>): Map<string, R> {
    const next = new Map(servers);
    for (const [key, value] of this.pending) {
      if (value === null) next.delete(key);
      else next.set(key, value);
    }
    return next;
  }

  private async readFileState(): Promise<FileState<R>> {
    const servers = new Map<string, R>();
    const dropped: string[] = [];
    let text: string;
    try {
      // Never blocks (a FIFO in its place would hang the daemon's start) and never follows a link.
      text = await readRegularFile(this.path);
    } catch (err) {
      if (errCode(err) === 'ENOENT') return { servers, missing: true, dropped };
      if (err instanceof NotRegularFileError) return { servers, problem: `it is ${err.kind}, not a regular file`, dropped };
      if (err instanceof FileTooLargeError) return { servers, problem: `it is too large (${err.size} bytes; at most ${err.maxBytes} are read)`, dropped };
      return { servers, problem: `cannot read it (${errCode(err) ?? String(err)})`, dropped };
    }
    if (text.trim() === '') return { servers, problem: 'the file is empty', dropped };
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      return { servers, problem: `truncated or not JSON (${(err as Error).message})`, dropped };
    }
    const { version } = this.format;
    if (!isObject(data)) return { servers, problem: `expected an object, found ${kindOf(data)}`, dropped };
    if (data.version !== version) {
      return { servers, problem: `unsupported version ${JSON.stringify(data.version) ?? 'undefined'} (expected ${version})`, dropped };
    }
    if (!isObject(data.servers)) return { servers, problem: `"servers" is ${kindOf(data.servers)}, not an object`, dropped };
    for (const [key, value] of Object.entries(data.servers)) {
      const record = this.toRecord(value, false);
      if (record !== undefined) servers.set(key, record);
      else dropped.push(key);
    }
    return { servers, dropped };
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
      const disk = await this.readFileState();
      if (disk.problem) this.logger?.warn({ file: this.path, problem: disk.problem }, `replacing the damaged ${this.format.label}`);
      const servers = disk.servers;
      for (const [key, value] of batch) {
        if (value === null) servers.delete(key);
        else servers.set(key, value);
      }
      await this.writeAtomically(servers);
      for (const [key, value] of batch) if (this.pending.get(key) === value) this.pending.delete(key);
      // Memory now mirrors the file (other processes' records included) plus what is still pending.
      this.records = this.withPending(servers);
    } finally {
      await release();
    }
  }

  private async writeAtomically(servers: Map<string, R>): Promise<void> {
    // `version` first and servers sorted by key, so the file reads (and diffs) the same way every time.
    const sorted = Object.fromEntries([...servers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const body = `${JSON.stringify({ version: this.format.version, servers: sorted }, null, 2)}\n`;
    try {
      await writeFileAtomic(this.path, body, { mode: 0o600 });
    } catch (err) {
      throw new CacheIoError(this.path, `cannot write (${errCode(err) ?? String(err)})`, err);
    }
  }

  /** Takes the lock file; resolves to its release function. */
  private async lock(): Promise<() => Promise<void>> {
    const token = `${process.pid} ${randomUUID()}\n`;
    const deadline = Date.now() + this.lockTimeoutMs;
    let backoff = 2;
    for (;;) {
      let created = false;
      try {
        const handle = await fs.open(this.lockPath, 'wx', 0o600);
        created = true;
        try {
          await handle.writeFile(token, 'utf8');
        } finally {
          await handle.close();
        }
        return () => this.unlock(token);
      } catch (err) {
        // A lock made but not written (ENOSPC): removed, or every later write would wait on it.
        if (created) await fs.rm(this.lockPath, { force: true }).catch(() => undefined);
        if (created || errCode(err) !== 'EEXIST') {
          throw new CacheIoError(this.path, `cannot ${created ? 'write' : 'create'} the lock file ${this.lockPath} (${errCode(err) ?? String(err)})`, err);
        }
      }
      if (await this.removeStaleLock()) continue;
      if (Date.now() >= deadline) {
        const empty = await fs.stat(this.lockPath).then(
          (st) => st.size === 0,
          () => false,
        );
        throw new CacheIoError(
          this.path,
          empty
            ? `${this.lockPath} is an empty lock file that stayed for more than ${this.lockTimeoutMs} ms`
            : `another process held ${this.lockPath} for more than ${this.lockTimeoutMs} ms`,
        );
      }
      await sleep(backoff + Math.random() * backoff);
      backoff = Math.min(backoff * 2, 40);
    }
  }

  private async unlock(token: string): Promise<void> {
    try {
      // Only remove the lock if it is still ours (someone may have judged it stale and taken it).
      if ((await readRegularFile(this.lockPath)) === token) await fs.rm(this.lockPath, { force: true });
      else this.logger?.warn({ file: this.lockPath }, `${this.format.label} lock was taken over while held`);
    } catch (err) {
      if (errCode(err) !== 'ENOENT') this.logger?.warn({ file: this.lockPath, err }, `could not release the ${this.format.label} lock`);
    }
  }

  /**
   * Whether a lock file with this mtime and size is stale: older than staleLockMs, or dated more than
   * staleLockMs in the future (a clock set back, or a forged date: it would otherwise never age), or
   * empty for more than a second (a writer that made it and could not write its token: a full disk).
   */
  private isStale(st: { mtimeMs: number; size: number }): boolean {
    const age = Date.now() - st.mtimeMs;
    if (age > this.staleLockMs || age < -this.staleLockMs) return true;
    return st.size === 0 && Math.abs(age) > Math.min(1_000, this.staleLockMs);
  }

  /** Refuses a lock path that is not a regular file (a symlink, dangling or not; a FIFO): it is no lock of ours. */
  private notALock(st: Stats): never {
    let target = '';
    if (st.isSymbolicLink()) target = ` (to ${JSON.stringify(String(readlinkQuiet(this.lockPath)))})`;
    throw new CacheIoError(this.path, `the lock file ${this.lockPath} is ${fileKind(st)}${target}, not a lock file mcpx made; remove it`);
  }

  /**
   * Removes the lock file if it is older than staleLockMs. The file is first renamed to a private name
   * and judged there, so two processes that both find it stale cannot remove each other's fresh lock:
   * only one rename succeeds, and a renamed file that turns out to be fresh is put back.
   */
  private async removeStaleLock(): Promise<boolean> {
    try {
      const st = await fs.lstat(this.lockPath);
      if (!st.isFile()) this.notALock(st);
      if (!this.isStale(st)) return false;
    } catch (err) {
      if (err instanceof CacheIoError) throw err;
      return errCode(err) === 'ENOENT'; // released meanwhile: try again at once
    }
    const aside = `${this.lockPath}.${process.pid}-${randomUUID().slice(0, 8)}.stale`;
    try {
      await fs.rename(this.lockPath, aside);
    } catch {
      return true; // someone else moved it first; try to take the lock again
    }
    try {
      const st = await fs.lstat(aside);
      if (!st.isFile() || !this.isStale(st)) {
        // A fresh lock replaced the stale one between our look and our rename: give it back.
        await fs.link(aside, this.lockPath).catch(() => undefined);
        return false;
      }
      const holder = (await readRegularFile(aside).catch(() => '')).trim();
      const ageMs = Math.round(Date.now() - st.mtimeMs);
      const why = holder === '' ? 'an empty' : ageMs < 0 ? 'a future-dated' : 'a stale';
      this.logger?.warn({ file: this.lockPath, holder, ageMs }, `removed ${why} ${this.format.label} lock`);
      return true;
    } catch {
      return true;
    } finally {
      await fs.rm(aside, { force: true }).catch(() => undefined);
    }
  }
}

function readlinkQuiet(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '?';
  }
}
