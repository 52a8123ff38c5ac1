/**
 * The tool catalogue as the daemon serves it: what each configured server offers (tools, prompts,
 * resources, resource templates), per lane, answered without starting servers.
 *
 * - A listing comes from the persisted catalogue (`<state>/tool-catalog.json`, keyed by the process
 *   definition and lane, so a renamed server keeps its listing and an edited command does not) when
 *   there is one; it is `live` once a running instance confirmed it in this daemon's lifetime, and
 *   `catalog` (may be stale) until then.
 * - A server with no listing yet is started and listed on the spot.
 * - Whenever an instance becomes ready (global scope: the same instance callers use, so nothing extra
 *   starts), or an upstream says `list_changed`, the server is listed again in the background; a
 *   listing that differs is written and announced (`catalog.changed`), so fronts tell their callers.
 * - A config reload that adds or removes servers is announced the same way.
 */
import { EventEmitter } from 'node:events';
import { McpxError } from '../errors.js';
import { isObject } from '../is-object.js';
import { silentLogger, type Logger } from '../log.js';
import type { Lane } from '../machines/preference.js';
import type { ServerPool } from '../pool/server-pool.js';
import { LIST_METHOD_OF, type Call, type Caller, type ChangedList, type ListKind, type ProgressListener } from '../call/call.js';
import type { ServerDefinition } from '../upstream/definition.js';
import { catalogKey, sameListing, type CatalogRecord, type CatalogStore } from './catalog-store.js';
import { describeLeftOut, type LeftOut } from './left-out.js';
import type { ToolDigests } from './tool-digests.js';
import { ToolGate, type ChangedTool } from './tool-gate.js';
import type { ToolPolicy } from './tool-policy.js';
import type { validListing } from './valid-listing.js';

/** The checks (and zod) load with the first listing served: a daemon that serves none never loads them. */
let checks: Promise<typeof validListing> | undefined;
const loadChecks = (): Promise<typeof validListing> => (checks ??= import('./valid-listing.js').then((m) => m.validListing));
import type { CatalogChange, CatalogView, ServerCatalog } from './view.js';

export interface CatalogDeps {
  store: CatalogStore | null;
  /** Configured, enabled servers in config order. */
  servers(): Array<{ name: string; definition: ServerDefinition }>;
  /** The pool of a server (throws MCPX_UNKNOWN_SERVER); runs `fn` counted as in flight. */
  withPool<T>(server: string, fn: (pool: ServerPool) => Promise<T>): Promise<T>;
  /** The lane a caller gets on a server (throws MCPX_UNKNOWN_SERVER). */
  laneFor(server: string, caller: Caller): Lane;
  /** The server's own say over its tools (`mcpx.tools`, `mcpx.pin`, `pinTools`); none: every tool served, none pinned or held. */
  policy?(server: string): ToolPolicy;
  /** The tool definitions as first seen (./tool-digests.ts); none: nothing is pinned or held. */
  digests?: ToolDigests | null;
  logger?: Logger;
}

export type { ChangedTool };

const LANES: readonly Lane[] = ['own', 'legacy'];

const LISTS = ['tools', 'prompts', 'resources', 'resourceTemplates'] as const;

/** Refreshes of one server and lane within REFRESH_WINDOW_MS past which it is slowed down. */
export const REFRESH_BURST = 5;
export const REFRESH_WINDOW_MS = 10_000;
export const REFRESH_MIN_GAP_MS = 1_000;
export const REFRESH_MAX_GAP_MS = 60_000;

interface RefreshState {
  running: boolean;
  /** Asked again while one ran or waited: one follow-up. */
  again: boolean;
  timer: NodeJS.Timeout | undefined;
  /** When refreshes started, within the window. */
  starts: number[];
  /** The slow-down in force (0: none). */
  gapMs: number;
  /** Notices folded into follow-ups since the last refresh that had none. */
  folded: number;
}
type ListName = (typeof LISTS)[number];

/** The caller of a background listing on one lane (a legacy revision selects the legacy lane). */
function laneCaller(lane: Lane): Caller {
  return lane === 'legacy' ? { callerProtocol: '2025-11-25' } : {};
}

export class Catalog {
  private readonly deps: CatalogDeps;
  private readonly log: Logger;
  private readonly events = new EventEmitter();
  /** Keys confirmed by a live listing in this daemon's lifetime. */
  private readonly confirmed = new Set<string>();
  /** Listings held in memory (the store's view, plus listings made while the store is off). */
  private readonly memory = new Map<string, CatalogRecord>();
  private readonly listing = new Map<string, Promise<CatalogRecord>>();
  /** What each server's listing, as last served, left out (for the live page). */
  private readonly notServed = new Map<string, LeftOut[]>();
  /** Background refreshes per server and lane (see refresh). */
  private readonly refreshes = new Map<string, RefreshState>();
  /** Which tools are served, held and refused. */
  private readonly gate: ToolGate;
  private revised = 0;

  constructor(deps: CatalogDeps) {
    this.deps = deps;
    this.log = (deps.logger ?? silentLogger).child({ component: 'catalog' });
    this.events.setMaxListeners(0);
    this.gate = new ToolGate({
      ...(deps.policy ? { policy: deps.policy } : {}),
      digests: deps.digests ?? null,
      log: this.log,
      changed: (c) => this.events.emit('tool', c),
    });
  }

  /** Tools whose definition changed since it was first seen, as each live listing finds them. */
  onToolChanged(listener: (change: ChangedTool) => void): () => void {
    this.events.on('tool', listener);
    return () => this.events.off('tool', listener);
  }

  onChange(listener: (change: CatalogChange) => void): () => void {
    this.events.on('change', listener);
    return () => this.events.off('change', listener);
  }

  /** What the server's listing, as last served, left out (none known: empty). */
  leftOut(server: string): LeftOut[] {
    return this.notServed.get(server) ?? [];
  }

  /** Tells fronts that the set of servers changed (of one config, when named). */
  serversChanged(config?: string): void {
    this.emit({ ...(config === undefined ? {} : { config }), lists: ['tools', 'prompts', 'resources'] });
  }

  /** Tells fronts that the tools served changed without a new listing (a filter, a pin, pinTools, an accepted tool). */
  toolsChanged(server?: string): void {
    this.emit({ ...(server === undefined ? {} : { server }), lists: ['tools'] });
  }

  /**
   * Counts every listing recorded that is new or differs, and every change of the set of servers: what
   * is built from the known catalogue (the tool search index) is built again when it moves. A server's
   * first listing is counted although it is not announced (callers that listed got it already).
   */
  get revision(): number {
    return this.revised;
  }

  /**
   * Every server's offer for this caller's lane; servers with no listing yet are started and listed.
   * `only`: start and list only these (the others answer from what is known, or empty); `fresh`:
   * list them live even when a listing is known. `servers`: these instances, in this order, each row
   * under the name given (a config's servers); default every instance under its own name.
   */
  async view(
    caller: Caller = {},
    opts: { only?: readonly string[]; fresh?: boolean; onProgress?: ProgressListener; servers?: ReadonlyArray<{ name: string; instance: string }> } = {},
  ): Promise<CatalogView> {
    const all = this.deps.servers();
    const byInstance = new Map(all.map((s) => [s.name, s]));
    const servers = (opts.servers ?? all.map((s) => ({ name: s.name, instance: s.name })))
      .filter((x) => byInstance.has(x.instance))
      .map((x) => ({ name: x.name, instance: x.instance, definition: byInstance.get(x.instance)!.definition }));
    const wanted = (name: string) => opts.only === undefined || opts.only.includes(name);
    // Servers listed live now (no listing known, or fresh asked): a caller that asked for progress hears of each.
    const starting = servers.filter((s) => wanted(s.name) && (opts.fresh === true || !this.knownFor(s.instance, s.definition, caller)));
    let done = 0;
    const report = opts.onProgress && starting.length > 0 ? opts.onProgress : undefined;
    report?.({ progress: 0, total: starting.length, message: `starting ${starting.map((s) => s.name).join(', ')}` });
    const rows = await Promise.all(
      servers.map(async (s) => {
        const row = { ...(await this.row(s.instance, s.definition, caller, wanted(s.name), opts.fresh === true)), server: s.name };
        if (report && starting.includes(s))
          report({ progress: ++done, total: starting.length, message: `${s.name}: ${row.error ? row.error.message : 'listed'}` });
        return row;
      }),
    );
    return { servers: rows };
  }

  /** Whether a listing is known for the lane this caller would get (without starting anything). */
  private knownFor(server: string, definition: ServerDefinition, caller: Caller): boolean {
    try {
      return this.known(catalogKey(definition, this.deps.laneFor(server, caller))) !== undefined;
    } catch {
      return true; // an unknown server: nothing will start for it
    }
  }

  private async row(server: string, definition: ServerDefinition, caller: Caller, wanted: boolean, fresh: boolean): Promise<ServerCatalog> {
    let lane: Lane = 'own';
    const empty = { tools: [], prompts: [], resources: [], resourceTemplates: [] };
    try {
      return await this.deps.withPool(server, async (pool) => {
        lane = pool.laneFor(caller);
        const key = catalogKey(definition, lane);
        let record = fresh && wanted ? undefined : this.known(key);
        let source: ServerCatalog['source'] = this.confirmed.has(key) ? 'live' : 'catalog';
        if (!record) {
          if (!wanted) return { server, lane, source: 'none', ...empty };
          record = await this.list(server, key, pool, caller);
          source = 'live';
        }
        const lists = served(await loadChecks(), record);
        this.notServed.set(server, lists.leftOut ?? []);
        const { tools, pinned } = this.gate.served(server, key, lists.tools);
        const extensions = record.capabilities?.['extensions'];
        const title = record.serverInfo?.['title'];
        return {
          server,
          lane,
          source,
          at: record.at,
          ...lists,
          tools,
          ...(pinned.length > 0 ? { pinned } : {}),
          ...(isObject(extensions) ? { extensions } : {}),
          ...(record.instructions === undefined ? {} : { instructions: record.instructions }),
          ...(typeof title === 'string' ? { title } : {}),
        };
      });
    } catch (err) {
      const e: { code: string; message: string; data?: Record<string, unknown> } =
        err instanceof McpxError ? err.toJSON() : { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
      return { server, lane, source: 'none', ...empty, error: { code: e.code, message: e.message, ...(e.data ? { data: e.data } : {}) } };
    }
  }

  /** How many tools the known listing of a server's own lane holds (without starting anything); null: none known. */
  toolCount(server: string): number | null {
    const s = this.deps.servers().find((x) => x.name === server);
    if (!s) return null;
    const record = this.known(catalogKey(s.definition, 'own'));
    return record ? (record.tools?.length ?? 0) : null;
  }

  private known(key: string): CatalogRecord | undefined {
    return this.memory.get(key) ?? this.deps.store?.get(key);
  }

  /** Lists a server on the pool (one listing per key at a time), records it, announces a difference. */
  private list(server: string, key: string, pool: ServerPool, caller: Caller): Promise<CatalogRecord> {
    let p = this.listing.get(key);
    if (!p) {
      p = this.listNow(server, key, pool, caller).finally(() => this.listing.delete(key));
      this.listing.set(key, p);
    }
    return p;
  }

  private async listNow(server: string, key: string, pool: ServerPool, caller: Caller): Promise<CatalogRecord> {
    // The caller's lane and scope, and nothing of how its own request runs: a listing others may wait
    // on is not the caller's to cancel.
    const listing = async (kind: ListKind): Promise<Array<Record<string, unknown>>> => {
      const call: Call = {
        ...(caller.callerProtocol === undefined ? {} : { callerProtocol: caller.callerProtocol }),
        ...(caller.session === undefined ? {} : { session: caller.session }),
        server,
        method: LIST_METHOD_OF[kind],
        params: {},
      };
      const result = await pool.run(call);
      return (result[kind] as Array<Record<string, unknown>> | undefined) ?? [];
    };
    const [tools, prompts, resources, resourceTemplates] = await Promise.all(LISTS.map(listing));
    const record: CatalogRecord = {
      at: new Date().toISOString(),
      tools: tools!,
      prompts: prompts!,
      resources: resources!,
      resourceTemplates: resourceTemplates!,
    };
    // The extensions it offers (SEP-2133), which mcpx declares to callers that declare them too.
    const info = pool.upstreamInfo(pool.laneFor(caller));
    const extensions = (info?.capabilities as { extensions?: unknown } | undefined)?.extensions;
    if (isObject(extensions) && Object.keys(extensions).length > 0) record.capabilities = { extensions };
    // What the server says of itself: the fronts summarise every server's domain from it (their instructions, search_tools).
    if (typeof info?.instructions === 'string' && info.instructions.trim() !== '') record.instructions = info.instructions;
    const title = isObject(info?.serverInfo) ? info.serverInfo['title'] : undefined;
    if (typeof title === 'string' && title.trim() !== '') record.serverInfo = { title };
    const valid = await loadChecks();
    const before = this.known(key);
    // Named once per listing that differs (a refresh that finds the same says nothing again).
    if (!before || !sameListing(before, record)) {
      for (const l of served(valid, record).leftOut ?? [])
        this.log.warn({ server, list: l.list, name: l.name, reason: l.reason }, `${server}: ${describeLeftOut(l)}`);
    }
    // A first listing is not announced (its callers have it) but is searchable from now on.
    if (!before || before.instructions !== record.instructions) this.revised += 1;
    this.memory.set(key, record);
    this.confirmed.add(key);
    this.gate.observe(server, key, record.tools);
    if (this.deps.store) {
      this.deps.store.set(key, record).catch((err: unknown) => this.log.warn({ err, server }, 'could not write the tool catalogue'));
    }
    if (before && !sameListing(before, record)) {
      const lists = changedLists(before, record);
      this.log.info({ server, lists }, "the server's listing changed");
      this.emit({ server, lists });
    }
    return record;
  }

  // ---- which tools are served, held and refused (./tool-gate.ts) ----

  /**
   * Why a call to this tool is refused, or undefined: the server's filter leaves it out
   * (MCPX_TOOL_DENIED), or it changed since first seen and is held (MCPX_TOOL_HELD). Reads the config and
   * the digests only: nothing is started.
   */
  refusal(server: string, tool: string, lane: Lane): McpxError | undefined {
    const entry = this.deps.servers().find((s) => s.name === server);
    return this.gate.refusal(server, tool, entry ? catalogKey(entry.definition, lane) : undefined);
  }

  /** The known tools of a server that are not served (filtered or held), by their own names: a caller that names one is told why. */
  withheld(server: string): string[] {
    const entry = this.deps.servers().find((s) => s.name === server);
    if (!entry) return [];
    const out = new Set<string>();
    for (const lane of LANES) {
      const key = catalogKey(entry.definition, lane);
      const tools = this.known(key)?.tools ?? [];
      const served = new Set(this.gate.served(server, key, tools).tools.map((t) => t['name']));
      for (const t of tools) if (typeof t['name'] === 'string' && !served.has(t['name'])) out.add(t['name']);
    }
    return [...out];
  }

  /** Every tool of a configured server whose known definition differs from the one first seen (`mcpx tools --changed`). */
  changedTools(): ChangedTool[] {
    return this.deps.servers().flatMap((s) =>
      LANES.flatMap((lane) => {
        const key = catalogKey(s.definition, lane);
        return this.gate.changed(s.name, key, new Set((this.known(key)?.tools ?? []).map((t) => t['name'])));
      }),
    );
  }

  /**
   * Approves the definition a server lists now for its tool (every lane that has a change), and tells
   * fronts (a held tool comes back). `name` is the tool's own name with `server`, or the exposed name alone.
   * @throws McpxError MCPX_NOT_FOUND when no such tool has a change to accept; MCPX_UNKNOWN_SERVER;
   *   MCPX_BAD_REQUEST for an exposed name several servers' changed tools answer to.
   */
  accept(server: string | undefined, name: string): { server: string; tool: string; lanes: Lane[] } {
    const candidates = this.changedTools().filter((c) =>
      server === undefined ? c.exposed === name || c.tool === name : c.server === server && c.tool === name,
    );
    const pairs = [...new Map(candidates.map((c) => [`${c.server}\0${c.tool}`, c])).values()];
    if (pairs.length === 0) {
      if (server !== undefined && !this.deps.servers().some((s) => s.name === server))
        throw new McpxError('MCPX_UNKNOWN_SERVER', `no configured server named ${JSON.stringify(server)}`, { data: { server } });
      const what = server === undefined ? JSON.stringify(name) : `${JSON.stringify(name)} of server ${JSON.stringify(server)}`;
      throw new McpxError('MCPX_NOT_FOUND', `tool ${what} has no changed definition to accept (mcpx tools --changed lists those that have)`, {
        data: { ...(server === undefined ? {} : { server }), tool: name },
      });
    }
    if (pairs.length > 1)
      throw new McpxError(
        'MCPX_BAD_REQUEST',
        `${JSON.stringify(name)} names a changed tool of several servers; name one: ${pairs.map((p) => `mcpx tools --accept ${p.server} ${p.tool}`).join(', ')}`,
        { data: { candidates: pairs.map((p) => ({ server: p.server, tool: p.tool })) } },
      );
    const { server: s, tool } = pairs[0]!;
    const entry = this.deps.servers().find((x) => x.name === s)!;
    const lanes = LANES.filter((lane) => this.gate.accept(catalogKey(entry.definition, lane), tool));
    this.log.info({ server: s, tool, lanes }, `${s}: the changed definition of tool ${JSON.stringify(tool)} was accepted`);
    this.toolsChanged(s);
    return { server: s, tool, lanes };
  }

  /**
   * Lists a server again in the background (an instance became ready, or the upstream said
   * list_changed). Only for global scope, where this reuses the instance callers share.
   *
   * Coalesced per server and lane: one refresh in flight, and whatever asks meanwhile is folded into one
   * follow-up. An upstream that keeps saying list_changed (more than REFRESH_BURST refreshes within
   * REFRESH_WINDOW_MS) is slowed down — refreshes at most one per `gapMs`, doubling up to
   * REFRESH_MAX_GAP_MS — and the daemon log says so; the gap is dropped once it has been quiet for a window.
   */
  refresh(server: string, lane: Lane): void {
    const id = `${server}\u0000${lane}`;
    let st = this.refreshes.get(id);
    if (!st) {
      st = { running: false, again: false, timer: undefined, starts: [], gapMs: 0, folded: 0 };
      this.refreshes.set(id, st);
    }
    if (st.running || st.timer !== undefined) {
      st.again = true;
      st.folded++;
      return;
    }
    const now = Date.now();
    st.starts = st.starts.filter((t) => now - t < REFRESH_WINDOW_MS);
    if (st.starts.length === 0 && st.gapMs > 0) {
      this.log.info({ server, lane }, 'the server is quiet again; catalogue refreshes are no longer slowed');
      st.gapMs = 0;
    }
    if (st.starts.length >= REFRESH_BURST) {
      const gap = Math.min(REFRESH_MAX_GAP_MS, Math.max(REFRESH_MIN_GAP_MS, st.gapMs * 2));
      if (gap !== st.gapMs) {
        this.log.warn(
          { server, lane, refreshes: st.starts.length, folded: st.folded, windowMs: REFRESH_WINDOW_MS, gapMs: gap },
          `${server} keeps saying its lists changed (${st.starts.length} refreshes and ${st.folded} more notices within ${REFRESH_WINDOW_MS} ms); its catalogue is now refreshed at most once per ${gap} ms`,
        );
        st.gapMs = gap;
      }
    }
    const last = st.starts.at(-1);
    const wait = st.gapMs > 0 && last !== undefined ? Math.max(0, last + st.gapMs - now) : 0;
    const state = st;
    const run = (): void => {
      state.timer = undefined;
      state.running = true;
      state.again = false;
      state.starts.push(Date.now());
      void this.refreshNow(server, lane).finally(() => {
        state.running = false;
        if (state.again) this.refresh(server, lane);
        else state.folded = 0;
      });
    };
    if (wait === 0) run();
    else {
      st.timer = setTimeout(run, wait);
      st.timer.unref();
    }
  }

  private refreshNow(server: string, lane: Lane): Promise<void> {
    const entry = this.deps.servers().find((s) => s.name === server);
    if (!entry) return Promise.resolve();
    return this.deps
      .withPool(server, async (pool) => {
        if (pool.config.limits.scope !== 'global') return;
        const caller = laneCaller(lane);
        await this.list(server, catalogKey(entry.definition, pool.laneFor(caller)), pool, caller);
      })
      .catch((err: unknown) => this.log.debug({ err, server }, 'could not refresh the catalogue'));
  }

  private emit(change: CatalogChange): void {
    this.revised += 1; // whatever is announced changes what is built from the catalogue
    this.events.emit('change', change);
  }
}

/** The lists as served: each item valid for every client SDK (src/catalog/valid-listing.ts), and what was left out. */
function served(valid: typeof validListing, r: CatalogRecord): Pick<ServerCatalog, ListName | 'leftOut'> {
  const { leftOut, ...lists } = valid({
    tools: r.tools,
    prompts: r.prompts ?? [],
    resources: r.resources ?? [],
    resourceTemplates: r.resourceTemplates ?? [],
  });
  return { ...lists, ...(leftOut.length > 0 ? { leftOut } : {}) };
}

function changedLists(a: CatalogRecord, b: CatalogRecord): ChangedList[] {
  const out: ChangedList[] = [];
  const same = (x: unknown, y: unknown) => JSON.stringify(x ?? []) === JSON.stringify(y ?? []);
  if (!same(a.tools, b.tools)) out.push('tools');
  if (!same(a.prompts, b.prompts)) out.push('prompts');
  if (!same(a.resources, b.resources) || !same(a.resourceTemplates, b.resourceTemplates)) out.push('resources');
  return out.length > 0 ? out : ['tools'];
}
