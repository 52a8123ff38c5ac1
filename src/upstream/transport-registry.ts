/**
 * The wire transports, each with what it can do (../transports/capabilities.ts) and how its channel is made from a
 * server definition. Adding a transport is an entry here and one in TRANSPORT_CAPABILITIES; the compiler
 * asks for both once the name joins WireTransport.
 */
import { McpxError } from '../errors.js';
import { isStdioDefinition, type HttpDefinition, type ServerDefinition, type StdioDefinition } from './definition.js';
import { TRANSPORT_CAPABILITIES, type TransportCapabilities, type WireTransport } from '../transports/capabilities.js';
import type { TransportLogger } from '../transports/jsonrpc.js';
import type { RequestAuthorizer } from '../transports/request-authorizer.js';
import { LegacySseChannel } from '../transports/sse-legacy.js';
import { StdioChannel } from '../transports/stdio.js';
import { StreamableHttpChannel } from '../transports/streamable-http.js';
import type { Channel } from '../transports/types.js';

/** What a channel is made with besides the server's definition: the session's limits and its log. */
export interface ChannelSettings {
  logger: TransportLogger;
  maxMessageBytes?: number;
  /** stdio: how long each stop step waits before escalating. */
  stopGraceMs?: number;
  /** HTTP: per-request credentials (OAuth bearer tokens), added by the channel to every request. */
  authorizer?: RequestAuthorizer;
}

export interface TransportEntry {
  capabilities: Readonly<TransportCapabilities>;
  /** A channel (not started) to the server `def` defines. The owner chooses what `C`, its messages' context, is. */
  create<C>(def: ServerDefinition, settings: ChannelSettings): Channel<C>;
}

export const TRANSPORTS: Readonly<Record<WireTransport, TransportEntry>> = {
  stdio: {
    capabilities: TRANSPORT_CAPABILITIES.stdio,
    create: (def, settings) => new StdioChannel(stdioOptions(processOf(def), settings)),
  },
  'streamable-http': {
    capabilities: TRANSPORT_CAPABILITIES['streamable-http'],
    create: (def, settings) => new StreamableHttpChannel(httpOptions(endpointOf(def), settings)),
  },
  sse: {
    capabilities: TRANSPORT_CAPABILITIES.sse,
    create: (def, settings) => new LegacySseChannel(httpOptions(endpointOf(def), settings)),
  },
};

/** A channel to `def` over `wire`. */
export function createChannel<C>(def: ServerDefinition, wire: WireTransport, settings: ChannelSettings): Channel<C> {
  return TRANSPORTS[wire].create<C>(def, settings);
}

function httpOptions(def: HttpDefinition, settings: ChannelSettings) {
  return {
    url: def.url,
    ...(def.headers ? { headers: def.headers } : {}),
    ...(settings.maxMessageBytes === undefined ? {} : { maxMessageBytes: settings.maxMessageBytes }),
    ...(settings.authorizer ? { authorizer: settings.authorizer } : {}),
    logger: settings.logger,
  };
}

function stdioOptions(def: StdioDefinition, settings: ChannelSettings) {
  return {
    command: def.command,
    ...(def.args ? { args: def.args } : {}),
    ...(def.env ? { env: def.env } : {}),
    ...(def.inheritEnv ? { inheritEnv: true } : {}),
    ...(def.cwd ? { cwd: def.cwd } : {}),
    ...(settings.stopGraceMs === undefined ? {} : { stopGraceMs: settings.stopGraceMs }),
    ...(settings.maxMessageBytes === undefined ? {} : { maxMessageBytes: settings.maxMessageBytes }),
    logger: settings.logger,
  };
}

function processOf(def: ServerDefinition): StdioDefinition {
  if (isStdioDefinition(def)) return def;
  throw new McpxError('MCPX_BAD_CONFIG', 'the stdio transport needs a server definition with a `command`');
}

function endpointOf(def: ServerDefinition): HttpDefinition {
  if (!isStdioDefinition(def)) return def;
  throw new McpxError('MCPX_BAD_CONFIG', 'an HTTP transport needs a server definition with a `url`');
}
