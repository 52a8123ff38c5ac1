// Preloaded with `node --import`: appends to the file named by MCPX_TEST_LOADS every module the process
// loads, one a line: ES modules as they load (a module load hook, which runs on the loader's own thread),
// and at exit every CommonJS file in require's cache (node 20's require does not pass the hooks).
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const out = process.env['MCPX_TEST_LOADS'];

if (isMainThread && out) {
  register(import.meta.url);
  const require = createRequire(import.meta.url);
  process.on('exit', () =>
    appendFileSync(
      out,
      Object.keys(require.cache)
        .map((f) => `${f}\n`)
        .join(''),
    ),
  );
}

export async function load(url, context, next) {
  const result = await next(url, context);
  if (out) appendFileSync(out, `${url}\n`);
  return result;
}
