/**
 * The configs one daemon holds: its own (the one it started with, "home") and every other config file a
 * caller names (`mcpx serve --config`, a CLI command's resolved config, `/mcp?config=`).
 *
 * - A config is identified by its file's real path; it is loaded on first use and unloaded after
 *   `daemon.configIdleTimeout` with no caller attached and no request (the home config never is).
 * - A server is `(config, name)`. The pools run on **instances**: servers of two configs with the same pool
 *   fingerprint (the process key the era cache uses, plus what a running pool has baked in) share one
 *   instance — one process, one era record, one catalogue entry, one OAuth credential. Within one config
 *   each server is its own instance, as it always was. Each instance has a name of its own (the daemon-wide namespace the pools, the
 *   catalogue, OAuth and the events use): the server's name when it is free, else `name#2`, `name#3`….
 *   A single-config daemon's instances are named exactly as its servers.
 * - Names are kept stable: an instance keeps its name while its definition lives in any config, so one
 *   config's edit never restarts the instance another config shares.
 */
import { realpathSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { resolvePoolConfigs, type ResolvedServer } from '../config/config-file.js';
import { Settings, type SettingsSources } from '../config/settings.js';
import { ConfigError, McpxError } from '../errors.js';
import { poolFingerprint } from '../pool/pool-registry.js';
import type { PoolServerConfig } from '../pool/types.js';
import type { DaemonConfig, RejectedEdit } from './views.js';

/** Setting blocks a config other than the daemon's own may set for its servers; the rest are daemon-wide. */
export const PER_CONFIG_BLOCKS = ['upstream', 'pool'] as const;

export type CallerKind = 'serve' | 'mcp' | 'cli';

export interface ConfigCaller {
  id: string;
  kind: CallerKind;
  /** When it attached (ISO 8601). */
  since: string;
}

/** A loaded config: its file, what it says, and who uses it. */
export interface LoadedConfig {
  /** The real path of its file (the demo's path for the demo). */
  readonly id: string;
  /** The daemon's own config: what callers that name none get; never unloaded. */
  readonly home: boolean;
  cfg: DaemonConfig;
  /** The settings its servers resolve against: daemon-wide flags, env and runtime values over its own `upstream`/`pool` blocks. */
  settings: Pick<Settings, 'get'>;
  /** Its own blocks (not for the home config, whose blocks are the daemon's Settings). */
  own: Settings | undefined;
  /** Enabled servers: name → instance. */
  instances: Map<string, string>;
  rejected: RejectedEdit | undefined;
  lastUsed: number;
  readonly callers: Map<string, ConfigCaller>;
  readonly loadedAt: number;
}

export interface ConfigSetDeps {
  /** The daemon's settings (the home config's file blocks, env, flags, runtime values). */
  settings: Settings;
  home: DaemonConfig;
  /** Reads a named config file (the daemon's loadConfig). */
  load(file: string): Promise<DaemonConfig>;
  /** Real paths taken without the owner check (the bundled demo, which belongs to whoever installed mcpx). */
  trusted?: readonly string[];
  now?: () => number;
}

/** The layered reader of a config other than the daemon's own. */
function layered(daemon: Settings, own: Settings): Pick<Settings, 'get'> {
  return {
    get(path: string): unknown {
      const source = daemon.entry(path).source;
      if (source === 'runtime' || source === 'flag' || source === 'env') return daemon.get(path);
      const block = path.slice(0, path.indexOf('.'));
      return (PER_CONFIG_BLOCKS as readonly string[]).includes(block) ? own.get(path) : daemon.get(path);
    },
  };
}

/** A config's own settings: its `upstream` and `pool` blocks only. @throws SettingValueError */
export function ownSettings(cfg: DaemonConfig): Settings {
  const file = Object.fromEntries(Object.entries(cfg.settingsFile).filter(([k]) => (PER_CONFIG_BLOCKS as readonly string[]).includes(k)));
  const sources: SettingsSources = { file, env: {}, ...(cfg.file === undefined ? {} : { filePath: cfg.file }) };
  return new Settings(sources);
}

export class ConfigSet {
  private readonly deps: ConfigSetDeps;
  private readonly entries = new Map<string, LoadedConfig>();
  private readonly loading = new Map<string, Promise<LoadedConfig>>();
  /**
   * The paths callers named, each with the config it resolved to: a command sends its config with every
   * request, and a loaded one is found without a realpath and a stat each time (the checks ran at its load).
   */
  private readonly named = new Map<string, string>();
  private readonly now: () => number;
  /** Each instance's fingerprint, as last assigned: an instance keeps its name while its definition is used. */
  private instanceOfFingerprint = new Map<string, string>();
  private homeEntry: LoadedConfig;

  constructor(deps: ConfigSetDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.homeEntry = this.make(deps.home, true);
    this.entries.set(this.homeEntry.id, this.homeEntry);
    this.assign();
  }

  get home(): LoadedConfig {
    return this.homeEntry;
  }

  /** Every loaded config, the daemon's own first, then in the order they were loaded. */
  all(): LoadedConfig[] {
    return [...this.entries.values()];
  }

  /** The loaded config of this id (none: the home config). @throws McpxError MCPX_UNKNOWN_CONFIG for an id not loaded. */
  get(id: string | undefined): LoadedConfig {
    if (id === undefined) return this.homeEntry;
    const e = this.entries.get(id);
    if (!e) throw new McpxError('MCPX_NOT_FOUND', `the config ${JSON.stringify(id)} is not loaded in this daemon`, { data: { config: id } });
    return e;
  }

  find(id: string | undefined): LoadedConfig | undefined {
    return id === undefined ? this.homeEntry : this.entries.get(id);
  }

  /**
   * The id of a config file named by a caller, loading it on first use. A relative path is refused (a
   * caller resolves its own); the file must be a regular file owned by the daemon's user and not
   * writable by others, since its servers are commands the daemon runs.
   * @throws ConfigError naming the file (and line, column) when it does not exist, cannot be read or does not parse.
   */
  async ensure(file: string): Promise<{ entry: LoadedConfig; loaded: boolean }> {
    const seen = this.entries.get(this.named.get(file) ?? '');
    if (seen) return { entry: seen, loaded: false };
    const id = await configId(file, this.deps.trusted ?? []);
    const known = this.entries.get(id);
    if (known) {
      this.named.set(file, id);
      return { entry: known, loaded: false };
    }
    let p = this.loading.get(id);
    if (!p) {
      p = this.loadNew(id).finally(() => this.loading.delete(id));
      this.loading.set(id, p);
      const entry = await p;
      this.named.set(file, id);
      return { entry, loaded: true };
    }
    return { entry: await p, loaded: false };
  }

  private async loadNew(id: string): Promise<LoadedConfig> {
    const cfg = await this.deps.load(id);
    if (cfg.errors.length > 0) throw new ConfigError(cfg.errors, cfg.file ?? id);
    const entry = this.make(cfg, false);
    this.entries.set(id, entry);
    this.assign();
    return entry;
  }

  private make(cfg: DaemonConfig, home: boolean): LoadedConfig {
    const own = home ? undefined : ownSettings(cfg);
    return {
      id: home ? realId(cfg.file) : (cfg.file ?? '(none)'),
      home,
      cfg,
      own,
      settings: own === undefined ? this.deps.settings : layered(this.deps.settings, own),
      instances: new Map(),
      rejected: undefined,
      lastUsed: this.now(),
      callers: new Map(),
      loadedAt: this.now(),
    };
  }

  /** Puts a new version of a loaded config in force (a good reload). @throws SettingValueError for a bad own block. */
  replace(entry: LoadedConfig, cfg: DaemonConfig): void {
    if (entry.home) {
      entry.cfg = cfg;
    } else {
      const own = ownSettings(cfg);
      entry.cfg = cfg;
      entry.own = own;
      entry.settings = layered(this.deps.settings, own);
    }
    entry.rejected = undefined;
    this.assign();
  }

  /** Forgets a config (its instances that no other config uses stop at the next reconcile). */
  unload(entry: LoadedConfig): void {
    if (entry.home) return;
    this.entries.delete(entry.id);
    for (const [path, id] of this.named) if (id === entry.id) this.named.delete(path);
    this.assign();
  }

  touch(entry: LoadedConfig): void {
    entry.lastUsed = this.now();
  }

  attach(entry: LoadedConfig, caller: Omit<ConfigCaller, 'since'>): () => void {
    entry.callers.set(caller.id, { ...caller, since: new Date(this.now()).toISOString() });
    entry.lastUsed = this.now();
    return () => {
      entry.callers.delete(caller.id);
      entry.lastUsed = this.now();
    };
  }

  /** Configs with no caller and no request within `idleMs` (never the home config). */
  idle(idleMs: number): LoadedConfig[] {
    const t = this.now();
    return this.all().filter((e) => !e.home && e.callers.size === 0 && this.loading.get(e.id) === undefined && t - e.lastUsed >= idleMs);
  }

  /** The instance a config's server runs on. @throws McpxError MCPX_UNKNOWN_SERVER (naming the config's servers; a disabled one as such). */
  instance(entry: LoadedConfig, server: string): string {
    const key = entry.instances.get(server);
    if (key !== undefined) return key;
    const s = entry.cfg.servers.find((x) => x.name === server);
    if (s?.disabled)
      throw new McpxError('MCPX_UNKNOWN_SERVER', `server ${JSON.stringify(server)} is disabled in ${entry.cfg.file ?? 'the config'}`, {
        data: { server, disabled: true },
      });
    const known = [...entry.instances.keys()];
    throw new McpxError(
      'MCPX_UNKNOWN_SERVER',
      `no server named ${JSON.stringify(server)} is configured${entry.home ? '' : ` in ${entry.id}`}${known.length ? ` (configured: ${known.join(', ')})` : ''}`,
      { data: { server, configured: known, ...(entry.home ? {} : { config: entry.id }) } },
    );
  }

  /** Every (config, server) an instance serves. */
  usersOf(instance: string): Array<{ entry: LoadedConfig; server: string }> {
    const out: Array<{ entry: LoadedConfig; server: string }> = [];
    for (const e of this.entries.values()) for (const [name, key] of e.instances) if (key === instance) out.push({ entry: e, server: name });
    return out;
  }

  /** The pools' configs over every loaded config, one per instance (named by instance). */
  desired(eraCache: boolean): PoolServerConfig[] {
    const seen = new Set<string>();
    const out: PoolServerConfig[] = [];
    for (const e of this.entries.values()) {
      for (const c of resolvePoolConfigs(e.cfg, e.settings)) {
        const key = e.instances.get(c.name);
        if (key === undefined || seen.has(key)) continue;
        seen.add(key);
        out.push({ ...c, name: key, eraCache });
      }
    }
    return out;
  }

  /** Every instance's server entry, named by instance (for OAuth and the secret scrubber). */
  instanceServers(): ResolvedServer[] {
    const seen = new Set<string>();
    const out: ResolvedServer[] = [];
    for (const e of this.entries.values()) {
      for (const s of e.cfg.servers) {
        const key = e.instances.get(s.name);
        if (key === undefined || seen.has(key)) continue;
        seen.add(key);
        out.push(key === s.name ? s : { ...s, name: key });
      }
    }
    return out;
  }

  /** Every server of every config (disabled ones too), for the secret scrubber. */
  everyServer(): ResolvedServer[] {
    return this.all().flatMap((e) => e.cfg.servers);
  }

  /**
   * Names the instances: a definition already running keeps its instance's name; a new one takes the
   * name its server had, else the server's name, else `name#N`.
   */
  private assign(): void {
    const items: Array<{ e: LoadedConfig; name: string; fp: string }> = [];
    for (const e of this.entries.values()) {
      // Within one config every server is its own instance, alike or not (two entries of one command are
      // two processes, as they always were): the n-th of a definition in one config shares with the n-th in another.
      const seen = new Map<string, number>();
      for (const c of resolvePoolConfigs(e.cfg, e.settings)) {
        // Tool filters, pins and pinTools are an instance's (the catalogue serves an instance's listing once):
        // servers alike but for them do not share.
        const s = e.cfg.servers.find((x) => x.name === c.name);
        const fp = `${poolFingerprint(c)}\u0000${JSON.stringify([s?.tools ?? null, s?.pin ?? null, s?.pinTools ?? null])}`;
        const n = seen.get(fp) ?? 0;
        seen.set(fp, n + 1);
        items.push({ e, name: c.name, fp: `${fp}\u0000${n}` });
      }
    }
    const next = new Map<string, string>();
    const taken = new Set<string>();
    for (const it of items) {
      if (next.has(it.fp)) continue;
      const kept = this.instanceOfFingerprint.get(it.fp);
      if (kept !== undefined && !taken.has(kept)) {
        next.set(it.fp, kept);
        taken.add(kept);
      }
    }
    for (const it of items) {
      if (next.has(it.fp)) continue;
      const before = it.e.instances.get(it.name);
      let key = before !== undefined && !taken.has(before) ? before : it.name;
      for (let n = 2; taken.has(key); n++) key = `${it.name}#${n}`;
      next.set(it.fp, key);
      taken.add(key);
    }
    for (const e of this.entries.values()) e.instances = new Map();
    for (const it of items) it.e.instances.set(it.name, next.get(it.fp)!);
    this.instanceOfFingerprint = next;
  }
}

/** The home config's id: its file's real path when it can be had (a caller naming it by a link finds it). */
function realId(file: string | undefined): string {
  if (file === undefined) return '(none)';
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * A config's identity: its file's real path. The file must exist, be a regular file, belong to the
 * daemon's user and not be writable by every user.
 * @throws ConfigError naming the file.
 */
export async function configId(file: string, trusted: readonly string[] = []): Promise<string> {
  const fail = (message: string): never => {
    throw new ConfigError([{ source: 'file', message: `${file}: ${message}` }], file);
  };
  if (!file.startsWith('/')) fail('a config named to the daemon must be an absolute path');
  let real: string;
  try {
    real = await realpath(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(err)})`);
  }
  const s = await stat(real);
  if (!s.isFile()) fail('is not a regular file');
  if (trusted.includes(real)) return real;
  if (typeof process.getuid === 'function' && s.uid !== process.getuid()) fail("belongs to another user; the daemon runs only its own user's config files");
  if ((s.mode & 0o002) !== 0)
    fail(`can be written by every user (mode ${(s.mode & 0o777).toString(8)}); the daemon runs commands from it, so it must not be (chmod o-w)`);
  return real;
}
