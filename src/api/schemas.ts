/**
 * The /v1 API's shapes, as zod schemas: the route declarations (src/api/v1-routes.ts) name which of
 * them validate each request's parts (a bad one → 400 naming the field) and describe each answer, and
 * `GET /v1/openapi.json` is generated from the very same schemas (`z.toJSONSchema`), so the document
 * cannot drift from what the daemon checks. Loaded on the first request that validates something.
 */
import * as z from 'zod';
import { CANONICAL_PREFERENCES } from '../machines/preference.js';
import { RELAYED_METHODS } from '../call/call.js';
import { EVENT_TYPES } from '../core/events.js';
import { MAX_DURATION_MS } from '../config/duration.js';
import { boundedDepth, MAX_JSON_DEPTH } from '../front/json-depth.js';
import { CALLER_PROTOCOL_HEADER, SESSION_HEADER } from '../front/headers.js';
import type {
  CallOutcome,
  ConfigStatusView,
  ConfigView,
  InstanceView,
  LaneView,
  ProtocolRow,
  RejectedEdit,
  ReloadOutcome,
  ServerStatusView,
  ServerView,
  SettingChangeView,
  SettingEntryView,
  ToolSearchView,
  ToolsView,
} from '../core/views.js';
import type { StatechartView } from '../ui/statechart-view.js';

// ---------------------------------------------------------------------------------------------
// Requests

/** An MCP revision as callers send it: `2025-11-25`, `2026-07-28`. */
export const revisionSchema = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'must be an MCP protocol revision such as 2025-11-25 or 2026-07-28' });

export { CALLER_PROTOCOL_HEADER, SESSION_HEADER };

export const callHeadersSchema = z.object({
  [CALLER_PROTOCOL_HEADER]: revisionSchema
    .optional()
    .meta({ description: "The caller's MCP revision; a revision before 2026-07-28 is served over the legacy lane under `follow`. Absent: modern." }),
  [SESSION_HEADER]: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "The caller's session id (the scope key under `scope: session`); the body's `session` wins." }),
});

const nonEmpty = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .trim()
    .min(1, { error: `${what} must not be empty` });

export const callBodySchema = z
  .object({
    server: nonEmpty('server').meta({ description: 'A configured server name.' }),
    tool: nonEmpty('tool').meta({ description: 'The tool name, as the server lists it.' }),
    args: boundedDepth(z.record(z.string(), z.unknown(), { error: 'args must be an object of tool arguments' }), 'args')
      .default({})
      .meta({ description: `The tool arguments (default {}); at most ${MAX_JSON_DEPTH} levels deep.` }),
    session: nonEmpty('session').optional().meta({ description: "The caller's session id: the scope key of a server pooled per session." }),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(MAX_DURATION_MS)
      .optional()
      .meta({ description: 'Give up after this many milliseconds (waiting for an instance included); at most 2^31−1, what a timer can wait.' }),
  })
  .strict();

export const requestBodySchema = z
  .object({
    server: nonEmpty('server').meta({ description: 'A configured server name.' }),
    method: z.enum(RELAYED_METHODS).meta({ description: 'The MCP request to relay.' }),
    params: boundedDepth(z.record(z.string(), z.unknown(), { error: 'params must be an object' }), 'params')
      .default({})
      .meta({
        description: `The request params, as the server names things (no \`_meta\` envelope: mcpx adds what the server's era needs); at most ${MAX_JSON_DEPTH} levels deep.`,
      }),
    session: nonEmpty('session').optional().meta({ description: "The caller's session id: the scope key of a server pooled per session." }),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(2_147_483_647)
      .optional()
      .meta({ description: 'Give up after this many milliseconds (waiting for an instance included).' }),
  })
  .strict();

/** The MCP client capabilities a caller of /v1/ask can answer (extra keys pass: they are declared upstream as given). */
export const askCapabilitiesSchema = z.looseObject(
  {
    elicitation: z
      .looseObject({ form: z.looseObject({}).optional(), url: z.looseObject({}).optional() }, { error: 'capabilities.elicitation must be an object' })
      .optional()
      .meta({ description: 'Elicitation: `form` and/or `url` mode; `{}` means form mode.' }),
    sampling: z.looseObject({}, { error: 'capabilities.sampling must be an object' }).optional(),
    roots: z.looseObject({}, { error: 'capabilities.roots must be an object' }).optional(),
  },
  { error: 'capabilities must be an object of MCP client capabilities' },
);

export const askBodySchema = callBodySchema
  .extend({
    method: z.enum(['tools/call', 'prompts/get', 'resources/read']).optional().meta({
      description:
        "The request (default tools/call). For prompts/get and resources/read, `params` is the request's params and `tool` names the prompt or resource.",
    }),
    params: z.record(z.string(), z.unknown(), { error: 'params must be an object' }).optional(),
    questionTimeoutMs: z.number().int().positive().max(2_147_483_647).optional().meta({
      description: "How long a question may wait for its answer, when shorter than the server's request timeout (a front passes its requestState lifetime).",
    }),
    // Extra keys pass as given and are sent upstream: the depth rule of args holds them too.
    capabilities: boundedDepth(askCapabilitiesSchema, 'capabilities').optional().meta({
      description:
        "The MCP client capabilities the caller can answer. A modern upstream gets them in each request's `_meta`; a question needing one not declared here is refused at once. Default {elicitation: {form: {}, url: {}}}: forms and URLs are put to the caller, sampling and roots refused (the answer's `refuses` says so).",
    }),
  })
  .strict();

export const askParamsSchema = z.object({ id: z.string().min(1).meta({ description: 'The ask id from POST /v1/ask.' }) });

export const ASK_MAX_WAIT_MS = 60_000;
export const askQuerySchema = z
  .object({
    waitMs: z
      .string()
      .regex(/^\d{1,9}$/, { error: 'waitMs must be a whole number of milliseconds' })
      .transform(Number)
      .pipe(z.number().max(ASK_MAX_WAIT_MS, { error: `waitMs must be at most ${ASK_MAX_WAIT_MS}` }))
      .optional()
      .meta({
        description: `Wait up to this many milliseconds (at most ${ASK_MAX_WAIT_MS}; default 0) for the ask to change, unless it has open questions or finished.`,
      }),
  })
  .strict();

// ---- /v1/auth: OAuth per HTTP server (never a token, a code or a secret) ----

export const authViewSchema = z
  .object({
    server: z.string(),
    state: z.enum(['none', 'needed', 'authorized', 'failed']).meta({
      description: 'none: never asked for authorization; needed: a request was refused (run mcpx login); authorized; failed: see error.',
    }),
    issuer: z.string().optional(),
    scopes: z.array(z.string()).optional(),
    expiresAt: z.string().optional().meta({ description: 'When the access token expires (ISO 8601); the daemon refreshes it before then.' }),
    refreshable: z.boolean().optional(),
    error: z.string().optional(),
    needsScopes: z.array(z.string()).optional().meta({ description: 'Scopes a 403 asked for that the authorization does not hold.' }),
    unsaved: z
      .string()
      .optional()
      .meta({ description: 'The renewed credential in use could not be written to credentials.json (why); a restart now would lose it. Saving is retried.' }),
  })
  .strict();
export const authListSchema = z.object({ servers: z.array(authViewSchema) }).strict();
export const authServerParamsSchema = z.object({ server: z.string().min(1).meta({ description: 'A configured HTTP server.' }) });
export const authLoginBodySchema = z
  .object({
    stepUp: z.boolean().optional().meta({ description: 'Ask for the scopes held plus the ones a 403 challenged (a step-up).' }),
  })
  .strict()
  .optional();
export const authLogoutBodySchema = z
  .object({ forgetClient: z.boolean().optional().meta({ description: "Also forget the client registration made at the server's authorization server." }) })
  .strict()
  .optional();
export const loginViewSchema = z
  .object({
    id: z.string(),
    server: z.string(),
    status: z.enum(['waiting', 'authorized', 'failed']),
    url: z.string().optional().meta({ description: 'While waiting: the authorization URL to open in a browser.' }),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    scopes: z.array(z.string()).optional(),
  })
  .strict();
export const loginParamsSchema = z.object({ id: z.string().min(1).meta({ description: 'The login id from POST /v1/auth/{server}/login.' }) });
export const LOGIN_MAX_WAIT_MS = 60_000;
export const loginQuerySchema = z
  .object({
    waitMs: z
      .string()
      .regex(/^\d{1,9}$/, { error: 'waitMs must be a whole number of milliseconds' })
      .transform(Number)
      .pipe(z.number().max(LOGIN_MAX_WAIT_MS, { error: `waitMs must be at most ${LOGIN_MAX_WAIT_MS}` }))
      .optional()
      .meta({ description: `Wait up to this many milliseconds (at most ${LOGIN_MAX_WAIT_MS}; default 0) for the login to end.` }),
  })
  .strict();
export const logoutSchema = z.object({ server: z.string(), forgotTokens: z.boolean(), forgotClient: z.boolean() }).strict();

export const askAnswersBodySchema = z
  .object({
    answers: z
      .record(z.string().min(1), z.record(z.string(), z.unknown(), { error: 'each answer must be an object: the result MCP defines for its question' }), {
        error: 'answers must be an object of question id → result',
      })
      .meta({
        description:
          'Question id → the result MCP defines for it: ElicitResult {action, content?}, CreateMessageResult {role, content, model}, ListRootsResult {roots}.',
      }),
  })
  .strict();

export const askAbandonBodySchema = z.object({}).strict().optional();

export const toolsQuerySchema = z
  .object({
    server: nonEmpty('server').optional().meta({ description: 'One server; omitted: every configured server (each started as needed).' }),
    session: nonEmpty('session').optional(),
    fresh: z
      .enum(['true', 'false', '1', '0'])
      .optional()
      .meta({ description: 'List live now, instead of from the tool catalogue (which is what answers by default, when it has the server).' }),
  })
  .strict();

export const toolSearchQuerySchema = z
  .object({
    q: nonEmpty('q').meta({ description: 'What the tool should do, in plain words, or a tool name.' }),
    limit: z
      .string()
      .regex(/^\d{1,2}$/, { error: 'limit must be a whole number from 1 to 50' })
      .transform(Number)
      .pipe(z.number().min(1, { error: 'limit must be at least 1' }).max(50, { error: 'limit must be at most 50' }))
      .optional()
      .meta({ description: 'How many tools (default 5, at most 50).' }),
    session: nonEmpty('session').optional(),
  })
  .strict();

export const serverParamsSchema = z.object({ server: z.string().min(1) });
export const settingParamsSchema = z.object({ path: z.string().min(1).meta({ description: 'A setting path such as upstream.protocol.' }) });

export const settingPutSchema = z
  .object({
    value: z
      .unknown()
      .meta({ description: 'The new value: JSON typed, or text as on the command line ("8", "90s", "yes"). upstream.protocol takes every alias.' }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (!Object.hasOwn(body, 'value') || body.value === undefined) ctx.addIssue({ code: 'custom', path: ['value'], message: 'value is required' });
  });

export const statechartQuerySchema = z.object({ format: z.enum(['json', 'html']).default('json') }).strict();

export const eventsQuerySchema = z
  .object({
    server: z.string().min(1).optional().meta({ description: 'Only events about this server.' }),
    type: z
      .string()
      .min(1)
      .optional()
      .meta({ description: `Comma-separated event types (${EVENT_TYPES.join(', ')}); a prefix such as "server." matches a family.` }),
  })
  .strict();

// ---------------------------------------------------------------------------------------------
// Responses (for the document; handlers build them from the controller's views)

export const errorSchema = z.object({
  code: z.string().meta({ description: 'A stable MCPX_* code.' }),
  message: z.string(),
  path: z
    .array(z.union([z.string(), z.number()]))
    .optional()
    .meta({ description: 'The offending field, for a 400.' }),
  in: z.enum(['body', 'query', 'params', 'headers']).optional(),
  allowed: z.array(z.string()).optional().meta({ description: 'The accepted values, when the field is an enum.' }),
  data: z.record(z.string(), z.unknown()).optional(),
});

export const errorBodySchema = z.object({ ok: z.literal(false), error: errorSchema });

export const healthSchema = z.object({ ok: z.literal(true), version: z.string(), pid: z.number().int() });

const laneSchema = z.enum(['own', 'legacy']);
const preferenceOut = z.enum(CANONICAL_PREFERENCES);
const eraOut = z.enum(['legacy', 'modern']).nullable();

export const instanceSchema = z.object({
  id: z.string(),
  lane: laneSchema,
  pid: z.number().int().nullable(),
  scopeKey: z.string(),
  holders: z.number().int(),
  state: z.string().meta({ description: 'The pool slot: starting, ready, idle, stopping.' }),
  sessionState: z.string().nullable().meta({ description: 'The session statechart state, e.g. connecting.discovering or ready.' }),
  era: eraOut,
  negotiated: z.string().nullable(),
  eraSource: z.enum(['probe', 'cache', 'forced']).nullable(),
  startedAt: z.string(),
  uptimeMs: z.number(),
});

/** The last edit of the config file a running daemon refused (the config before it stays in force); gone after a good reload. */
export const rejectedEditSchema = z
  .object({
    file: z.string().nullable(),
    at: z.string().meta({ description: 'When the reload refused it (ISO 8601).' }),
    problems: z.array(z.string()).meta({ description: 'Every problem, one message each (file, key path and what is wrong).' }),
  })
  .meta({ description: 'The last config edit the daemon refused; the config before it stays in force until a reload succeeds.' });

export const configStatusSchema = z.object({
  file: z.string().nullable(),
  home: z.boolean().meta({ description: "The daemon's own config: what callers that name none get; never unloaded." }),
  demo: z.boolean(),
  loadedAt: z.string(),
  lastUsedAt: z.string(),
  callers: z.array(z.object({ id: z.string(), kind: z.enum(['serve', 'mcp', 'cli']), since: z.string() })),
  servers: z.array(
    z.object({
      server: z.string(),
      instance: z.string().meta({ description: 'The instance it runs on (one per distinct definition, shared by every config that defines it alike).' }),
      sharedWith: z.array(z.object({ file: z.string().nullable(), server: z.string() })),
    }),
  ),
  rejected: rejectedEditSchema.optional(),
});

export const statusSchema = z.object({
  ok: z.literal(true),
  version: z.string(),
  pid: z.number().int(),
  startedAt: z.string(),
  uptimeMs: z.number(),
  daemon: z.object({
    stateDir: z.string().nullable(),
    socket: z.string().nullable(),
    tcp: z.object({ host: z.string(), port: z.number().int(), auth: z.enum(['token', 'none']) }).nullable(),
  }),
  config: z.object({ file: z.string().nullable(), via: z.string().nullable(), demo: z.boolean(), rejected: rejectedEditSchema.optional() }),
  configs: z
    .array(configStatusSchema)
    .meta({ description: 'Every config the daemon holds, its own first: callers, servers and the instances they run on (shared between configs or not).' }),
  servers: z.array(
    z.object({
      server: z.string(),
      transport: z.enum(['stdio', 'http']),
      preference: preferenceOut,
      lanes: z.array(
        z.object({ lane: laneSchema, max: z.number().int(), instances: z.number().int(), state: z.string().optional(), reason: z.string().optional() }),
      ),
      instances: z.array(instanceSchema),
      auth: z
        .object({ state: z.enum(['none', 'needed', 'authorized', 'failed']), error: z.string().optional(), unsaved: z.string().optional() })
        .optional()
        .meta({ description: "An HTTP server's authorization (as /v1/auth says), when it can use one." }),
    }),
  ),
});

export const serverViewSchema = z.object({
  server: z.string(),
  transport: z.enum(['stdio', 'http']),
  disabled: z.boolean(),
  preference: preferenceOut,
  preferenceSource: z.enum(['server', 'setting']),
  command: z.string().optional(),
  args: z.array(z.string()).optional(),
  cwd: z.string().optional(),
  env: z.record(z.string(), z.string()).optional().meta({ description: 'Names only: every value is <redacted>.' }),
  url: z.string().optional().meta({ description: 'Credentials and secret-looking query parameters redacted.' }),
  headers: z.record(z.string(), z.string()).optional().meta({ description: 'Names only: every value is <redacted>.' }),
  limits: z.object({ scope: z.string(), max: z.number().int(), sharing: z.string(), idleTimeoutMs: z.number() }),
  probeTimeoutMs: z.number(),
  instances: z.number().int(),
});

export const serversSchema = z.object({ servers: z.array(serverViewSchema), rejected: rejectedEditSchema.optional() });

const leftOutList = z.enum(['tools', 'prompts', 'resources', 'resourceTemplates']);

export const toolsSchema = z.object({
  ok: z.boolean(),
  tools: z.array(
    z
      .object({
        server: z.string(),
        name: z.string(),
        exposed: z.string().meta({ description: 'The name MCP clients see through mcpx serve and /mcp (aggregate mode).' }),
        description: z.string().optional(),
        inputSchema: z.unknown().optional(),
      })
      .passthrough(),
  ),
  lanes: z.record(z.string(), laneSchema),
  errors: z.array(z.object({ server: z.string(), code: z.string(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() })),
  leftOut: z.array(z.object({ server: z.string(), list: leftOutList, name: z.string(), reason: z.string() })).meta({
    description:
      'Items a server listed that no MCP client SDK would take (a tool whose inputSchema type is not "object", a duplicate name…): not served, each with its reason.',
  }),
});

export const toolSearchSchema = z.object({
  ok: z.literal(true),
  tools: z.array(
    z.object({
      server: z.string(),
      name: z.string().meta({ description: "The server's own name." }),
      exposed: z.string().meta({ description: 'The name MCP clients see through mcpx serve and /mcp (aggregate mode).' }),
      description: z.string().meta({ description: "The first sentence of the tool's description." }),
      signature: z.string().meta({ description: 'A short signature: the name and its arguments (`?`: optional).' }),
      score: z.number().meta({ description: 'Higher is better.' }),
    }),
  ),
});

const catalogItems = z.array(z.record(z.string(), z.unknown()));

const changedToolSchema = z.object({
  server: z.string(),
  tool: z.string().meta({ description: "The tool's own name, as the server lists it." }),
  exposed: z.string().meta({ description: 'The name MCP clients see it under once served (aggregate mode).' }),
  lane: laneSchema,
  changed: z.array(z.enum(['description', 'schema', 'annotations'])).meta({ description: 'What differs from the definition first seen (or last accepted).' }),
  since: z.string().meta({ description: 'When the difference was first seen (ISO 8601).' }),
  held: z.boolean().meta({ description: 'Held out of listings and refused on call until accepted (pinTools).' }),
});

export const changedToolsSchema = z.object({ tools: z.array(changedToolSchema) });

export const acceptToolBodySchema = z
  .object({
    server: nonEmpty('server').optional().meta({ description: 'The server; omitted: `name` is the exposed name (`<server>__<tool>`).' }),
    name: nonEmpty('name').meta({ description: "The tool's own name (with `server`), or its exposed name." }),
  })
  .strict();

export const acceptToolSchema = z.object({
  ok: z.literal(true),
  server: z.string(),
  tool: z.string(),
  lanes: z.array(laneSchema).meta({ description: 'The lanes whose changed definition was approved.' }),
});

export const catalogSchema = z.object({
  servers: z.array(
    z.object({
      server: z.string(),
      lane: laneSchema,
      source: z
        .enum(['live', 'catalog', 'none'])
        .meta({ description: "live: listed in this daemon's lifetime; catalog: from the persisted catalogue (may be stale); none: see error." }),
      at: z.string().optional(),
      tools: catalogItems,
      prompts: catalogItems,
      resources: catalogItems,
      resourceTemplates: catalogItems,
      pinned: z.array(z.string()).optional().meta({ description: "The server's own names of its tools pinned by its mcpx.pin: they stay in every listing." }),
      leftOut: z.array(z.object({ list: leftOutList, name: z.string(), reason: z.string() })).optional(),
      error: z.object({ code: z.string(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() }).optional(),
      instructions: z.string().optional().meta({ description: "The server's own instructions (its initialize or discover result)." }),
      title: z.string().optional().meta({ description: "The server's serverInfo.title." }),
    }),
  ),
});

export const requestResultSchema = z.union([
  z.object({
    ok: z.literal(true),
    result: z.record(z.string(), z.unknown()).meta({ description: 'The upstream result, as the upstream sent it (an isError tool result included).' }),
  }),
  z.object({ ok: z.literal(false), error: errorSchema }),
]);

export const callResultSchema = z.union([
  z.object({ ok: z.literal(true), result: z.record(z.string(), z.unknown()).meta({ description: 'The upstream tools/call result.' }) }),
  z.object({ ok: z.literal(false), error: errorSchema }),
]);

const askErrorSchema = z.object({ code: z.string(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() });

const askDeclaredShape = {
  capabilities: z.record(z.string(), z.unknown()).meta({ description: "The capabilities the ask declared: the caller's, else form and URL elicitation." }),
  refuses: z
    .array(z.enum(['elicitation.form', 'elicitation.url', 'sampling', 'roots']))
    .meta({ description: 'The kinds of question this ask refuses at once (not declared).' }),
};

export const askStartedSchema = z.object({ id: z.string(), status: z.string(), ...askDeclaredShape });

export const askViewSchema = z.object({
  id: z.string(),
  server: z.string(),
  tool: z.string(),
  status: z.enum(['working', 'input_required', 'completed', 'failed', 'abandoned', 'expired']).meta({
    description: 'working: running, nothing asked; input_required: questions wait; completed/failed: the call finished; abandoned; expired.',
  }),
  ...askDeclaredShape,
  questions: z
    .array(
      z.object({
        id: z.string().meta({ description: 'The key to answer under.' }),
        method: z.enum(['elicitation/create', 'sampling/createMessage', 'roots/list']),
        params: z.record(z.string(), z.unknown()),
        via: z.enum(['server-request', 'input-required']).meta({ description: 'A legacy server-to-client request, or a modern input_required round.' }),
        key: z.string().optional().meta({ description: "A modern question's key in the upstream's inputRequests (unique within its round)." }),
        askedAt: z.string(),
      }),
    )
    .meta({ description: 'The questions waiting for an answer.' }),
  asked: z.number().int(),
  refused: z
    .array(z.object({ questionId: z.string().optional(), method: z.string(), reason: z.string(), message: z.string() }))
    .meta({ description: "Questions mcpx refused on the caller's behalf, and why." }),
  createdAt: z.string(),
  finishedAt: z.string().optional(),
  result: z.record(z.string(), z.unknown()).optional().meta({ description: 'The tool result (also on failed, when the tool reported isError).' }),
  error: askErrorSchema.optional(),
});

export const settingEntrySchema = z.object({
  path: z.string(),
  value: z.unknown(),
  display: z.string(),
  default: z.unknown(),
  defaultDisplay: z.string(),
  source: z.enum(['default', 'file', 'env', 'flag', 'runtime']),
  from: z.string().optional(),
  type: z.string(),
  allowed: z.array(z.string()).optional(),
  env: z.string(),
  envAliases: z.array(z.string()),
  flag: z.string(),
  flagAliases: z.array(z.string()),
  key: z.string(),
  description: z.string(),
  restart: z.boolean(),
});

export const settingsListSchema = z.object({ settings: z.array(settingEntrySchema) });

export const settingChangeSchema = z.object({
  setting: settingEntrySchema,
  appliesTo: z.string().meta({ description: '"sessions started from now on", "now", or "the next daemon start".' }),
  servers: z.object({ applied: z.array(z.string()), deferred: z.array(z.string()) }).optional(),
  outlivesRestart: z
    .boolean()
    .meta({ description: 'Whether the value now in force is read again at the next daemon start: false for a runtime value, which lives in the daemon only.' }),
});

const eraRecordOut = z.object({ era: z.enum(['legacy', 'modern']), version: z.string(), at: z.string(), source: z.string(), transport: z.string().optional() });

export const protocolSchema = z.object({
  servers: z.array(
    z.object({
      server: z.string(),
      preference: preferenceOut,
      era: eraOut,
      negotiated: z.string().nullable(),
      eraSource: z.enum(['probe', 'cache', 'forced']).nullable(),
      cached: eraRecordOut.nullable(),
      legacyLane: z.object({ state: z.enum(['unused', 'available', 'refused']), reason: z.string().optional() }).nullable(),
      pendingPreference: preferenceOut.optional(),
    }),
  ),
});

export const statechartSchema = z.object({
  server: z.string(),
  mermaid: z.string().meta({ description: 'Mermaid stateDiagram-v2 of the session chart, live instances\' states in class "active".' }),
  instances: z.array(z.object({ id: z.string(), lane: laneSchema, state: z.string(), poolState: z.string(), activeStateIds: z.array(z.string()) })),
});

export const configViewSchema = z.object({
  file: z.string().nullable(),
  via: z.string().nullable(),
  demo: z.boolean(),
  servers: z.array(serverViewSchema),
  warnings: z.array(z.string()),
});

export const reloadSchema = z.union([
  z.object({
    ok: z.literal(true),
    file: z.string().nullable(),
    demo: z.boolean(),
    added: z.array(z.string()),
    removed: z.array(z.string()),
    replaced: z.array(z.string()),
    kept: z.array(z.string()),
    failed: z.array(z.object({ server: z.string(), message: z.string() })),
    warnings: z.array(z.string()),
    restartNeeded: z.array(z.string()),
  }),
  z.object({ ok: z.literal(false), file: z.string().nullable(), error: errorSchema }),
]);

export const reloadQuerySchema = z
  .object({
    all: z.enum(['true', 'false', '1', '0']).optional().meta({ description: "Reload every loaded config (the daemon's own first), not only the caller's." }),
  })
  .strict();

export const reloadAnswerSchema = z.union([reloadSchema, z.object({ configs: z.array(reloadSchema) })]);

export const shutdownSchema = z.object({ ok: z.literal(true), stopping: z.literal(true), pid: z.number().int() });

// ---------------------------------------------------------------------------------------------
// The answers above are the views the controller builds (src/core/views.ts) and the chart's
// (src/ui/statechart-view.ts), written there as plain types. Each schema must give exactly its view —
// no field more or less, none optional on one side only, none of another type — or this file does not
// compile: the schemas describe the views, they do not define them.

/** T with its intersections and nested objects written out, so two spellings of one shape compare equal. */
type Plain<T> = T extends object ? { [K in keyof T]: Plain<T[K]> } : T;
/** true when A and B are the same type, not merely assignable to each other. */
type Same<A, B> = (<T>() => T extends Plain<A> ? 1 : 2) extends <T>() => T extends Plain<B> ? 1 : 2 ? true : false;
type Holds<T extends true> = T;
type StatusServer = z.output<typeof statusSchema>['servers'][number];

export type _SchemasGiveTheirViews = [
  Holds<Same<z.output<typeof instanceSchema>, InstanceView>>,
  Holds<Same<z.output<typeof rejectedEditSchema>, RejectedEdit>>,
  Holds<Same<z.output<typeof configStatusSchema>, ConfigStatusView>>,
  Holds<Same<StatusServer, ServerStatusView>>,
  Holds<Same<StatusServer['lanes'][number], LaneView>>,
  Holds<Same<z.output<typeof serverViewSchema>, ServerView>>,
  Holds<Same<z.output<typeof protocolSchema>['servers'][number], ProtocolRow>>,
  Holds<Same<z.output<typeof toolsSchema>, ToolsView>>,
  Holds<Same<z.output<typeof toolSearchSchema>, ToolSearchView>>,
  Holds<Same<z.output<typeof callResultSchema>, CallOutcome>>,
  Holds<Same<z.output<typeof settingEntrySchema>, SettingEntryView>>,
  Holds<Same<z.output<typeof settingChangeSchema>, SettingChangeView>>,
  Holds<Same<z.output<typeof configViewSchema>, ConfigView>>,
  Holds<Same<z.output<typeof reloadSchema>, ReloadOutcome>>,
  Holds<Same<z.output<typeof statechartSchema>, StatechartView>>,
];

// ---------------------------------------------------------------------------------------------
// Answers several routes declare (src/api/v1-routes.ts)

export const bad = { description: 'The request is invalid; `error.path` names the field.', schema: errorBodySchema };
export const unknownServer = { description: 'No such server (MCPX_UNKNOWN_SERVER).', schema: errorBodySchema };
export const unknownAsk = { description: 'No such ask, or it finished too long ago (MCPX_NOT_FOUND).', schema: errorBodySchema };
export const unknownLogin = { description: 'No such login, or it ended too long ago (MCPX_NOT_FOUND).', schema: errorBodySchema };
