/**
 * Runtime setting changes (`PUT`/`DELETE /v1/settings/…`): when each takes effect, and bringing the pools
 * in line for those that apply to sessions started from now on.
 */
import { findSetting, SETTINGS, type SettingEntry, type Settings } from '../config/settings.js';
import type { Logger } from '../log.js';
import type { EventHub } from './events.js';
import type { ReconcileOptions, ReconcileResult } from '../pool/reconciler.js';
import type { SettingChangeView } from './views.js';

export const APPLIES_TO = {
  sessions: 'sessions started from now on',
  now: 'now',
  restart: 'the next daemon start',
} as const;

/** When a change to `path` takes effect. */
export function appliesTo(path: string): string {
  const d = findSetting(path);
  if (d.restart) return APPLIES_TO.restart;
  if (d.path.startsWith('upstream.') || d.path.startsWith('pool.')) return APPLIES_TO.sessions;
  return APPLIES_TO.now;
}

/** The settings read once, at the daemon's start. */
export const RESTART_PATHS = SETTINGS.filter((d) => d.restart).map((d) => d.path as string);

export interface SettingChangesDeps {
  settings: Settings;
  log: Logger;
  hub: EventHub;
  reconcile(opts: ReconcileOptions): Promise<ReconcileResult>;
}

export class SettingChanges {
  constructor(private readonly deps: SettingChangesDeps) {}

  list(): { settings: SettingEntry[] } {
    return { settings: this.deps.settings.list() };
  }

  entry(path: string): SettingEntry {
    return this.deps.settings.entry(path);
  }

  /** @throws UnknownSettingError; SettingValueError (MCPX_BAD_SETTING, with `data.allowed` for an enum). */
  async set(path: string, value: unknown): Promise<SettingChangeView> {
    const entry = this.deps.settings.setRuntime(path, value);
    return this.afterChange(entry);
  }

  async unset(path: string): Promise<SettingChangeView> {
    const entry = this.deps.settings.unsetRuntime(path);
    return this.afterChange(entry);
  }

  private async afterChange(entry: SettingEntry): Promise<SettingChangeView> {
    const applies = appliesTo(entry.path);
    this.deps.log.info({ setting: entry.path, value: entry.display, source: entry.source, appliesTo: applies }, 'setting changed');
    this.deps.hub.publish({ type: 'setting.changed', path: entry.path, value: entry.value, source: entry.source });
    // A runtime value lives in this daemon only; any other source is read again at the next start.
    const outlivesRestart = entry.source !== 'runtime';
    if (applies !== APPLIES_TO.sessions) return { setting: entry, appliesTo: applies, outlivesRestart };
    const r = await this.deps.reconcile({ deferBusy: true });
    return { setting: entry, appliesTo: applies, servers: { applied: [...r.added, ...r.replaced], deferred: r.deferred }, outlivesRestart };
  }
}
