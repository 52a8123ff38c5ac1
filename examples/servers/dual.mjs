// Demo upstream: dual-era (official SDK v2). It answers `server/discover` (2026-07-28) and also
// accepts `initialize`, so mcpx speaks modern to it by default and legacy under prefer-initialize.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { demoFactory, exitOnStdinEnd } from './v2.mjs';

serveStdio(demoFactory('dual'));
exitOnStdinEnd();
