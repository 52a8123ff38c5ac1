/**
 * `npm run test:stress`: the property-based tests of api-properties.test.ts and format-properties.test.ts
 * with MCPX_PROPERTY_RUNS runs per property (default 1,500 here; 120–200 in npm test).
 */
process.env['MCPX_PROPERTY_RUNS'] ??= '1500';
await import('./api-properties.test.js');
await import('./format-properties.test.js');
