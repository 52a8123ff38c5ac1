/**
 * `mcpx serve` as a client's config starts it (main.ts' quick path): built into one file of its own
 * (scripts/bundle.ts), not split into the chunks the other commands share. A serve stays up as long as
 * its client, once per client a person runs; loading two dozen chunks at its start was enough work in
 * node's module loader to make V8 optimise node's path code, paging in V8's optimising compiler (about
 * 4 MiB of a serve's resident memory before its client sent anything; a large message, such as a long
 * tools/list, later has V8 optimise the pipe's line scanner, which pages it in after all).
 */
export { quickServe } from './commands/serve.js';
