/**
 * What an entry serves (`/mcp`, `/mcp/<server>`, each `mcpx serve` stream): one server under its own
 * names, or some servers; how tools are offered; which tools are shown. And the front's options for it.
 */
import type { FrontConfig } from './front-scope.js';
import type { ToolStrategy } from './tool-strategy.js';

export interface EntryMode {
  passthrough?: string;
  servers?: readonly string[];
  /** How tools are offered (./tool-strategy.ts; default auto). */
  tools?: ToolStrategy;
  /** Globs on the names callers see: only these tools, less the denied ones. */
  allowTools?: readonly string[];
  denyTools?: readonly string[];
  /** The config its callers mean (`/mcp?config=`, serve's stream); absent: the daemon's own. */
  config?: string;
}

/** The front's options for an entry's mode. */
export function modeConfig(mode: EntryMode): Pick<FrontConfig, 'passthrough' | 'servers' | 'tools' | 'toolGlobs' | 'config'> {
  const globs = {
    ...(mode.allowTools && mode.allowTools.length > 0 ? { allow: mode.allowTools } : {}),
    ...(mode.denyTools && mode.denyTools.length > 0 ? { deny: mode.denyTools } : {}),
  };
  return {
    ...(mode.passthrough === undefined ? {} : { passthrough: mode.passthrough }),
    ...(mode.servers === undefined ? {} : { servers: mode.servers }),
    ...(mode.tools === undefined ? {} : { tools: mode.tools }),
    ...(Object.keys(globs).length > 0 ? { toolGlobs: globs } : {}),
    ...(mode.config === undefined ? {} : { config: mode.config }),
  };
}
