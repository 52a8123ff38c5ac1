/**
 * The controller's views (src/core/views.ts) and the chart's (src/ui/statechart-view.ts) are plain types
 * that the /v1 schemas are declared to match (src/api/schemas.ts, checked by the compiler), not types
 * derived from the schemas: so the HTTP API depends on core and ui, never the other way round.
 */
import { relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph, ROOT, SRC } from './source-imports.js';

const folderOf = (file: string): string => relative(SRC, file).split(sep)[0]!;

describe('the views', () => {
  it('src/core and src/ui import nothing of src/api, not even a type', () => {
    const g = importGraph();
    const upward = [...g].flatMap(([file, deps]) =>
      ['core', 'ui'].includes(folderOf(file)) ? deps.filter((d) => folderOf(d) === 'api').map((d) => `${relative(ROOT, file)} → ${relative(ROOT, d)}`) : [],
    );
    expect(g.size).toBeGreaterThan(100); // the scan found the tree
    expect(upward).toEqual([]);
  });
});
