/**
 * A config reload (`POST /v1/reload`, SIGHUP, the file watcher): re-read the file; a broken one is reported
 * (log, `config.error`, the result) and the last good config stays in force; a good one is adopted, its
 * settings resolved, and the pools brought in line (added servers appear, removed ones stop, unchanged
 * ones keep their processes).
 */
import stringify from 'safe-stable-stringify';
import type { SettingsSources, Settings } from '../config/settings.js';
import { ConfigError, type ConfigProblem } from '../errors.js';
import type { Logger } from '../log.js';
import type { EventHub } from './events.js';
import type { ReconcileOptions, ReconcileResult } from '../pool/reconciler.js';
import { RESTART_PATHS } from './setting-changes.js';
import type { DaemonConfig, ReloadOutcome } from './views.js';

export interface ConfigReloadDeps {
  /** Re-reads the config (the daemon's loadConfig + demo fallback); none: a reload is refused. */
  loader: (() => Promise<DaemonConfig>) | undefined;
  /** Env, flags and working directory for `Settings.resolve` (the file part comes from the new config). */
  sources: Omit<SettingsSources, 'file' | 'filePath' | 'runtime'> | undefined;
  settings: Settings;
  /** The config in force. */
  current(): DaemonConfig;
  /**
   * A config other than the daemon's own: only these setting blocks of its file count (its `upstream` and
   * `pool`); the daemon-wide ones are not read from it, so none of them can need a restart.
   */
  ownBlocks?: readonly string[];
  /** Puts a good config in force (before the pools are brought in line with it). */
  adopt(next: DaemonConfig): void;
  reconcile(opts: ReconcileOptions): Promise<ReconcileResult>;
  /** Servers were added, removed or replaced. */
  serversChanged(): void;
  log: Logger;
  hub: EventHub;
}

export async function reloadConfig(d: ConfigReloadDeps, reason: string): Promise<ReloadOutcome> {
  const cfg = d.current();
  if (!d.loader) {
    return {
      ok: false,
      file: cfg.file ?? null,
      error: { code: 'MCPX_NOT_IMPLEMENTED', message: 'this daemon was started without a config source to reload' },
    };
  }
  let next: DaemonConfig;
  try {
    next = await d.loader();
  } catch (err) {
    return reloadFailed(
      d,
      cfg.file ?? null,
      new ConfigError([{ source: 'file', message: err instanceof Error ? err.message : String(err) }], cfg.file),
      reason,
    );
  }
  if (next.errors.length > 0) return reloadFailed(d, next.file ?? null, new ConfigError(next.errors, next.file), reason);
  const before = Object.fromEntries(RESTART_PATHS.map((p) => [p, stringify(d.settings.get(p))]));
  try {
    const file = d.ownBlocks ? Object.fromEntries(Object.entries(next.settingsFile).filter(([k]) => d.ownBlocks!.includes(k))) : next.settingsFile;
    d.settings.resolve({ ...d.sources, file, ...(next.file === undefined ? {} : { filePath: next.file }) });
  } catch (err) {
    const problems: ConfigProblem[] = (err as { problems?: ConfigProblem[] }).problems ?? [
      { source: 'file', message: err instanceof Error ? err.message : String(err) },
    ];
    return reloadFailed(d, next.file ?? null, new ConfigError(problems, next.file), reason);
  }
  d.adopt(next);
  const r = await d.reconcile({ deferBusy: false });
  const restartNeeded = RESTART_PATHS.filter((p) => stringify(d.settings.get(p)) !== before[p]);
  const failed = r.failed.map((f) => ({ server: f.name, message: f.error.message }));
  const outcome: ReloadOutcome = {
    ok: true,
    file: next.file ?? null,
    demo: next.demo === true,
    added: r.added,
    removed: r.removed,
    replaced: r.replaced,
    kept: r.kept,
    failed,
    warnings: next.warnings.map((w) => w.message),
    restartNeeded,
  };
  d.log.info(
    { reason, file: next.file, added: r.added, removed: r.removed, replaced: r.replaced, kept: r.kept.length, failed: failed.length },
    'config reloaded',
  );
  for (const w of next.warnings) d.log.warn({ file: next.file }, w.message);
  if (restartNeeded.length > 0) d.log.warn({ settings: restartNeeded }, 'these settings changed and take effect when the daemon restarts');
  d.hub.publish({
    type: 'config.reloaded',
    file: next.file ?? null,
    demo: next.demo === true,
    added: r.added,
    removed: r.removed,
    replaced: r.replaced,
    kept: r.kept,
    failed,
    restartNeeded,
  });
  if (r.added.length > 0 || r.removed.length > 0 || r.replaced.length > 0) d.serversChanged();
  return outcome;
}

function reloadFailed(d: Pick<ConfigReloadDeps, 'log' | 'hub'>, file: string | null, err: ConfigError, reason: string): ReloadOutcome {
  d.log.error({ reason, file, problems: err.problems.length }, `config not reloaded; the last good config stays in force: ${err.message}`);
  d.hub.publish({
    type: 'config.error',
    file,
    message: err.message,
    problems: err.problems.map((p) => ({
      message: p.message,
      ...(p.key === undefined ? {} : { key: p.key }),
      ...(p.server === undefined ? {} : { server: p.server }),
      ...(p.line === undefined ? {} : { line: p.line }),
      ...(p.column === undefined ? {} : { column: p.column }),
    })),
  });
  return { ok: false, file, error: err.toJSON() };
}
