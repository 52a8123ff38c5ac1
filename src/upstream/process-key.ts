/**
 * The era-cache key (docs/behaviour.md §5): SHA-256 of the process definition only — command, args, env,
 * cwd, transport, url, headers — as JSON with object keys sorted.
 *
 * Only what decides which program answers (and so which era it speaks) goes in. Leasing knobs (the
 * `mcpx` block, scope, max, idle timers), the `protocol` preference and anything else a server
 * definition may carry never change the key, so a changed pool setting does not cost a re-probe.
 * Secrets in env/headers only ever leave this module hashed.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import { McpxError } from '../errors.js';
import { DEFAULT_URL_WIRE } from '../transports/capabilities.js';

/** The fields of a server definition that matter here; anything else it carries is ignored. */
export interface ProcessDefinitionInput {
  command?: string;
  args?: readonly string[];
  env?: Readonly<Record<string, string>>;
  cwd?: string;
  /** 'stdio', or an HTTP transport ('streamable-http', later 'sse'). Absent: stdio when `command` is set. */
  transport?: string;
  url?: string;
  headers?: Readonly<Record<string, string>>;
}

export interface StdioProcessDefinition {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string | null;
}

export interface HttpProcessDefinition {
  transport: string;
  url: string;
  headers: Record<string, string>;
}

export type ProcessDefinition = StdioProcessDefinition | HttpProcessDefinition;

/**
 * The normalised process definition: omitted `args`/`env`/`headers`/`cwd` equal their empty values,
 * and nothing but the fields above is copied.
 * @throws McpxError MCPX_BAD_CONFIG when the definition names neither a command nor a URL.
 */
export function processDefinition<T extends ProcessDefinitionInput>(def: T): ProcessDefinition {
  const stdio = def.transport === 'stdio' || (def.transport === undefined && def.command !== undefined);
  if (stdio) {
    if (typeof def.command !== 'string') {
      throw new McpxError('MCPX_BAD_CONFIG', 'a stdio server definition needs a `command`', { data: { transport: 'stdio' } });
    }
    return {
      transport: 'stdio',
      command: def.command,
      args: [...(def.args ?? [])],
      env: { ...(def.env ?? {}) },
      cwd: def.cwd ?? null,
    };
  }
  if (typeof def.url !== 'string') {
    throw new McpxError('MCPX_BAD_CONFIG', 'a server definition needs a `command` or a `url`', {
      data: def.transport === undefined ? {} : { transport: def.transport },
    });
  }
  return { transport: def.transport ?? DEFAULT_URL_WIRE, url: def.url, headers: { ...(def.headers ?? {}) } };
}

/** Keys already computed, per definition object: a pool hands the same definition to every instance it starts. */
const keys = new WeakMap<object, string>();

/**
 * Lower-case hex SHA-256 of the normalised process definition, keys sorted (safe-stable-stringify).
 * Definitions are treated as immutable once loaded (a config change builds new ones).
 */
export function eraCacheKey<T extends ProcessDefinitionInput>(def: T): string {
  let key = keys.get(def);
  if (key === undefined) {
    key = createHash('sha256')
      .update(stringify(processDefinition(def)), 'utf8')
      .digest('hex');
    keys.set(def, key);
  }
  return key;
}
