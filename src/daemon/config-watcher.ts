/**
 * Watching the config file: its folder (an editor that saves by rename replaces the file), debounced,
 * reloading on a change to the file; the folder watched follows the config in force after each reload.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log.js';
import type { Controller } from '../core/controller.js';

export interface ConfigWatcherDeps {
  controller: Pick<Controller, 'config' | 'reload' | 'hub'>;
  debounceMs: number;
  log: Logger;
  isStopping(): boolean;
}

export interface ConfigWatcher {
  /** Stops watching (a pending reload included). */
  close(): void;
}

export function watchConfigFile(d: ConfigWatcherDeps): ConfigWatcher {
  const { controller, debounceMs, log } = d;
  let watcher: FSWatcher | undefined;
  let watchedDir: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const rewatch = () => {
    const file = controller.config.file;
    const dir = file === undefined ? undefined : dirname(file);
    if (dir === watchedDir) return;
    watcher?.close();
    watcher = undefined;
    watchedDir = dir;
    if (dir === undefined || file === undefined) return;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => {
        const current = controller.config.file;
        if (current === undefined) return;
        if (name !== null && name !== basename(current)) return;
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          timer = undefined;
          if (d.isStopping()) return;
          void controller.reload('file changed').then(rewatch, (err: unknown) => log.error({ err }, 'reload failed'));
        }, debounceMs);
      });
      watcher.on('error', (err) => log.warn({ err, dir }, 'config watcher failed; use mcpx reload'));
      log.debug({ dir, file }, 'watching the config file');
    } catch (err) {
      log.warn({ err, dir }, 'cannot watch the config folder; use mcpx reload after editing');
    }
  };
  rewatch();
  controller.hub.subscribe((e) => {
    if (e.type === 'config.reloaded') rewatch();
  });
  return {
    close() {
      if (timer) clearTimeout(timer);
      watcher?.close();
    },
  };
}
