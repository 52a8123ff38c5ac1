import type { OAuthSettings } from './oauth-settings.js';
import { DEFAULT_URL_WIRE, type UrlWire, type WireTransport } from '../transports/capabilities.js';

/** How a configured upstream is reached: a process to spawn, or a URL. */
export interface StdioDefinition {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /**
   * The whole daemon environment under `env` (true), or only a short allowlist (absent). Not part of
   * the era-cache key (docs/decisions.md): it does not change which program answers.
   */
  inheritEnv?: boolean;
}

export interface HttpDefinition {
  url: string;
  headers?: Record<string, string>;
  /** Absent: the default URL wire, Streamable HTTP (with its HTTP+SSE fallback). Given: that wire only (`sse`: the deprecated HTTP+SSE transport). */
  transport?: UrlWire;
  /** MCP authorization (OAuth): settings, or false for none (static headers only). Absent: discovered when asked. */
  oauth?: OAuthSettings | false;
}

export type ServerDefinition = StdioDefinition | HttpDefinition;

export function isStdioDefinition(def: ServerDefinition): def is StdioDefinition {
  return typeof (def as StdioDefinition).command === 'string';
}

/** The wire a definition names: stdio for a command, else its declared HTTP transport (Streamable HTTP by default). */
export function wireOf(def: ServerDefinition): WireTransport {
  return isStdioDefinition(def) ? 'stdio' : (def.transport ?? DEFAULT_URL_WIRE);
}
