/**
 * Protocol revisions mcpx speaks, newest first. The wire facts behind them are in
 * the MCP specification (modelcontextprotocol.io/specification).
 */
export const MODERN_VERSIONS = ['2026-07-28'] as const;
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

export const NEWEST_LEGACY = LEGACY_VERSIONS[0];

export type Era = 'modern' | 'legacy';

export function isLegacyVersion(v: unknown): v is string {
  return typeof v === 'string' && (LEGACY_VERSIONS as readonly string[]).includes(v);
}

/** A revision string is legacy when it sorts before the first modern revision (dates sort as strings). */
export function eraOfRevision(v: string): Era {
  return v < '2026-07-28' ? 'legacy' : 'modern';
}

// Protocol constants both the transports and the machines use live in src/protocol (transports never import src/machines).
export { META, RPC } from '../protocol/constants.js';
