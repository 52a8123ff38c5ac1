// Demo upstream: modern-only (official SDK v2 with legacy: 'reject'). It answers `server/discover`
// and refuses `initialize` with -32022, so only a 2026-07-28 session works.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { demoFactory, exitOnStdinEnd } from './v2.mjs';

serveStdio(demoFactory('modern-only'), { legacy: 'reject' });
exitOnStdinEnd();
