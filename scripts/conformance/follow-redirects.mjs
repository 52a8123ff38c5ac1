#!/usr/bin/env node
// A "browser" for authorization servers that approve at once (the conformance suite's mocks): GET the
// address given as the last argument without following redirects, then each Location in turn, until an
// answer that is not a redirect (the client's own loopback callback page). Exit 0 on a 2xx at the end.
// mcpx hands its opener a file:// page (0600) that forwards to the authorization URL: read where it goes.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const arg = process.argv[process.argv.length - 1];
const page = arg.startsWith('file:') ? readFileSync(fileURLToPath(arg), 'utf8') : undefined;
const forwarded = page && /<meta http-equiv="refresh" content="0;url=([^"]*)">/.exec(page)?.[1];
const start = forwarded
  ? forwarded
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&')
  : arg;
let url = start;
for (let hop = 0; hop < 10; hop++) {
  let res;
  try {
    res = await fetch(url, { redirect: 'manual' });
  } catch (err) {
    process.stderr.write(`follow-redirects: ${new URL(url).origin}: ${err.message}\n`);
    process.exit(1);
  }
  const next = res.headers.get('location');
  await res.body?.cancel();
  if (res.status >= 300 && res.status < 400 && next) {
    url = new URL(next, url).href;
    continue;
  }
  process.exit(res.status >= 200 && res.status < 300 ? 0 : 1);
}
process.stderr.write('follow-redirects: more than 10 redirects\n');
process.exit(1);
