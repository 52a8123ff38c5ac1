/**
 * The daemon registers its /v1 routes from the plain table of src/server/routes.ts and loads the zod
 * schemas on the first request that has something to validate: the table and the schemas must agree.
 */
import { describe, expect, it } from 'vitest';
import { ROUTE_PATHS, VALIDATED_ROUTES } from '../../src/server/routes.js';
import { ROUTES, type RouteDef } from '../../src/server/schemas.js';

describe('the route table', () => {
  it('names the same routes, methods and paths as the schemas', () => {
    expect(Object.keys(ROUTE_PATHS).sort()).toEqual(Object.keys(ROUTES).sort());
    for (const [name, def] of Object.entries(ROUTES) as Array<[keyof typeof ROUTES, RouteDef]>) {
      expect({ method: def.method, url: def.url }).toEqual(ROUTE_PATHS[name]);
    }
  });

  it('lists as validated exactly the routes with params, query, body or headers to validate', () => {
    const withParts = (Object.entries(ROUTES) as Array<[string, RouteDef]>)
      .filter(([, d]) => d.params || d.query || d.body || d.headers)
      .map(([n]) => n)
      .sort();
    expect([...VALIDATED_ROUTES].sort()).toEqual(withParts);
  });
});
