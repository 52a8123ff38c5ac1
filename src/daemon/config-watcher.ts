/**
 * Watching every loaded config file: each file's folder (an editor that saves by rename replaces the
 * file), debounced per file, reloading that config alone on a change; the folders watched follow the
 * configs loaded, unloaded and reloaded.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log.js';
import type { Controller } from '../core/controller.js';

export interface ConfigWatcherDeps {
  controller: Pick<Controller, 'configs' | 'reload' | 'hub'>;
  debounceMs: number;
  log: Logger;
  isStopping(): boolean;
}

export interface ConfigWatcher {
  /** Stops watching (pending reloads included). */
  close(): void;
}

export function watchConfigFile(d: ConfigWatcherDeps): ConfigWatcher {
  const { controller, debounceMs, log } = d;
  /** Per folder: its watcher. */
  const folders = new Map<string, FSWatcher>();
  /** Per config file (as loaded): its pending reload. */
  const timers = new Map<string, NodeJS.Timeout>();

  /** The loaded configs whose file is `name` in `dir`, with the caller each reloads as. */
  const configsAt = (dir: string, name: string | null) =>
    controller.configs.all().filter((c) => c.cfg.file !== undefined && dirname(c.cfg.file) === dir && (name === null || basename(c.cfg.file) === name));

  const changed = (dir: string, name: string | null) => {
    for (const c of configsAt(dir, name)) {
      const file = c.cfg.file!;
      const pending = timers.get(file);
      if (pending) clearTimeout(pending);
      timers.set(
        file,
        setTimeout(() => {
          timers.delete(file);
          if (d.isStopping()) return;
          // The config may have been unloaded meanwhile: reload only one still held.
          const still = controller.configs.all().find((x) => x.cfg.file === file);
          if (!still) return;
          void controller
            .reload('file changed', still.home ? {} : { config: still.id })
            .then(rewatch, (err: unknown) => log.error({ err, file }, 'reload failed'));
        }, debounceMs),
      );
    }
  };

  const rewatch = () => {
    const wanted = new Set(controller.configs.all().flatMap((c) => (c.cfg.file === undefined ? [] : [dirname(c.cfg.file)])));
    for (const [dir, w] of folders) {
      if (wanted.has(dir)) continue;
      w.close();
      folders.delete(dir);
    }
    for (const dir of wanted) {
      if (folders.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => changed(dir, name));
        w.on('error', (err) => log.warn({ err, dir }, 'config watcher failed; use mcpx reload'));
        folders.set(dir, w);
        log.debug({ dir }, 'watching a config folder');
      } catch (err) {
        log.warn({ err, dir }, 'cannot watch the config folder; use mcpx reload after editing');
      }
    }
  };
  rewatch();
  const unsubscribe = controller.hub.subscribe((e) => {
    if (e.type === 'config.reloaded' || e.type === 'config.loaded' || e.type === 'config.unloaded') rewatch();
  });
  return {
    close() {
      unsubscribe();
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
      for (const w of folders.values()) w.close();
      folders.clear();
    },
  };
}
