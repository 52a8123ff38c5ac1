/**
 * The front's backend (every front is in the daemon: `/mcp` and each `mcpx serve` stream): the
 * controller itself, no socket in between.
 * Results pass the same secret scrubber every /v1 response passes.
 */
import type { CallContext } from '../pool/types.js';
import type { Controller } from '../core/controller.js';
import {
  RelayError,
  type AskBackend,
  type AskView,
  type CatalogChange,
  type CatalogView,
  type FrontBackend,
  type RelayContext,
  type RelayedMethod,
} from './backend.js';

function callContext(ctx: RelayContext): CallContext {
  return {
    ...(ctx.callerProtocol ? { callerProtocol: ctx.callerProtocol } : {}),
    ...(ctx.session ? { session: ctx.session } : {}),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
    ...(ctx.timeoutMs === undefined ? {} : { timeoutMs: ctx.timeoutMs }),
    ...(ctx.onProgress ? { onProgress: ctx.onProgress } : {}),
  };
}

export class ControllerBackend implements FrontBackend {
  constructor(private readonly controller: Controller) {}

  private scrubbed<T>(value: T): T {
    if (!this.controller.scrubber.active) return value; // no secret known: nothing to look for, no copy to make
    const text = JSON.stringify(value);
    const clean = this.controller.scrubber.scrub(text);
    return clean === text ? value : (JSON.parse(clean) as T);
  }

  async catalog(ctx: RelayContext, opts: { knownOnly?: boolean } = {}): Promise<CatalogView> {
    return this.scrubbed(
      await this.controller.catalog.view(callContext(ctx), {
        ...(ctx.onProgress ? { onProgress: ctx.onProgress } : {}),
        ...(opts.knownOnly ? { only: [] } : {}),
      }),
    );
  }

  async request(server: string, method: RelayedMethod, params: Record<string, unknown>, ctx: RelayContext): Promise<Record<string, unknown>> {
    let outcome;
    try {
      outcome = await this.controller.request(server, method, params, callContext(ctx));
    } catch (err) {
      const e = err as { code?: string; message?: string; data?: Record<string, unknown> };
      throw new RelayError(e.code ?? 'MCPX_INTERNAL', this.controller.scrubber.scrub(e.message ?? String(err)), e.data);
    }
    if (outcome.ok) return this.scrubbed(outcome.result);
    const error = this.scrubbed(outcome.error);
    throw new RelayError(error.code, error.message, error.data);
  }

  /** The daemon's own ask store: the call is held between rounds, whichever front instance serves the next one. */
  readonly asks: AskBackend = {
    ask: async (server, tool, args, ctx) => {
      let v;
      try {
        this.controller.pool(server);
        v = this.controller.asks.start({
          // The per-caller bound: the front's caller (its session; the stateless ones share the entry's).
          ...(ctx.session ? { caller: `mcp:${ctx.session}` } : {}),
          server,
          tool,
          args,
          ...(ctx.method === undefined ? {} : { method: ctx.method }),
          ...(ctx.params === undefined ? {} : { params: ctx.params }),
          ...(ctx.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: ctx.questionTimeoutMs }),
          capabilities: ctx.capabilities,
          authorizeInPlace: true,
          ...(ctx.callerProtocol ? { callerProtocol: ctx.callerProtocol } : {}),
          ...(ctx.session ? { session: ctx.session } : {}),
          ...(ctx.timeoutMs === undefined ? {} : { timeoutMs: ctx.timeoutMs }),
        });
      } catch (err) {
        // The caller is told why (MCPX_TOO_MANY_ASKS, MCPX_UNKNOWN_SERVER), not MCPX_INTERNAL.
        const e = err as { code?: string; message?: string; data?: Record<string, unknown> };
        throw new RelayError(e.code ?? 'MCPX_INTERNAL', e.message ?? String(err), e.data);
      }
      return { id: v.id };
    },
    askPoll: async (id, waitMs, ctx) => this.scrubbed((await this.controller.asks.wait(id, waitMs, ctx.signal, ctx.onProgress)) as unknown as AskView),
    askAnswer: async (id, answers) => {
      await this.controller.asks.answer(id, answers);
    },
    askAbandon: async (id) => {
      this.controller.asks.abandon(id);
    },
  };

  onChange(listener: (change: CatalogChange) => void): () => void {
    return this.controller.catalog.onChange(listener);
  }
}
