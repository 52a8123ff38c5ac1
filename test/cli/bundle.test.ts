/**
 * The binary is a bundle (scripts/bundle.ts, built without esbuild's keepNames): what bundling must
 * not change. Errors show their class's name (`name`, and `type` in a logged error), so each of mcpx's
 * error classes must keep its source name in the chunk that holds it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';

/** The chunk of the built bundle that holds a source file. */
function chunkOf(source: string): string {
  const root = packageRoot();
  const meta = JSON.parse(readFileSync(join(root, 'dist', 'src', 'cli', 'bundle-meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const found = Object.entries(meta.outputs).find(([out, o]) => out.endsWith('.js') && source in o.inputs);
  if (!found) throw new Error(`no chunk of the bundle holds ${source}`);
  return join(root, found[0]);
}

describe('the bundle', () => {
  it("keeps the names of mcpx's error classes, and their errors' names", async () => {
    const errors = (await import(pathToFileURL(chunkOf('src/errors.ts')).href)) as Record<string, unknown>;
    const classes = Object.entries(errors).filter((e): e is [string, new (...args: never[]) => Error] => typeof e[1] === 'function' && /Error$/.test(e[0]));
    expect(classes.map(([name]) => name)).toEqual(expect.arrayContaining(['McpxError', 'ConfigError', 'UpstreamRpcError', 'SettingValueError']));
    for (const [name, cls] of classes) expect(cls.name, `the class exported as ${name}`).toBe(name);
    const McpxError = errors['McpxError'] as new (code: string, message: string) => Error;
    const e = new McpxError('MCPX_INTERNAL', 'x');
    expect(e.name).toBe('McpxError');
    expect(e).toBeInstanceOf(McpxError);
  });
});
