/**
 * What each wire transport can do, as data. The session chart, UpstreamSession, RequestClient and the
 * controller ask these flags instead of comparing transport names; src/upstream/transport-registry.ts pairs each
 * entry with the constructor of its channel. This module imports nothing, so the chart and the daemon's
 * status views read it without loading any channel code.
 */

/** The wire a connection uses: a process, Streamable HTTP, or the deprecated HTTP+SSE transport. */
export type WireTransport = 'stdio' | 'streamable-http' | 'sse';

/** A wire a server is reached on by its `url` (every wire but the process). */
export type UrlWire = Exclude<WireTransport, 'stdio'>;

/** The wire a `url` with no declared transport starts on (its `fallback` is tried when it is not that). */
export const DEFAULT_URL_WIRE: UrlWire = 'streamable-http';

export interface TransportCapabilities {
  /** How messages and reports name the wire. */
  label: string;
  /** What status views call it (`transport` in /v1/status and the UI): a process, or an HTTP endpoint. */
  kind: 'stdio' | 'http';
  /**
   * The upstream is a child process mcpx spawns: a start that fails is MCPX_SPAWN_FAILED (not an
   * unavailable server), and what ends the wire is the process closing.
   */
  processBound: boolean;
  /**
   * A server/discover left unanswered past upstream.probeTimeout gets an initialize alongside: a process
   * may ignore a method it does not know, while an HTTP server answers every POST with a status.
   */
  probeRace: boolean;
  /**
   * A server-to-client request arrives with the context of the call whose request carried it (an HTTP
   * POST's response stream); otherwise nothing says which call it is for.
   */
  attributesServerRequests: boolean;
  /** One message can carry headers of its own (SEP-2243 `Mcp-Param-*` on modern POSTs). */
  perMessageHeaders: boolean;
  /** The server keeps a legacy session of its own that it may expire (HTTP 404 on its session id), and mcpx opens it again. */
  serverSessions: boolean;
  /** Only the legacy era: initialize, never server/discover. An era record remembers such a wire. */
  legacyOnly: boolean;
  /**
   * The wire to try when initialize gets a bare HTTP 400/404/405 (not an endpoint of this transport),
   * and the one an era record may name to start on instead; null when there is none.
   */
  fallback: WireTransport | null;
  /** The URL schemes a config file's `url` may use to reach it (none: it is spawned from a `command`). */
  urlSchemes: readonly string[];
}

export const TRANSPORT_CAPABILITIES: Readonly<Record<WireTransport, Readonly<TransportCapabilities>>> = {
  stdio: {
    label: 'stdio',
    kind: 'stdio',
    processBound: true,
    probeRace: true,
    attributesServerRequests: false,
    perMessageHeaders: false,
    serverSessions: false,
    legacyOnly: false,
    fallback: null,
    urlSchemes: [],
  },
  'streamable-http': {
    label: 'Streamable HTTP',
    kind: 'http',
    processBound: false,
    probeRace: false,
    attributesServerRequests: true,
    perMessageHeaders: true,
    serverSessions: true,
    legacyOnly: false,
    fallback: 'sse',
    urlSchemes: ['http:', 'https:'],
  },
  sse: {
    label: 'HTTP+SSE',
    kind: 'http',
    processBound: false,
    probeRace: false,
    // Every server message arrives on the one GET stream, tied to no POST.
    attributesServerRequests: false,
    perMessageHeaders: false,
    serverSessions: false,
    legacyOnly: true,
    fallback: null,
    urlSchemes: ['http:', 'https:'],
  },
};

export function capabilitiesOf(wire: WireTransport): Readonly<TransportCapabilities> {
  return TRANSPORT_CAPABILITIES[wire];
}

/** Every wire, in the table's order. */
export const WIRES = Object.keys(TRANSPORT_CAPABILITIES) as WireTransport[];

/** The wires reached at a URL (what an era record may name as the wire it settled on). */
export const URL_WIRES = WIRES.filter((w) => !capabilitiesOf(w).processBound) as UrlWire[];
