/**
 * No module of src/ imports itself back through others. Type-only imports count (a cycle of types is
 * still two files that cannot be read one without the other), and so do `import()` loads: a module that
 * loads the one loading it is a cycle put off, not gone. Each cycle found is printed as its path.
 */
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph, ROOT, specifiersOf } from './source-imports.js';

/** One shortest cycle through each strongly connected group (Tarjan), as relative paths. */
function cycles(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (g.get(v) ?? []).includes(v)) groups.push(group);
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return groups.map((group) => {
    // A path back to the group's first file, breadth first inside the group.
    const inGroup = new Set(group);
    const start = group[0]!;
    const prev = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of g.get(v) ?? []) {
        if (!inGroup.has(w)) continue;
        if (w === start) {
          const path = [v];
          while (path[0] !== start) path.unshift(prev.get(path[0]!)!);
          return [...path, start].map((p) => relative(ROOT, p));
        }
        if (!prev.has(w)) {
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    return group.map((p) => relative(ROOT, p));
  });
}

describe('src imports', () => {
  it('form no cycle', () => {
    const g = importGraph();
    expect(g.size).toBeGreaterThan(100); // the scan found the tree
    expect(cycles(g).map((c) => c.join(' → '))).toEqual([]);
  });

  it('the check sees a cycle when there is one', () => {
    const g = new Map([
      ['/a.ts', ['/b.ts']],
      ['/b.ts', ['/c.ts']],
      ['/c.ts', ['/a.ts']],
      ['/d.ts', ['/a.ts']],
    ]);
    expect(cycles(g).map((c) => c.map((p) => p.replace(ROOT, '')))).toHaveLength(1);
    expect(cycles(g)[0]).toHaveLength(4);
  });

  it('count loads and import types as imports', () => {
    const text = "import type { A } from './a.js';\nexport { B } from './b.js';\nconst c = () => import('./c.js');\ntype D = typeof import('./d.js');";
    expect(specifiersOf('/x.ts', text)).toEqual(['./a.js', './b.js', './c.js', './d.js']);
  });
});
