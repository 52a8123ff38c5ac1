/**
 * The sessions the daemon's pools run: an UpstreamSession that tells a legacy upstream, at `initialize`,
 * that mcpx can relay questions (elicitation, sampling, roots) — a legacy server asks only what its client
 * declared for the whole session — while every modern request still declares exactly its own caller's
 * capabilities (`{}` unless a caller that can answer, a `/v1/ask`, says otherwise).
 *
 * Why both: in the legacy era capabilities belong to the session, which many calls share, so mcpx declares
 * what it can relay and refuses, per call, a question whose caller cannot answer it (src/asks/ask-store.ts).
 * In the modern era capabilities belong to the request (a server must not infer them from another one),
 * so a call that cannot answer must not claim it can.
 */
import type { ClientCapabilities } from '../transports/mcp-messages.js';
import { UpstreamSession, type CallOptions, type ListKind, type Tool, type UpstreamSessionOptions } from '../upstream/session.js';

/** What mcpx can relay to a caller that declares it: declared at `initialize` (and in the discover probe). */
export const RELAYABLE_CAPABILITIES: Readonly<ClientCapabilities> = Object.freeze({
  elicitation: { form: {}, url: {} },
  sampling: {},
  // mcpx announces a change of the roots it answers with (mcpx.roots in the config).
  roots: { listChanged: true },
});

/** A call that names no capabilities declares none (never the session's). */
const ownCapabilities = (opts: CallOptions): CallOptions => (opts.capabilities ? opts : { ...opts, capabilities: {} });

export class AskingSession extends UpstreamSession {
  constructor(opts: UpstreamSessionOptions) {
    super({ ...opts, clientCapabilities: opts.clientCapabilities ?? { ...RELAYABLE_CAPABILITIES } });
  }

  // The public ways a request leaves the session (listTools/listAll do not go through request()).
  override request(method: string, params?: Record<string, unknown>, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return super.request(method, params, ownCapabilities(opts));
  }

  override listTools(opts: CallOptions = {}): Promise<Tool[]> {
    return super.listTools(ownCapabilities(opts));
  }

  override listAll(kind: ListKind, opts: CallOptions = {}): Promise<Array<Record<string, unknown>>> {
    return super.listAll(kind, ownCapabilities(opts));
  }

  override callTool(name: string, args: Record<string, unknown> = {}, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return super.callTool(name, args, ownCapabilities(opts));
  }

  override forward(method: string, params: Record<string, unknown> | undefined, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return super.forward(method, params, ownCapabilities(opts));
  }
}
