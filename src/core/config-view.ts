/**
 * Descriptions of a config as the daemon runs it (the `/v1/servers` and `/v1/config` views): shared by
 * the controller and `mcpx config`, which computes them without a daemon and so loads this alone, not
 * the controller and what it runs (the pools, their statecharts, zod).
 */
import { redactConfig, resolvePoolConfigs, type ResolvedServer } from '../config/config-file.js';
import type { Settings } from '../config/settings.js';
import type { PoolServerConfig } from '../pool/types.js';
import type { ConfigView, DaemonConfig, ServerView } from './views.js';

/** The effective pool config of one server, disabled or not. */
function effectiveOf(server: ResolvedServer, settings: Pick<Settings, 'get'>): PoolServerConfig {
  return resolvePoolConfigs({ servers: [{ ...server, disabled: false }] }, settings)[0]!;
}

export function serverView(server: ResolvedServer, settings: Pick<Settings, 'get'>, instances = 0): ServerView {
  const eff = effectiveOf(server, settings);
  const def = redactConfig(server.definition, server.expanded) as unknown as Record<string, unknown>;
  return {
    server: server.name,
    transport: server.transport,
    disabled: server.disabled,
    preference: eff.preference,
    preferenceSource: server.preference === undefined ? 'setting' : 'server',
    ...(typeof def['command'] === 'string' ? { command: def['command'] } : {}),
    ...(Array.isArray(def['args']) ? { args: def['args'] as string[] } : {}),
    ...(typeof def['cwd'] === 'string' ? { cwd: def['cwd'] } : {}),
    ...(def['env'] ? { env: def['env'] as Record<string, string> } : {}),
    ...(typeof def['url'] === 'string' ? { url: def['url'] } : {}),
    ...(def['headers'] ? { headers: def['headers'] as Record<string, string> } : {}),
    limits: { scope: eff.limits.scope, max: eff.limits.max, sharing: eff.limits.sharing, idleTimeoutMs: eff.limits.idleTimeoutMs },
    probeTimeoutMs: eff.probeTimeoutMs,
    instances,
  };
}

export function describeConfig(config: DaemonConfig, settings: Pick<Settings, 'get'>): ConfigView {
  return {
    file: config.file ?? null,
    via: config.via ?? null,
    demo: config.demo === true,
    servers: config.servers.map((s) => serverView(s, settings)),
    warnings: config.warnings.map((w) => w.message),
  };
}
