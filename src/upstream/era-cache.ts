/**
 * The era cache (docs/behaviour.md §5): what each upstream process definition turned out to speak,
 * kept in memory and in `<stateDir>/upstream-eras.json`:
 *
 *   {"version":1,"servers":{"<sha256>":{"era":"legacy","version":"2025-11-25","at":"…","source":"probe"}}}
 *
 * Reading never fails and writing is safe against other processes sharing the state folder: a
 * damaged file reads as empty, bad records are dropped, and each write is a locked re-read, merge
 * and atomic 0600 rename (src/state/locked-json-file.ts has the rules).
 */
import { eraRecordOf } from '../state/record-checks.js';
import type { EraRecord } from '../state/records.js';
import { LockedJsonFile, type StateFileFormat, type StateFileLogger, type StateFileOptions } from '../state/locked-json-file.js';

export const ERA_CACHE_FILE = 'upstream-eras.json';
export const ERA_CACHE_VERSION = 1;

export type { EraRecord };

/** The part of a pino logger the cache uses (src/log.ts's Logger fits). */
export type EraCacheLogger = StateFileLogger;

/**
 * `enabled` is `upstream.eraCache`: when false nothing is read or written and `get` always answers
 * undefined. A write waits up to `lockTimeoutMs` (3000) for the lock before failing with
 * MCPX_CACHE_IO; a lock older than `staleLockMs` (10000) is left over from a crashed writer and removed.
 */
export type EraCacheOptions = StateFileOptions;

const FORMAT: StateFileFormat<EraRecord> = {
  fileName: ERA_CACHE_FILE,
  version: ERA_CACHE_VERSION,
  check: eraRecordOf,
  label: 'era cache',
  recordLabel: 'era record',
};

/**
 * `get`, `entries`, `set` (settles once on disk; TypeError for an invalid record, CacheIoError
 * MCPX_CACHE_IO when the file cannot be written, the record staying in memory for the next write),
 * `delete`, `whenIdle`, `file`, `enabled`: all from LockedJsonFile.
 */
/** `upstream.eraCacheMaxAge`'s default: a week. */
export const ERA_CACHE_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** How far ahead of this clock an era record may be dated and still be used (clocks of one machine agree; this is rounding). */
export const FUTURE_SLACK_MS = 60_000;

export class EraCache extends LockedJsonFile<EraRecord> {
  /**
   * `upstream.eraCacheMaxAge`: a record older than this is treated as absent when deciding a probe, so
   * a server upgraded under the same command (an unversioned `npx -y pkg`) is noticed; the probe then
   * rewrites it.
   */
  maxAgeMs = ERA_CACHE_MAX_AGE_MS;

  private constructor(stateDir: string, opts: EraCacheOptions) {
    super(stateDir, FORMAT, opts);
  }

  /**
   * The record to decide a probe by: none when it is older than `maxAgeMs`, has no readable date, or is
   * dated more than FUTURE_SLACK_MS ahead (a clock set back, or a forged file: it would never age).
   */
  usable(key: string, now = Date.now()): EraRecord | undefined {
    const r = this.get(key);
    if (!r) return undefined;
    const at = Date.parse(r.at);
    return Number.isFinite(at) && now - at <= this.maxAgeMs && at - now <= FUTURE_SLACK_MS ? r : undefined;
  }

  /** Loads `<stateDir>/upstream-eras.json`. Never throws for what the file contains (or for failing to read it). */
  static async open(stateDir: string, opts: EraCacheOptions = {}): Promise<EraCache> {
    const cache = new EraCache(stateDir, opts);
    await cache.load();
    return cache;
  }
}
