/**
 * `npm run test:stress`: the stdio and the Streamable HTTP fault runs of faults.test.ts and
 * faults-http.test.ts, MCPX_FAULT_ROUNDS rounds each (default 12 here, 3 in npm test). Loopback only.
 */
process.env['MCPX_FAULT_ROUNDS'] ??= '12';
await import('./faults.test.js');
await import('./faults-http.test.js');
