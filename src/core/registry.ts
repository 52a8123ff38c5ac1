/**
 * The daemon's pool registry: how each server's pool is made (its era cache, the questions its sessions
 * declare, its credentials).
 */
import { RELAYABLE_CAPABILITIES } from '../call/question-relay.js';
import type { Settings } from '../config/settings.js';
import type { Logger } from '../log.js';
import { PoolRegistry } from '../pool/pool-registry.js';
import { ServerPool, type ServerPoolDeps } from '../pool/server-pool.js';
import type { EraCache } from '../upstream/era-cache.js';
import { UPSTREAM_EXTENSIONS, withUpstreamExtensions } from '../protocol/extensions.js';

export interface CreateRegistryOptions {
  /** Read for a pool config without `eraCache` (the Controller's configs always carry it). */
  settings: Settings;
  /** The shared era cache; pools whose config has `eraCache` on get it, the others get none. */
  cache?: EraCache | null;
  logger?: Logger;
  inspect?: ServerPoolDeps['inspect'];
  inspectPool?: ServerPoolDeps['inspectPool'];
  /** Per-request credentials of a server's HTTP sessions (OAuth). */
  authorizer?: ServerPoolDeps['authorizer'];
}

/**
 * A PoolRegistry whose pools take the era cache when their config says so (`eraCache`, the
 * `upstream.eraCache` setting when the config was resolved; it is in the pool fingerprint, so switching
 * the setting replaces the pools like any other change).
 */
export function createPoolRegistry(opts: CreateRegistryOptions): PoolRegistry {
  return new PoolRegistry({
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.inspect ? { inspect: opts.inspect } : {}),
    ...(opts.inspectPool === undefined ? {} : { inspectPool: opts.inspectPool }),
    createPool: (config, deps) => {
      const on = (config.eraCache ?? opts.settings.get('upstream.eraCache') === true) && opts.cache != null;
      return new ServerPool(config, {
        // A legacy session declares at initialize the questions mcpx can relay (it is shared, and its server
        // asks only what it declared); a modern request declares its call's relay's, none without one.
        // Both declare the extensions mcpx relays (MCP Apps), so a server that gates its UI tools shows them.
        sessionCapabilities: {
          clientCapabilities: withUpstreamExtensions({ ...RELAYABLE_CAPABILITIES }),
          capabilitiesWithoutRelay: { extensions: { ...UPSTREAM_EXTENSIONS } },
        },
        ...deps,
        ...(opts.authorizer ? { authorizer: opts.authorizer } : {}),
        cache: on ? (opts.cache ?? null) : null,
      });
    },
  });
}
