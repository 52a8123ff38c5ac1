/**
 * The /v1 route table (src/api/v1-routes.ts): each declaration names its method, path and zod schemas
 * once, and what the daemon registers, validates and documents comes from it. These hold the
 * declarations to what the rest assumes of them.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { RouteInput } from '../../src/api/routes.js';
import * as schemas from '../../src/api/schemas.js';
import { V1_ROUTES } from '../../src/api/v1-routes.js';

const routes = Object.entries(V1_ROUTES).map(([name, r]) => ({ name, ...r, parts: (r.input?.(schemas) ?? {}) as RouteInput }));

describe('the route table', () => {
  it('names each method and path once', () => {
    const keys = routes.map((r) => `${r.method} ${r.url}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("validates as params exactly its path's parameters, and only the parts a request has", () => {
    for (const r of routes) {
      const inPath = [...r.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!).sort();
      const declared = r.parts.params ? Object.keys((r.parts.params as z.ZodObject).shape).sort() : [];
      expect(declared, r.name).toEqual(inPath);
      expect(
        Object.keys(r.parts).every((p) => ['params', 'query', 'body', 'headers'].includes(p)),
        r.name,
      ).toBe(true);
    }
  });

  it('describes every answer it declares, each JSON answer with a schema', () => {
    for (const r of routes) {
      const responses = Object.entries(r.responses(schemas));
      expect(responses.length, r.name).toBeGreaterThan(0);
      for (const [status, answer] of responses) {
        expect(answer.description.length, `${r.name} ${status}`).toBeGreaterThan(0);
        // The document itself (openapi) is the one JSON answer described only in words.
        if (!answer.contentType && r.name !== 'openapi') expect(answer.schema, `${r.name} ${status}`).toBeDefined();
      }
    }
  });
});
