/**
 * The /v1 route table without its schemas: each route's method and path, plain data. The daemon
 * registers its handlers from this (./v1-routes.ts) and loads the zod schemas of ./schemas.ts on the
 * first request that needs validating, so it listens without loading zod (docs/decisions.md). The
 * schemas' ROUTES spreads these entries, so the document and the checks name the very same routes.
 */
export const ROUTE_PATHS = {
  health: { method: 'GET', url: '/v1/health' },
  status: { method: 'GET', url: '/v1/status' },
  servers: { method: 'GET', url: '/v1/servers' },
  tools: { method: 'GET', url: '/v1/tools' },
  call: { method: 'POST', url: '/v1/call' },
  catalog: { method: 'GET', url: '/v1/catalog' },
  request: { method: 'POST', url: '/v1/request' },
  settingsList: { method: 'GET', url: '/v1/settings' },
  settingGet: { method: 'GET', url: '/v1/settings/:path' },
  settingPut: { method: 'PUT', url: '/v1/settings/:path' },
  settingDelete: { method: 'DELETE', url: '/v1/settings/:path' },
  protocol: { method: 'GET', url: '/v1/protocol' },
  events: { method: 'GET', url: '/v1/events' },
  statechart: { method: 'GET', url: '/v1/statecharts/:server' },
  config: { method: 'GET', url: '/v1/config' },
  reload: { method: 'POST', url: '/v1/reload' },
  shutdown: { method: 'POST', url: '/v1/shutdown' },
  openapi: { method: 'GET', url: '/v1/openapi.json' },
  ask: { method: 'POST', url: '/v1/ask' },
  askGet: { method: 'GET', url: '/v1/ask/:id' },
  askAnswers: { method: 'POST', url: '/v1/ask/:id/answers' },
  askAbandon: { method: 'POST', url: '/v1/ask/:id/abandon' },
  authList: { method: 'GET', url: '/v1/auth' },
  authGet: { method: 'GET', url: '/v1/auth/:server' },
  authLogin: { method: 'POST', url: '/v1/auth/:server/login' },
  authLogout: { method: 'POST', url: '/v1/auth/:server/logout' },
  authLoginGet: { method: 'GET', url: '/v1/auth/logins/:id' },
  authLoginCancel: { method: 'POST', url: '/v1/auth/logins/:id/cancel' },
} as const satisfies Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string }>;

export type RouteName = keyof typeof ROUTE_PATHS;

/**
 * The routes with a part to validate (params, query, body or headers in ROUTES): their first request
 * loads the schemas. The others (health, status, …) never do. test/server/routes-table.test.ts holds
 * this to ROUTES.
 */
export const VALIDATED_ROUTES: ReadonlySet<RouteName> = new Set<RouteName>([
  'tools',
  'call',
  'catalog',
  'request',
  'settingGet',
  'settingPut',
  'settingDelete',
  'events',
  'statechart',
  'ask',
  'askGet',
  'askAnswers',
  'askAbandon',
  'authGet',
  'authLogin',
  'authLogout',
  'authLoginGet',
  'authLoginCancel',
]);
