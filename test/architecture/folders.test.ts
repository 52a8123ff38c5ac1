/**
 * The folders of src/ by role, and which may import which: the matrix below, read from every import a
 * file makes (static, type-only, `import()` and `typeof import()`: ./source-imports.ts). A folder imports
 * only what its row lists; the rows form no cycle, so no two folders import each other. A new edge is a
 * decision: add it to its row here, with the reason in docs/decisions.md if it is not plain.
 *
 * Lazy loads (`import()` of an mcpx module) are kept for the command line's loader and the real
 * boundaries a start must not pay for (the SDK, zod, xstate's session chart and the wire, the page,
 * the Stately inspector): each is listed in LAZY with what it keeps out.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { importGraph, SRC, sources } from './source-imports.js';

/** Each folder → the folders it may import (`.`: the files at the top of src/: errors, logs, small helpers). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  '.': [],
  protocol: [],
  transports: ['.', 'protocol'],
  state: ['.', 'transports'],
  call: ['transports'],
  machines: ['.', 'protocol', 'state', 'transports'],
  upstream: ['.', 'call', 'machines', 'protocol', 'state', 'transports'],
  asks: ['.', 'call', 'protocol', 'transports'],
  pool: ['.', 'call', 'machines', 'transports', 'upstream'],
  config: ['.', 'machines', 'pool', 'transports', 'upstream'],
  auth: ['.', 'config', 'state', 'transports', 'upstream'],
  catalog: ['.', 'call', 'machines', 'pool', 'state', 'upstream'],
  inspect: ['.', 'asks', 'machines', 'pool'],
  install: ['.', 'state'],
  core: ['.', 'asks', 'auth', 'call', 'catalog', 'config', 'machines', 'pool', 'protocol', 'transports', 'upstream'],
  front: ['.', 'asks', 'call', 'catalog', 'config', 'core', 'protocol', 'transports'],
  ui: ['.', 'catalog', 'core', 'inspect', 'machines', 'pool', 'transports', 'upstream'],
  api: ['.', 'auth', 'call', 'config', 'core', 'front', 'machines', 'ui'],
  daemon: ['.', 'api', 'auth', 'catalog', 'config', 'core', 'front', 'inspect', 'state', 'transports', 'ui', 'upstream'],
  'daemon-client': ['.', 'config', 'daemon', 'front', 'state'],
  serve: ['.', 'catalog', 'daemon-client', 'front', 'state', 'transports'],
  cli: ['.', 'api', 'auth', 'catalog', 'config', 'core', 'daemon', 'daemon-client', 'inspect', 'install', 'serve', 'transports', 'upstream'],
};

/** Modules loaded with `import()` outside the command line, and what loading them late keeps out of a start. */
const LAZY: Readonly<Record<string, string>> = {
  'api/schemas.ts': 'zod: the /v1 schemas load with the first request that needs them',
  'api/openapi.ts': 'zod to JSON Schema, for GET /v1/openapi.json only',
  'api/response-contract.ts': 'the response checks tests switch on',
  'asks/answer-schemas.ts': 'zod: answers are checked from the first answer on',
  'catalog/valid-listing.ts': 'zod and both SDKs’ schemas: loaded with the first listing served',
  'daemon/state-dir.ts': 'the state folder code, for a CLI that starts a daemon',
  'daemon-client/client.ts': 'reaching a daemon, for `mcpx serve` when none answers',
  'front/http-entry.ts': 'the MCP SDK (server side), with the first /mcp request',
  'front/socket-entry.ts': 'the MCP SDK (server side), with the first `mcpx serve` stream',
  'inspect/stately.ts': 'the Stately inspector, when it is asked for',
  'ui/page.ts': 'the live page',
  'ui/view.ts': 'the live page',
  'ui/statechart-view.ts': 'the chart drawing, for /v1/statecharts',
  'upstream/session.ts': 'xstate, the session chart and the wire: with the first call a pool serves',
};

const folderOf = (file: string): string => {
  const parts = relative(SRC, file).split('/');
  return parts.length > 1 ? parts[0]! : '.';
};

/** Every `import('./…')` of an mcpx module, as [importing file, imported file] (relative to src/). */
function lazyLoads(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const file of sources()) {
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [spec] = node.arguments;
        if (spec && ts.isStringLiteralLike(spec) && spec.text.startsWith('.'))
          out.push([relative(SRC, file), relative(SRC, resolve(dirname(file), spec.text).replace(/\.js$/, '.ts'))]);
      }
      ts.forEachChild(node, visit);
    };
    visit(ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest));
  }
  return out;
}

describe('src folders', () => {
  const graph = importGraph();

  it('import only what their row of the matrix allows', () => {
    const found = new Set<string>();
    const stray: string[] = [];
    for (const [file, deps] of graph) {
      const from = folderOf(file);
      expect(MAY_IMPORT[from], `src/${from}/ has no row in MAY_IMPORT`).toBeDefined();
      for (const dep of deps) {
        const to = folderOf(dep);
        if (to === from) continue;
        found.add(`${from} → ${to}`);
        if (!MAY_IMPORT[from]!.includes(to)) stray.push(`${relative(SRC, file)} → ${relative(SRC, dep)}`);
      }
    }
    expect(stray).toEqual([]);
    // Every edge of the matrix is one the code has: a row lists what its folder uses, no more.
    const unused = Object.entries(MAY_IMPORT).flatMap(([from, tos]) => tos.filter((to) => !found.has(`${from} → ${to}`)).map((to) => `${from} → ${to}`));
    expect(unused).toEqual([]);
  });

  it('form no cycle: no two folders import each other, directly or round about', () => {
    const order: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    const visit = (folder: string, path: string[]): void => {
      if (state.get(folder) === 'done') return;
      if (state.get(folder) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(folder)), folder].join(' → '));
        return;
      }
      state.set(folder, 'visiting');
      for (const to of MAY_IMPORT[folder] ?? []) visit(to, [...path, folder]);
      state.set(folder, 'done');
      order.push(folder);
    };
    for (const folder of Object.keys(MAY_IMPORT)) visit(folder, []);
    expect(cycles).toEqual([]);
    expect(order).toHaveLength(Object.keys(MAY_IMPORT).length);
  });

  it('load mcpx modules lazily only in the command line, or at a boundary LAZY names', () => {
    const loads = lazyLoads();
    expect(loads.length).toBeGreaterThan(10); // the scan found them
    const stray = loads.filter(([from, to]) => !from.startsWith('cli/') && LAZY[to] === undefined).map(([from, to]) => `${from} → ${to}`);
    expect(stray).toEqual([]);
    // Every boundary listed is still loaded lazily somewhere.
    const lazy = new Set(loads.map(([, to]) => to));
    expect(Object.keys(LAZY).filter((m) => !lazy.has(m))).toEqual([]);
  });
});
