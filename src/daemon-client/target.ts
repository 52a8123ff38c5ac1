/**
 * Where the daemon of a command's options lives: the state folder and socket, from the config file's
 * settings, the environment and the flags. Apart from the HTTP client (./client.ts): `mcpx serve`
 * needs this much and no HTTP at all.
 */
import { resolve as resolvePath } from 'node:path';
import { loadConfig } from '../config/config-file.js';
import { Settings } from '../config/settings.js';

export interface ClientOptions {
  /** `--config FILE`. */
  config?: string;
  /** `--state-dir DIR`. */
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface Target {
  stateDir: string;
  socket: string;
  /** The config file named by --config, absolute (passed on to a daemon started in the background). */
  configFlag?: string;
  /** The state folder named by --state-dir, absolute (likewise; from the environment or config the daemon finds it itself). */
  stateDirFlag?: string;
  /**
   * The config this command means, absolute: the file it resolved (--config, MCPX_CONFIG, the walk up, the
   * user config). Sent with every request: the daemon answers for this config, whatever config it was started
   * with. None found: the daemon's own config (a daemon started with `--config` serves commands that name none).
   */
  configFile?: string;
}

/** Where the daemon of these options lives: settings from the config file (when it reads), env and flags. */
export async function resolveTarget(opts: ClientOptions): Promise<Target> {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const flags = opts.stateDir === undefined ? {} : { '--state-dir': opts.stateDir };
  let settings: Settings | undefined;
  let configFile: string | undefined;
  try {
    const cfg = await loadConfig({ ...(opts.config === undefined ? {} : { configFlag: opts.config }), env, cwd });
    configFile = cfg.file;
    if (cfg.errors.length === 0) settings = new Settings({ file: cfg.settingsFile, ...(cfg.file ? { filePath: cfg.file } : {}), env, flags, cwd });
  } catch {
    settings = undefined;
  }
  settings ??= new Settings({ env, flags, cwd });
  return {
    stateDir: settings.get('paths.state'),
    socket: settings.get('daemon.socket'),
    ...(opts.config === undefined ? {} : { configFlag: resolvePath(cwd, opts.config) }),
    ...(opts.stateDir === undefined ? {} : { stateDirFlag: settings.get('paths.state') }),
    ...(configFile !== undefined ? { configFile } : opts.config !== undefined ? { configFile: resolvePath(cwd, opts.config) } : {}),
  };
}
