/**
 * The daemon's views: what the controller answers, as plain types. The /v1 response schemas
 * (src/api/schemas.ts) are declared to match them field for field (the compiler checks both ways), so
 * these are the contract's shapes without the HTTP layer. Types only: the CLI, the page and the config
 * view name them without loading the controller.
 */
import type { AuthState } from '../auth/server-auth.js';
import type { ListName } from '../catalog/left-out.js';
import type { LoadedConfig } from '../config/config-file.js';
import type { Lane, Preference } from '../machines/preference.js';
import type { EraSource } from '../machines/session.machine.js';
import type { Era } from '../machines/versions.js';

/** An error as an answer carries it. */
export interface ErrorView {
  /** A stable MCPX_* code. */
  code: string;
  message: string;
  /** The offending field, for a 400. */
  path?: (string | number)[];
  in?: 'body' | 'query' | 'params' | 'headers';
  /** The accepted values, when the field is an enum. */
  allowed?: string[];
  data?: Record<string, unknown>;
}

/** One running (or starting, or stopping) instance of a server. */
export interface InstanceView {
  id: string;
  lane: Lane;
  pid: number | null;
  scopeKey: string;
  holders: number;
  /** The pool slot: starting, ready, idle, stopping. */
  state: string;
  /** The session statechart state, e.g. connecting.discovering or ready. */
  sessionState: string | null;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  startedAt: string;
  uptimeMs: number;
}

/** The last config edit the daemon refused; the config before it stays in force until a reload succeeds. */
export interface RejectedEdit {
  file: string | null;
  /** When the reload refused it (ISO 8601). */
  at: string;
  /** Every problem, one message each (file, key path and what is wrong). */
  problems: string[];
}

/** One config the daemon holds, in `GET /v1/status` (`configs`). */
export interface ConfigStatusView {
  /** The config file's real path (null: none, the daemon runs without one). */
  file: string | null;
  /** The daemon's own config: what callers that name none get; never unloaded. */
  home: boolean;
  demo: boolean;
  /** When it was loaded, and last used by any caller (ISO 8601). */
  loadedAt: string;
  lastUsedAt: string;
  /** The callers attached to it: serve streams and `/mcp` sessions (a CLI command is a request: `lastUsedAt`). */
  callers: Array<{ id: string; kind: 'serve' | 'mcp' | 'cli'; since: string }>;
  /** Its enabled servers, each with the instance it runs on; `sharedWith`: the other configs whose servers run on that instance. */
  servers: Array<{ server: string; instance: string; sharedWith: Array<{ file: string | null; server: string }> }>;
  rejected?: RejectedEdit;
}

/** One lane of a server in `GET /v1/status`. */
export interface LaneView {
  lane: Lane;
  max: number;
  instances: number;
  state?: string;
  reason?: string;
}

/** One server in `GET /v1/status`. */
export interface ServerStatusView {
  server: string;
  transport: 'stdio' | 'http';
  preference: Preference;
  lanes: LaneView[];
  instances: InstanceView[];
  /** An HTTP server's authorization (as /v1/auth says), when it can use one. */
  auth?: { state: AuthState; error?: string; unsaved?: string };
}

/** One configured server, secrets redacted (`GET /v1/servers`, `GET /v1/config`). */
export interface ServerView {
  server: string;
  transport: 'stdio' | 'http';
  disabled: boolean;
  preference: Preference;
  preferenceSource: 'server' | 'setting';
  command?: string;
  args?: string[];
  cwd?: string;
  /** Names only: every value is <redacted>. */
  env?: Record<string, string>;
  /** Credentials and secret-looking query parameters redacted. */
  url?: string;
  /** Names only: every value is <redacted>. */
  headers?: Record<string, string>;
  limits: { scope: string; max: number; sharing: string; idleTimeoutMs: number };
  probeTimeoutMs: number;
  instances: number;
}

/** One server in `GET /v1/protocol`: its preference, the era it speaks and what is cached of it. */
export interface ProtocolRow {
  server: string;
  preference: Preference;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  cached: { era: Era; version: string; at: string; source: string; transport?: string } | null;
  legacyLane: { state: 'unused' | 'available' | 'refused'; reason?: string } | null;
  pendingPreference?: Preference;
}

/** One tool in `GET /v1/tools`; the rest of the tool's fields pass as the server listed them. */
export interface ToolRow {
  [key: string]: unknown;
  server: string;
  name: string;
  /** The name MCP clients see through mcpx serve and /mcp (aggregate mode). */
  exposed: string;
  description?: string;
  inputSchema?: unknown;
}

/** `GET /v1/tools`. */
export interface ToolsView {
  ok: boolean;
  tools: ToolRow[];
  lanes: Record<string, Lane>;
  errors: { server: string; code: string; message: string; data?: Record<string, unknown> }[];
  /**
   * Items a server listed that no MCP client SDK would take (a tool whose inputSchema type is not "object", a
   * duplicate name…): not served, each with its reason.
   */
  leftOut: { server: string; list: ListName; name: string; reason: string }[];
}

/** `GET /v1/tools/search`: the tools that best match a query, best first (the ranking of `search_tools`). */
export interface ToolSearchView {
  ok: true;
  tools: {
    server: string;
    /** The server's own name. */
    name: string;
    /** The name MCP clients see through mcpx serve and /mcp (aggregate mode). */
    exposed: string;
    /** The first sentence of the tool's description. */
    description: string;
    /** A short signature: the name and its arguments (`?`: optional). */
    signature: string;
    /** Higher is better. */
    score: number;
  }[];
}

/** `POST /v1/call`: the upstream tools/call result (an isError result included), or why there is none. */
export type CallOutcome = { ok: true; /** The upstream tools/call result. */ result: Record<string, unknown> } | { ok: false; error: ErrorView };

/** One setting as `GET /v1/settings` lists it. */
export interface SettingEntryView {
  path: string;
  value: unknown;
  display: string;
  default: unknown;
  defaultDisplay: string;
  source: 'default' | 'file' | 'env' | 'flag' | 'runtime';
  from?: string;
  type: string;
  allowed?: string[];
  env: string;
  envAliases: string[];
  flag: string;
  flagAliases: string[];
  key: string;
  description: string;
  restart: boolean;
}

/** `PUT`/`DELETE /v1/settings/:path`: the setting now, and when the change applies. */
export interface SettingChangeView {
  setting: SettingEntryView;
  /** "sessions started from now on", "now", or "the next daemon start". */
  appliesTo: string;
  servers?: { applied: string[]; deferred: string[] };
  /** Whether the value now in force is read again at the next daemon start: false for a runtime value, which lives in the daemon only. */
  outlivesRestart: boolean;
}

/** `GET /v1/config`: the config in force, secrets redacted. */
export interface ConfigView {
  file: string | null;
  via: string | null;
  demo: boolean;
  servers: ServerView[];
  warnings: string[];
}

/** `POST /v1/reload`: what a reload changed, or why the config before it stays. */
export type ReloadOutcome =
  | {
      ok: true;
      file: string | null;
      demo: boolean;
      added: string[];
      removed: string[];
      replaced: string[];
      kept: string[];
      failed: { server: string; message: string }[];
      warnings: string[];
      restartNeeded: string[];
    }
  | { ok: false; file: string | null; error: ErrorView };

/** A loaded config plus whether it is the bundled demo (no config file found). */
export type DaemonConfig = LoadedConfig & { demo?: boolean };
