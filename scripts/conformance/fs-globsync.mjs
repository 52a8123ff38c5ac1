// Node 20 has no fs.globSync (Node 22 does). The conformance CLI imports it at load time but only uses it
// in its `tier-check` command, so `node:fs` plus a minimal globSync ("**/<name>") is enough to run it here.
import * as fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs.default ?? fs;

export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const name = pattern.replace(/^\*\*\//, '');
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(cwd, dir), { withFileTypes: true })) {
      const rel = dir ? path.join(dir, entry.name) : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name === name) found.push(rel);
    }
  };
  walk('');
  return found;
}
