/**
 * Which config the daemon runs: the file `loadConfig` finds (--config, MCPX_CONFIG, .mcpx.json /
 * .mcp.json walking up from the working directory, the user config), else the bundled demo
 * (the build's dist/demo/demo.json, from examples/: three small servers, one per era).
 */
import { loadConfig, type LoadConfigOptions } from '../config/config-file.js';
import type { DaemonConfig } from '../core/views.js';
import { realpathSync } from 'node:fs';
import { demoConfigPath } from '../package-info.js';

export interface ConfigSourceOptions extends LoadConfigOptions {
  /** Path of the demo config used when no file is found; default the build's dist/demo/demo.json. */
  demoFile?: string;
}

/** A config file a caller names (`mcpx serve --config`, a command's resolved config, `/mcp?config=`): that file alone, no demo. */
export async function loadNamedConfig(file: string, opts: Pick<ConfigSourceOptions, 'env' | 'cwd'> = {}): Promise<DaemonConfig> {
  const loaded = await loadConfig({ ...opts, configFlag: file });
  return { ...loaded, demo: isDemo(file) };
}

export async function loadDaemonConfig(opts: ConfigSourceOptions = {}): Promise<DaemonConfig> {
  const loaded = await loadConfig(opts);
  if (loaded.found || loaded.errors.length > 0) return { ...loaded, demo: false };
  const { demoFile, configFlag: _ignored, ...rest } = opts;
  const demo = await loadConfig({ ...rest, configFlag: demoFile ?? demoConfigPath() });
  const { via: _via, ...withoutVia } = demo;
  return { ...withoutVia, demo: true };
}

/** Whether a file is the bundled demo (a command that found no config names it). */
function isDemo(file: string): boolean {
  try {
    return realpathSync(file) === realpathSync(demoConfigPath());
  } catch {
    return false;
  }
}
